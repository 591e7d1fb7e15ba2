"""Invariants of the arithmetic, checked with hypothesis over presets and random geometries."""

from __future__ import annotations

import os

from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from kvplan.core.budget import BudgetInput, compute_budget
from kvplan.core.engine.profiles import PROFILES, get_profile
from kvplan.core.kv.concurrency import total_blocks
from kvplan.core.kv.parallel import Parallel, valid_tensor_sizes
from kvplan.core.kv.pertoken import per_token
from kvplan.core.model.geometry import make_geometry
from kvplan.presets import load_registry

GIB = 1024**3
REG = load_registry(extra_dir="")
GEOMETRIES = [m.geometry for m in REG.models.values()]

settings.register_profile(
    "kvplan",
    max_examples=int(os.environ.get("KVPLAN_PROPERTY_EXAMPLES", "150")),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
    derandomize=bool(os.environ.get("CI")),  # CI replays the same examples; locally they vary
)
settings.load_profile("kvplan")


@st.composite
def inline_geometries(draw):
    heads = draw(st.sampled_from([1, 2, 4, 8, 16, 32, 64]))
    kv = draw(st.sampled_from([h for h in (1, 2, 4, 8, 16, 32, 64) if heads % h == 0]))
    n = draw(st.integers(1, 48))
    window = draw(st.one_of(st.none(), st.integers(16, 4096)))
    if window is None:
        types = None
    else:
        types = tuple(
            draw(st.lists(st.sampled_from(["full_attention", "sliding_attention"]), min_size=n, max_size=n))
        )
    if draw(st.booleans()):
        return make_geometry(
            name="mla",
            num_layers=n,
            num_attention_heads=heads,
            kv_lora_rank=draw(st.sampled_from([256, 512])),
            qk_rope_head_dim=64,
            max_position_embeddings=draw(st.integers(1024, 1 << 18)),
        )
    return make_geometry(
        name="g",
        num_layers=n,
        num_attention_heads=heads,
        num_kv_heads=kv,
        head_dim=draw(st.sampled_from([64, 80, 96, 128, 256])),
        layer_types=types,
        sliding_window=window,
        max_position_embeddings=draw(st.integers(1024, 1 << 18)),
    )


geometries = st.one_of(st.sampled_from(GEOMETRIES), inline_geometries())


def _plans(profile, geo) -> bool:  # type: ignore[no-untyped-def]
    return profile.hybrid_manager or set(geo.layer_pattern) <= {"F", "S", "C", "M"}


@st.composite
def scenarios(draw):
    geo = draw(geometries)
    tp = draw(st.sampled_from(valid_tensor_sizes(geo, 16)))
    pp = draw(st.integers(1, min(4, geo.num_layers)))
    return dict(
        geometry=geo,
        # The V0 engine plans attention layers only (it refuses the rest, naming `engine`).
        profile=get_profile(draw(st.sampled_from(sorted(p for p in PROFILES if _plans(PROFILES[p], geo))))),
        gpu_memory_bytes=draw(st.integers(GIB, 256 * GIB)),
        gpu_memory_utilization=draw(st.floats(0.05, 1.0)),
        kv_cache_dtype=draw(st.sampled_from(["auto", "fp8"])),
        # Sparse MLA with an indexer takes only multiples of 64.
        block_size=draw(
            st.sampled_from([None, 64, 128] if geo.index_head_dim is not None else [None, 16, 32, 64, 128])
        ),
        context_tokens=draw(st.integers(1, 1 << 19)),
        tensor_parallel_size=tp,
        pipeline_parallel_size=pp,
        weights_bytes=draw(st.integers(0, 64 * GIB)),
        max_num_batched_tokens=draw(st.sampled_from([None, 2048, 8192])),
    )


def run(**kw):
    return compute_budget(BudgetInput(**kw))


@given(scenarios(), st.integers(1, 1 << 19))
def test_concurrency_never_rises_with_context(sc, other):
    lo, hi = sorted((sc["context_tokens"], other))
    a = run(**{**sc, "context_tokens": lo})
    b = run(**{**sc, "context_tokens": hi})
    assert a.concurrency.guaranteed >= b.concurrency.guaranteed
    assert a.concurrency.vllm_reported >= b.concurrency.vllm_reported


@given(scenarios(), st.integers(0, 64 * GIB), st.floats(0.0, 0.5))
def test_concurrency_never_falls_with_memory_or_utilization(sc, more, more_util):
    # With the batch settings held: vLLM's defaults follow the GPU's size (from 70 GiB, max_num_seqs
    # 1024, whose profiling run's sampler takes more memory), so a bigger GPU on defaults can hold less.
    sc = {**sc, "max_num_seqs": 256, "max_num_batched_tokens": sc["max_num_batched_tokens"] or 2048}
    base = run(**sc)
    bigger = run(**{**sc, "gpu_memory_bytes": sc["gpu_memory_bytes"] + more})
    higher = run(**{**sc, "gpu_memory_utilization": min(1.0, sc["gpu_memory_utilization"] + more_util)})
    assert bigger.concurrency.guaranteed >= base.concurrency.guaranteed
    assert higher.concurrency.guaranteed >= base.concurrency.guaranteed


@given(geometries)
def test_fp8_never_costs_more_than_bf16(geo):
    assert per_token(geo, "fp8").bytes_per_token <= per_token(geo, "bfloat16").bytes_per_token


@given(geometries, st.data())
def test_tp_never_raises_per_gpu_bytes_and_leaves_mla_unchanged(geo, data):
    sizes = valid_tensor_sizes(geo, 64)
    tps = sorted(data.draw(st.lists(st.sampled_from(sizes), min_size=2, max_size=2)))
    a, b = (per_token(geo, par=Parallel(t)).bytes_per_token for t in tps)
    assert b <= a
    if geo.is_mla:
        assert a == b


@given(scenarios())
def test_num_blocks_is_the_floor_of_available_over_bytes_per_block(sc):
    b = run(**sc)
    assume(b.available_kv_bytes >= 0)
    worst = max(b.bytes_per_block_by_stage)
    assert b.bytes_per_block == worst
    # The binding worker's blocks bracket its budget.
    per_stage = [b.available_kv_bytes // x for x in b.bytes_per_block_by_stage]
    assert b.num_blocks == min(per_stage)
    assert b.num_blocks * worst <= b.available_kv_bytes < (b.num_blocks + 1) * worst


@given(scenarios())
def test_max_context_fits_and_one_block_more_does_not(sc):
    sc = {**sc, "context_tokens": None}
    b = run(**sc)
    allowed = b.num_blocks - (1 if sc["profile"].null_block_in_fit_check else 0)
    t = b.max_context_tokens
    if t == 0:
        assert b.max_context_limited_by == "kv_cache"
        return
    fits = run(**{**sc, "context_tokens": t})
    assert fits.blocks_per_request <= allowed
    if b.max_context_limited_by == "kv_cache":
        over = run(**{**sc, "context_tokens": t + 1})
        assert over.blocks_per_request > allowed


@given(scenarios(), st.integers(1, 64))
def test_largest_context_for_n_requests_holds_n(sc, n):
    b = run(**{**sc, "target_concurrency": n})
    t = b.max_context_for_target
    assume(t)
    assert run(**{**sc, "context_tokens": t}).concurrency.guaranteed >= n


def test_total_blocks_is_monotone_in_tokens_for_every_preset():
    for geo in GEOMETRIES:
        prev = 0
        for t in (1, 15, 16, 17, 1000, 4096, 70000, 131072):
            cur = compute_budget(
                BudgetInput(
                    geometry=geo,
                    profile=get_profile("vllm@0.33"),
                    kv_cache_memory_bytes=GIB,
                    context_tokens=t,
                )
            ).blocks_per_request
            assert cur >= prev
            prev = cur
    assert total_blocks([("F", 16, 0, 1)], 17, 1) == 2
