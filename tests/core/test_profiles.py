"""Engine profiles: the rules that differ by vLLM version (docs/vllm-rules.md §9)."""

from __future__ import annotations

import msgspec
import pytest

from kvplan.core.engine.profiles import PROFILES, get_profile
from kvplan.core.errors import UnknownName
from tests.seed import W_LLAMA_3_70B_BF16 as W
from tests.seed import A, C


def test_eight_profiles_are_listed_and_the_seed_is_the_default():
    assert set(PROFILES) == {
        "vllm@e740bad", "vllm@0.33", "vllm@0.23", "vllm@0.19", "vllm@0.12", "vllm@0.10", "vllm@0.8", "vllm@v0"
    }  # fmt: skip
    assert get_profile(None).id == "vllm@e740bad"


@pytest.mark.parametrize(
    ("version", "profile", "async_default"),
    [("0.11.1", "vllm@0.10", False), ("0.12.0", "vllm@0.12", False), ("v0.13.0", "vllm@0.12", False),
     ("0.14.0", "vllm@0.19", True), ("0.29", "vllm@0.23", True), ("0.33.0", "vllm@0.33", True)],
)  # fmt: skip
def test_async_scheduling_is_on_by_default_from_vllm_0_14(version, profile, async_default):
    """vLLM 0.14.0 turned async scheduling on by default (PR #27614): 0.12–0.13 share 0.19's rules
    and memory model but not that default, so they have a profile of their own."""
    found = get_profile(version)
    assert (found.id, found.async_scheduling_default) == (profile, async_default)
    if profile == "vllm@0.12":
        assert found.memory == PROFILES["vllm@0.19"].memory


@pytest.mark.parametrize(
    ("engine", "profile", "wait"),
    [("0.9.2", "vllm@0.8", 0.0), ("0.10.0", "vllm@0.10", 2e-3), ("0.11.2", "vllm@0.10", 2e-3),
     ("0.12.0", "vllm@0.12", 2e-3), ("0.18.0", "vllm@0.19", 2e-3), ("0.22.1", "vllm@0.19", 2e-3),
     ("0.23.0", "vllm@0.23", 0.0), ("0.29", "vllm@0.23", 0.0), ("0.33.0", "vllm@0.33", 0.0),
     ("0.7.3", "vllm@v0", 0.0), ("vllm@e740bad", "vllm@e740bad", 0.0)],
)  # fmt: skip
def test_the_servers_tokenizer_micro_batched_from_vllm_0_10_to_0_22(engine, profile, wait):
    """AsyncMicrobatchTokenizer came in 0.10.0 (PR #19334) and went with PR #45759 (0.23), so the
    versions either side have profiles of their own; nothing else sets them apart."""
    found = get_profile(engine)
    assert (found.id, found.tokenizer_batch_wait_s) == (profile, wait)


@pytest.mark.parametrize(("without", "within"), [("vllm@0.8", "vllm@0.10"), ("vllm@0.23", "vllm@0.19")])
def test_the_profiles_split_at_the_micro_batching_tokenizer_differ_in_it_alone(without, within):
    def rules(pid: str) -> dict[str, object]:
        named = ("id", "title", "description", "tokenizer_batch_wait_s")
        return {k: v for k, v in msgspec.structs.asdict(PROFILES[pid]).items() if k not in named}

    assert rules(without) == rules(within)
    assert PROFILES[without].tokenizer_batch_wait_s == 0 < PROFILES[within].tokenizer_batch_wait_s


def test_unknown_profile_lists_the_valid_ones():
    with pytest.raises(UnknownName) as e:
        get_profile("vllm@9")
    assert e.value.field == "engine"
    assert "vllm@0.33" in e.value.reason


@pytest.mark.parametrize(
    ("engine", "block", "util"),
    [("vllm@e740bad", 64, 0.92), ("vllm@0.33", 16, 0.92), ("vllm@0.10", 16, 0.90)],
)
def test_profile_defaults(budget, engine, block, util):
    b = budget("llama-3-70b", gpu="pool-160gib", weights_bytes=W, engine=engine)
    assert (b.engine, b.block_size, b.gpu_memory_utilization) == (engine, block, util)


def test_every_answer_names_its_profile(budget):
    assert budget("llama-3-8b", gpu="pool-80gib", engine="vllm@0.33").engine == "vllm@0.33"


def test_current_log_prints_concurrency_times_tokens(budget):
    b = budget(**A)
    assert b.concurrency.vllm_reported == 880 / 128
    assert b.kv_cache_size_tokens == int(880 / 128 * 8192)


def test_old_log_prints_blocks_per_group_times_block_size(budget):
    b = budget(**A, engine="vllm@0.10", gpu_memory_utilization=0.92, block_size=64)
    assert b.kv_cache_size_tokens == 880 * 64


def test_old_profile_has_no_null_block_in_the_fit_check(budget):
    new = budget(**C)
    old = budget(**C, engine="vllm@0.10", gpu_memory_utilization=0.92, block_size=64)
    assert new.max_context_tokens == 879 * 64
    assert old.max_context_tokens == 880 * 64


def test_extensible_kv_cache_resolves_utilization_to_one_in_the_seed_profile(budget):
    b = budget("llama-3-8b", gpu="pool-80gib", extensible_kv_cache=True)
    assert b.gpu_memory_utilization == 1.0
    b = budget("llama-3-8b", gpu="pool-80gib", extensible_kv_cache=True, gpu_memory_utilization=0.5)
    assert b.gpu_memory_utilization == 0.5


@pytest.mark.parametrize(
    ("gpu", "mnbt"),
    [
        ("h100-sxm-80gb", 8192),
        ("a100-80gb", 2048),
        ("l40s-48gb", 2048),
        ("b200-180gb", 16384),
        ("mi300x-192gb", 16384),
    ],
)
def test_default_max_num_batched_tokens_follows_the_gpu(budget, gpu, mnbt):
    assert budget("llama-3-8b", gpu=gpu).max_num_batched_tokens == mnbt


def test_mla_models_default_to_the_flashmla_block_of_64(budget):
    assert budget("deepseek-v3", gpu="h200-141gb", engine="vllm@0.33").block_size == 64
