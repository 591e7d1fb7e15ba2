"""Speculative decoding as vLLM 0.33 plans it (docs/vllm-rules.md §11): the draft's KV layers join
the target's, its weights load with the target's, and the lookahead widens sliding windows and
Mamba states. The planner's figures are asserted against vLLM's own in the spec-* oracle cases
(tests/core/test_oracle_cases.py); these check the rules one at a time."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from msgspec.structs import replace

from kvplan.core.budget import BudgetInput, compute_budget
from kvplan.core.engine.profiles import get_profile
from kvplan.core.errors import InvalidInput
from kvplan.core.hf.reader import from_hf_config
from kvplan.core.model.geometry import FULL, MLA
from kvplan.core.model.speculative import read_config, resolve, vllm_method

CONFIGS = Path(__file__).parent / "data" / "hf-configs"
GiB = 1 << 30


def config(name: str) -> dict:
    return json.loads((CONFIGS / name).read_text())


QWEN3_NEXT = from_hf_config(config("Qwen--Qwen3-Next-80B-A3B-Instruct.json"), name="qwen3-next")
DEEPSEEK_V3 = from_hf_config(config("deepseek-ai--DeepSeek-V3.json"), name="deepseek-v3")
QWEN36 = from_hf_config(config("Qwen--Qwen3.6-35B-A3B.json"), name="qwen3.6")
# An EAGLE-3 head for Llama-3.1-8B (yuhuili/EAGLE3-LLaMA3.1-Instruct-8B's config.json): one Llama
# decoder layer with the target's 8 KV heads of 128.
EAGLE3_LLAMA_8B = {
    "architectures": ["LlamaForCausalLMEagle3"], "model_type": "llama", "hidden_size": 4096,
    "intermediate_size": 14336, "num_attention_heads": 32, "num_key_value_heads": 8,
    "num_hidden_layers": 1, "vocab_size": 128256, "draft_vocab_size": 32000,
    "max_position_embeddings": 2048, "rms_norm_eps": 1e-5, "torch_dtype": "float16",
    "tie_word_embeddings": False,
}  # fmt: skip


def plan(geometry, explain=False, **kw):  # type: ignore[no-untyped-def]
    kw.setdefault("kv_cache_memory_bytes", 40 * GiB)
    kw.setdefault("max_model_len", 32768)
    return compute_budget(BudgetInput(geometry=geometry, profile=get_profile("vllm@0.33"), **kw), explain)


def layers(b) -> dict[str, int]:  # type: ignore[no-untyped-def]
    out: dict[str, int] = {}
    for g in b.groups:
        out[g.kind] = out.get(g.kind, 0) + g.layers
    return out


def test_mtp_reads_the_checkpoints_mtp_layers_from_its_config():
    assert DEEPSEEK_V3.mtp is not None and DEEPSEEK_V3.mtp.layers == 1  # num_nextn_predict_layers
    assert QWEN36.mtp is not None and QWEN36.mtp.layers == 1  # text_config.mtp_num_hidden_layers
    assert QWEN3_NEXT.mtp is not None and QWEN3_NEXT.mtp.layers == 1  # qwen3_next_mtp.py's default


def test_deepseek_v3_mtp_adds_one_layer_of_mla_kv():
    plain = plan(DEEPSEEK_V3, tensor_parallel_size=8, block_size=64)
    spec = plan(
        DEEPSEEK_V3, tensor_parallel_size=8, block_size=64, speculative_method="mtp", num_speculative_tokens=1
    )
    assert layers(plain) == {"mla": 61} and layers(spec) == {"mla": 62}
    assert spec.bytes_per_block * 61 == plain.bytes_per_block * 62


def test_qwen3_next_mtp_adds_a_full_attention_layer_beside_its_gdn_states():
    spec = plan(QWEN3_NEXT, speculative_method="qwen3_next_mtp", num_speculative_tokens=1)
    assert layers(spec)["full_attention"] == 13 == layers(plan(QWEN3_NEXT))["full_attention"] + 1


def test_every_mamba_state_keeps_a_block_more_a_proposed_token_whatever_the_method():
    """MambaSpec num_speculative_blocks = num_speculative_tokens (mamba/abstract.py), n-gram too."""
    base = {g.kind: g.blocks_per_request for g in plan(QWEN3_NEXT).groups}
    ngram = {g.kind: g.blocks_per_request for g in plan(QWEN3_NEXT, speculative_method="ngram",
                                                         num_speculative_tokens=4).groups}  # fmt: skip
    assert ngram["mamba"] == base["mamba"] + 4 and ngram["full_attention"] == base["full_attention"]


def test_multi_module_mtp_keeps_its_lookahead_in_every_sliding_window():
    """extra_retained_tokens = num_speculative_tokens − 1 when more than one MTP layer drafts
    (vllm/config/vllm.py num_prefill_lookahead_tokens; kv_cache_planning.py tags SlidingWindowSpec)."""
    g = from_hf_config(config("synthetic--command-r7b-mtp2-shaped.json"), name="r7b-mtp2")
    one = plan(g, speculative_method="mtp", num_speculative_tokens=1, explain=True)
    two = plan(g, speculative_method="mtp", num_speculative_tokens=2, explain=True)
    steps = {s.name: s.value for s in two.ledger}
    assert steps["extra_retained_tokens"] == 1
    assert {s.name: s.value for s in one.ledger}["extra_retained_tokens"] == 0
    assert layers(two)["full_attention"] == layers(one)["full_attention"] == 8 + 2


def test_mtp_weights_load_with_the_targets_and_come_off_the_kv_budget():
    """vllm/v1/worker/gpu/model_runner.py load_model: the drafter loads inside 'Model loading took'."""
    kw = {
        "gpu_memory_bytes": 141 * GiB,
        "gpu_memory_utilization": 0.9,
        "non_kv_bytes": 0,
        "tensor_parallel_size": 8,
    }
    plain = plan(DEEPSEEK_V3, kv_cache_memory_bytes=None, **kw)
    spec = plan(DEEPSEEK_V3, kv_cache_memory_bytes=None, speculative_method="mtp", num_speculative_tokens=1,
                explain=True, **kw)  # fmt: skip
    assert DEEPSEEK_V3.mtp is not None and DEEPSEEK_V3.params_total is not None
    drafted = plain.weights_bytes * DEEPSEEK_V3.mtp.params // DEEPSEEK_V3.params_total
    assert spec.weights_bytes == plain.weights_bytes + drafted
    assert spec.available_kv_bytes == plain.available_kv_bytes - -(-drafted // 8)
    assert {s.name for s in spec.ledger} >= {"speculative_decoding", "draft_weights_bytes"}


def test_an_eagle3_head_of_the_targets_kv_page_adds_its_one_layer_of_kv(registry):
    target = registry.model("llama-3.1-8b").geometry
    head = from_hf_config(EAGLE3_LLAMA_8B, name="eagle3-llama-3.1-8b")
    assert head.dtype != target.dtype  # float16 in its config; vLLM serves it in the target's dtype
    spec = plan(target, speculative_method="eagle3", speculative_model="yuhuili/EAGLE3-LLaMA3.1-Instruct-8B",
                num_speculative_tokens=3, draft=head)  # fmt: skip
    assert layers(spec) == {"full_attention": 33}


def test_a_draft_of_another_kv_page_is_refused_rather_than_planned_wrong(registry):
    target = registry.model("llama-3.1-70b").geometry
    # Llama-3.2-1B: 8 KV heads as the 70B, but of 64, not 128.
    small = replace(registry.model("llama-3.1-8b").geometry, head_dim=64, v_head_dim=64)
    with pytest.raises(InvalidInput) as e:
        plan(target, speculative_model="meta-llama/Llama-3.2-1B", num_speculative_tokens=4, draft=small)
    assert e.value.field == "speculative_model" and "pages of two sizes" in e.value.reason


@pytest.mark.parametrize(
    ("settings", "field"),
    [
        ({"speculative_method": "eagle", "num_speculative_tokens": 3}, "speculative_model"),
        ({"num_speculative_tokens": 3}, "num_speculative_tokens"),
        ({"speculative_method": "mtp"}, "num_speculative_tokens"),
        ({"speculative_method": "dflash", "speculative_model": "z-lab/dflash", "num_speculative_tokens": 3},
         "speculative_method"),
    ],
)  # fmt: skip
def test_what_vllm_refuses_is_a_400_naming_the_field(settings, field):
    with pytest.raises(InvalidInput) as e:
        plan(DEEPSEEK_V3, **settings)
    assert e.value.field == field


def test_mtp_on_a_model_without_mtp_layers_says_so(registry):
    with pytest.raises(InvalidInput, match="no MTP layers"):
        plan(registry.model("qwen3-8b").geometry, speculative_method="mtp", num_speculative_tokens=1)


def test_mtp_tokens_beyond_its_layers_must_be_a_multiple_of_them():
    g = from_hf_config({**config("deepseek-ai--DeepSeek-V3.json"), "num_nextn_predict_layers": 2}, name="x")
    with pytest.raises(InvalidInput, match="divisible"):
        plan(g, speculative_method="mtp", num_speculative_tokens=3)
    assert plan(g, speculative_method="mtp", num_speculative_tokens=4).num_blocks > 0


def test_vllm_infers_the_method_from_the_model_as_vllm_does():
    assert vllm_method(None, "yuhuili/EAGLE-LLaMA3-Instruct-8B", None) == "eagle"
    assert vllm_method(None, "yuhuili/EAGLE3-LLaMA3.1-Instruct-8B", None) == "eagle3"
    assert vllm_method(None, "[ngram]", None) == "ngram"
    assert vllm_method(None, "meta-llama/Llama-3.2-1B", None) == "draft_model"
    assert vllm_method("deepseek_mtp", None, None) == "mtp"


def test_n_gram_drafts_add_no_layers_and_no_weights(registry):
    g = registry.model("llama-3.1-8b").geometry
    spec = resolve(g, "ngram", None, 4, None)
    assert spec is not None and spec.draft_layers == "" and spec.extra_retained_tokens == 0


@given(st.integers(1, 8), st.integers(1, 16))
def test_draft_layers_are_the_targets_attention_kind_and_never_more_than_its_mtp_layers(n_predict, n):
    g = from_hf_config(
        {**config("deepseek-ai--DeepSeek-V3.json"), "num_nextn_predict_layers": n_predict}, name="x"
    )
    if n > n_predict and n % n_predict:
        return
    spec = resolve(g, "mtp", None, n, None)
    assert spec is not None and spec.draft_layers == MLA * n_predict
    assert spec.extra_retained_tokens == (n - 1 if min(n, n_predict) > 1 else 0)
    assert FULL not in spec.draft_layers


def test_the_command_reader_merges_the_shorthands_as_vllm_does():
    assert read_config({"method": "mtp"}, {"--spec-tokens": 2}) == {
        "speculative_method": "mtp",
        "num_speculative_tokens": 2,
    }
    with pytest.raises(InvalidInput, match="draft_tensor_parallel_size"):
        read_config({"method": "eagle3", "model": "a/b", "num_speculative_tokens": 2,
                     "draft_tensor_parallel_size": 1}, {}, tensor=4)  # fmt: skip


def test_a_target_with_caches_of_its_own_is_refused_rather_than_planned_wrong():
    g = from_hf_config(config("synthetic--deepseek-v4-flash-shaped.json"), name="dsv4")
    with pytest.raises(InvalidInput, match="not plain attention layers"):
        plan(g, speculative_method="mtp", num_speculative_tokens=1)


def test_a_batch_no_larger_than_the_draft_slots_is_refused_as_vllm_refuses_it():
    """vllm/config/vllm.py _set_max_num_scheduled_tokens: max_num_batched_tokens ≤ num_lookahead_tokens."""
    with pytest.raises(InvalidInput) as e:
        plan(DEEPSEEK_V3, speculative_method="mtp", num_speculative_tokens=4, max_num_batched_tokens=4)
    assert e.value.field == "max_num_batched_tokens"


def test_suffix_decoding_without_a_token_count_takes_its_tree_depth_as_vllm_does():
    # vllm/config/speculative.py _validate_suffix_decoding: num_speculative_tokens defaults to
    # suffix_decoding_max_tree_depth (24).
    from kvplan.core.model.speculative import SUFFIX_MAX_TREE_DEPTH

    assert SUFFIX_MAX_TREE_DEPTH == 24
