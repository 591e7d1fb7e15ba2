"""kvplan against vLLM's own planner on real config.json files: every case in
tests/oracle/cases-vllm-<version>.json was computed by vLLM's planning code (regenerate with
`make oracle`) and must come out of kvplan to the block."""

from __future__ import annotations

from collections import Counter

import pytest

from kvplan.core.budget import BudgetInput, compute_budget
from kvplan.core.engine.profiles import get_profile
from kvplan.core.hf.reader import from_hf_config
from tests.oracle.cases import CASES, ORACLE
from tests.oracle.generate import load_config

KIND_OF_SPEC = {
    "FullAttentionSpec": "full_attention",
    "SlidingWindowSpec": "sliding_attention",
    "ChunkedLocalAttentionSpec": "chunked_attention",
    "MambaSpec": "mamba",
    "MLAAttentionSpec": "mla",
    # Sparse MLA beside its indexer: layers of one type, pages of two sizes, in one group.
    "UniformTypeKVCacheSpecs": "mla",
    # Sliding-window MLA (Dots3, DeepSeek-V4) and rings (GLM-5-next, DeepSeek-V4.1).
    "CircularBufferSpec": "circular_buffer",
    "SlidingWindowMLASpec": "sliding_window_mla",
}
# kvplan's kinds that vLLM keeps under another kind's spec class: Inkling's short-conv state is a
# SlidingWindowSpec (of the kernel's width and block); QSA's compressed keys an MLAAttentionSpec
# (vLLM names their packed group MLA), the PLE state a MambaSpec.
SPEC_KIND_OF = {"sconv": "sliding_attention", "compressed_mla": "mla", "mamba_replicated": "mamba"}


def kvplan_budget(case: dict):  # type: ignore[no-untyped-def]
    i = case["inputs"]
    spec = i.get("speculative") or {}  # the spec- cases: speculative decoding (oracle_more.py)
    return compute_budget(
        BudgetInput(
            geometry=from_hf_config(load_config(case["config"]), name=case["name"]),
            profile=get_profile("vllm@0.33"),
            kv_cache_memory_bytes=i["available_memory_bytes"],
            max_model_len=None if i.get("auto_fit_max_model_len") else i["max_model_len"],
            block_size=i["block_size"],
            kv_cache_dtype=i["dtype"],
            tensor_parallel_size=i["tensor_parallel_size"],
            pipeline_parallel_size=i.get("pipeline_parallel_size", 1),
            gpu_name=i.get("gpu_name", ""),
            max_num_batched_tokens=i["max_num_batched_tokens"],
            async_scheduling=i["async_scheduling"],
            dtype=i.get("model_dtype", "auto"),  # --dtype (the oracle's ModelConfig dtype)
            mamba_cache_dtype=i.get("mamba_cache_dtype", "auto"),
            mamba_ssm_cache_dtype=i.get("mamba_ssm_cache_dtype", "auto"),
            enable_prefix_caching=i.get("enable_prefix_caching"),
            mamba_block_size=i.get("mamba_block_size"),
            speculative_method=spec.get("method"),
            num_speculative_tokens=spec.get("num_speculative_tokens"),
            draft=from_hf_config(spec["draft_hf_config"], name="draft")
            if "draft_hf_config" in spec
            else None,
        )
    )


def test_the_cases_come_from_vllm_0_33_0():
    assert ORACLE["vllm_version"] == "0.33.0"
    assert len(CASES) >= 19
    assert all("vllm" in c for c in CASES), "every case was planned by vLLM"


@pytest.mark.parametrize("case", CASES, ids=[c["name"] for c in CASES])
def test_kvplan_plans_each_oracle_case_to_the_block(case):
    v, b = case["vllm"], kvplan_budget(case)
    assert b.max_model_len == v["max_model_len"]
    assert b.bytes_per_block == v["bytes_per_block"]
    assert b.num_blocks == v["num_blocks"]
    assert b.blocks_per_request == v["blocks_per_request"]
    assert b.fits_max_model_len == v["enough_memory"]
    assert b.max_context_tokens == v["estimated_max_model_len"]
    assert b.kv_cache_size_tokens == v["kv_cache_size_tokens"]
    assert b.concurrency.vllm_reported == pytest.approx(v["max_concurrency"], rel=1e-12)
    vllm_groups = Counter(
        (KIND_OF_SPEC[g.get("layer_spec", g["spec"])], g["block_size"], g["blocks_per_request"])
        for g in v["groups"]
    )
    ours = Counter()
    for g in b.groups:
        ours[(SPEC_KIND_OF.get(g.kind, g.kind), g.block_size, g.blocks_per_request)] += g.groups
    assert ours == vllm_groups


def test_llama4_scout_at_32k_on_40_gib_is_chunked_as_vllm_plans_it():
    """The issue's headline figures: 786,432 B a block, 6,656 blocks a request, 8.21×."""
    case = next(c for c in CASES if c["name"] == "scout-32k-40gib")
    b = kvplan_budget(case)
    assert (b.bytes_per_block, b.blocks_per_request) == (786_432, 6_656)
    assert f"{b.concurrency.vllm_reported:.2f}" == "8.21"
    assert {g.kind: g.layers for g in b.groups} == {"chunked_attention": 36, "full_attention": 12}


def test_qwen3_next_raises_its_attention_block_to_544_tokens():
    b = kvplan_budget(next(c for c in CASES if c["name"] == "qwen3-next-32k"))
    assert {g.block_size for g in b.groups} == {544}
    assert [g.blocks_per_request for g in b.groups if g.kind == "mamba"] == [2]


@pytest.mark.parametrize(
    "probe",
    ORACLE["in_flight_batches"],
    ids=[
        f"pp{p['pipeline_parallel_size']}-async{p['async_scheduling']}" for p in ORACLE["in_flight_batches"]
    ],
)
def test_in_flight_batches_follow_vllm_0_33_including_pp_plus_one(probe):
    """Model Runner V2 keeps PP + 1 batches in flight with async scheduling (3 at PP 2, 5 at PP 4)."""
    profile = get_profile("vllm@0.33")
    batches = profile.inflight_batches(probe["pipeline_parallel_size"], probe["async_scheduling"])
    assert batches == probe["max_concurrent_batches"]
    assert batches * probe["max_num_batched_tokens"] == probe["max_in_flight_tokens"]


def kernel_accepts(sizes: list, block: int) -> bool:
    """A manager block a kernel can run: a multiple of one of its block sizes (vLLM splits larger
    manager blocks into kernel blocks)."""
    return any(block % (s["multiple_of"] if isinstance(s, dict) else s) == 0 for s in sizes)


@pytest.mark.parametrize("block", [16, 32, 48, 64, 96, 128, 256])
def test_sparse_mla_takes_only_blocks_every_sparse_kernel_accepts(registry, block):
    """DeepSeek-V3.2's sparse MLA and indexer kernels (vLLM 0.33.0) take multiples of 64: a block
    both accept plans, any other is refused naming block_size."""
    from kvplan.core.errors import InvalidInput

    sizes = ORACLE["sparse_mla_kernel_block_sizes"]
    accepted = all(kernel_accepts(s, block) for s in sizes.values())
    inp = BudgetInput(
        geometry=registry.model("deepseek-v3.2").geometry,
        profile=get_profile("vllm@0.33"),
        kv_cache_memory_bytes=40 << 30,
        block_size=block,
    )
    if accepted:
        assert compute_budget(inp).block_size == block
    else:
        with pytest.raises(InvalidInput) as e:
            compute_budget(inp)
        assert e.value.field == "block_size" and "multiple of 64" in e.value.reason


SCHEDULER = ORACLE["scheduler_cases"]


def simulate_case(case: dict, admit_full_sequence: bool):  # type: ignore[no-untyped-def]
    from kvplan.core.sim.config import SimConfig
    from kvplan.core.sim.simulate import SimRequest, simulate

    i = case["inputs"]
    cfg = SimConfig(
        num_blocks=i["num_blocks"],
        block_size=i["block_size"],
        max_num_seqs=i["max_num_seqs"],
        max_num_batched_tokens=i["max_num_batched_tokens"],
        admit_full_sequence=admit_full_sequence,
    )
    return simulate(cfg, [SimRequest(**r) for r in i["requests"]])


@pytest.mark.parametrize("case", SCHEDULER, ids=[c["name"] for c in SCHEDULER])
def test_the_simulator_runs_each_workload_as_vllms_scheduler_does(case):
    assert case["scheduler_reserve_full_isl"] is True  # vLLM 0.33's default
    v, r = case["vllm"], simulate_case(case, admit_full_sequence=True)
    assert r.steps == v["steps"]
    assert (r.preemptions, r.recomputed_tokens) == (v["preemptions"], v["recomputed_tokens"])
    assert r.cache_hit_tokens == v["cache_hit_tokens"]
    assert (r.peak_blocks_in_use, r.peak_running) == (v["peak_blocks_in_use"], v["peak_running"])
    assert list(r.finish_order) == v["finish_order"]


def test_admitting_on_the_first_chunk_alone_preempts_where_vllm_0_33_does_not():
    """16 blocks of 16, max_num_seqs 4, 64 tokens a step, prompts of 150 and 100 arriving together:
    vLLM 0.33 waits for the whole second prompt to fit; the older rule admits it and preempts."""
    case = next(c for c in SCHEDULER if c["name"] == "tight-pool-two-prompts")
    assert case["vllm"]["preemptions"] == 0
    older = simulate_case(case, admit_full_sequence=False)
    assert (older.preemptions, older.recomputed_tokens) == (1, 42)
