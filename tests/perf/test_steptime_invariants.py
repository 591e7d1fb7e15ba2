"""Physics the step-time model keeps whatever the fit: work never makes a step faster, a decode
step never beats reading the weights, decode_line is seconds() in closed form, TP splits work."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kvplan.core.perf.steptime import UNBOUNDED, Batch
from tests.perf.steptime_cases import REGISTRY, model

CASES = [
    ("llama-3.1-70b", "h100-sxm-80gb", 4, "fp8"),
    ("qwen3-32b", "h100-sxm-80gb", 1, "bfloat16"),
    ("qwen3-32b", "h100-sxm-80gb", 2, "bfloat16"),
    ("llama-3.1-8b", "a100-80gb", 1, "bfloat16"),
    ("gemma-3-27b", "b200-180gb", 2, "bfloat16"),  # sliding windows
    ("gpt-oss-120b", "h200-141gb", 2, "bfloat16"),  # MoE, MXFP4 experts, sliding windows
    ("qwen3-30b-a3b", "l40s-48gb", 1, "fp8"),
    ("deepseek-v3", "h200-141gb", 8, "fp8"),  # MoE, MLA priced on AIC's MLA module
]
MOE = ("qwen3-30b-a3b", "gpt-oss-120b", "deepseek-v3")
case = st.sampled_from(CASES)
requests = st.integers(1, 600)
per_request = st.integers(1, 40_000)
MODES = ("full_and_piecewise", "piecewise", "full_decode_only", "full", "none")
RATIO = 1 + 1e-12  # floats: "never faster" up to an ulp


@settings(max_examples=150, deadline=None)
@given(case, requests, per_request, st.integers(1, 5_000))
def test_more_decode_context_never_makes_a_step_faster(c, n, ctx, more):
    m = model(*c)
    assert m.seconds(Batch(n, n * ctx, 0, 0, 0)) <= m.seconds(Batch(n, n * ctx + more, 0, 0, 0)) * RATIO


@settings(max_examples=150, deadline=None)
@given(case, requests, per_request, st.sampled_from(MODES))
def test_more_decode_requests_never_make_a_step_faster(c, n, ctx, mode):
    m = model(*c, mode=mode)
    assert m.seconds(Batch(n, n * ctx, 0, 0, 0)) <= m.seconds(Batch(n + 1, (n + 1) * ctx, 0, 0, 0)) * RATIO


@settings(max_examples=150, deadline=None)
@given(
    case,
    st.integers(0, 200),
    st.integers(1, 4),
    st.integers(1, 4096),
    st.integers(0, 30_000),
    st.integers(1, 2048),
)
def test_more_prefill_tokens_never_make_a_step_faster(c, n, chunks, chunk, cached, more):
    m = model(*c)
    base = Batch(n, n * 1000, chunks, chunks * chunk, chunks * chunk * (cached + chunk))
    grown = chunk + more
    bigger = Batch(n, n * 1000, chunks, chunks * grown, chunks * grown * (cached + grown))
    assert m.seconds(base) <= m.seconds(bigger) * RATIO


@pytest.mark.parametrize("c", [x for x in CASES if x[0] not in MOE])
@settings(max_examples=60, deadline=None)
@given(n=requests, ctx=per_request)
def test_a_dense_decode_step_is_never_faster_than_reading_the_weights(c, n, ctx):
    name, gpu, tp, weights = c
    geometry, specs = REGISTRY.model(name).geometry, REGISTRY.gpu_specs(gpu)
    weight_bytes = {"bfloat16": 2, "fp8": 1}[weights]
    assert geometry.params_total is not None
    floor_s = geometry.params_total * weight_bytes / tp / specs.hbm_bytes_per_s
    # the embedding is not read a step, the LM head is in the model dtype: the floor counts both once
    assert model(*c).seconds(Batch(n, n * ctx, 0, 0, 0)) >= floor_s * 0.97


@settings(max_examples=300, deadline=None)
@given(
    case,
    requests,
    per_request,
    st.integers(0, 10_000_000),
    st.sampled_from(MODES),
    st.booleans(),
    st.booleans(),
)
def test_decode_line_is_seconds_in_closed_form_on_its_whole_range(c, n, ctx, probe, mode, sync, eager):
    name, gpu, tp, weights = c
    m = model(name, gpu, tp, weights, mode=mode, async_scheduling=not sync, eager=eager)
    context = n * ctx
    a, b, until = m.decode_line(n, context)
    assert until >= context
    end = until if until < UNBOUNDED else context + 10_000_000
    for c_ in {context, end, context + probe % (end - context + 1), (context + end) // 2}:
        assert m.seconds(Batch(n, c_, 0, 0, 0)) == a + b * c_
    if until < UNBOUNDED:  # the form changes past it, unless a floor spans a window's edge
        a2, b2, _ = m.decode_line(n, until + 1)
        floor_s = m.layers * m.host.eager_layer_s  # a step without a graph, eager or compiled
        assert (a2, b2) != (a, b) or (b == 0.0 and a >= floor_s)


@pytest.mark.parametrize("name", ["qwen3-32b", "llama-3.1-70b"])
@pytest.mark.parametrize("batch", [1, 16, 64, 256])
def test_tp2_is_faster_than_tp1_for_a_large_dense_model(name, batch):
    one, two = model(name, "h200-141gb", 1), model(name, "h200-141gb", 2)
    for b in (Batch(batch, batch * 2048, 0, 0, 0), Batch(batch, batch * 2048, 1, 2048, 2048 * 2048)):
        assert two.seconds(b) < one.seconds(b)


def test_pipeline_stages_add_their_hand_offs_and_split_nothing_else():
    one, two = model("qwen3-32b", "h100-sxm-80gb", 1), model("qwen3-32b", "h100-sxm-80gb", 1, pp=2)
    b = Batch(8, 8 * 1024, 0, 0, 0)
    assert two.seconds(b) > one.seconds(
        b
    )  # a step crosses both stages: micro-batch pipelining is not modelled


def test_an_eager_decode_is_slower_than_a_graphed_one():
    graphs, eager = model("llama-3.1-8b", "h100-sxm-80gb"), model("llama-3.1-8b", "h100-sxm-80gb", eager=True)
    b = Batch(1, 512, 0, 0, 0)
    assert eager.seconds(b) > graphs.seconds(b)


def test_an_eager_forward_at_one_request_takes_the_hosts_time_a_layer():
    """--enforce-eager: Python dispatches every op, so a small step lasts layers × eager_layer_s
    (then what async scheduling leaves exposed, or the host's step without it), as public eager runs
    at one request show; a step whose GPU work is longer is the GPU's, its launches added."""
    eager = model("llama-3.1-8b", "h100-sxm-80gb", eager=True)
    host, layers = eager.host, 32
    floor = layers * host.eager_layer_s
    assert eager.seconds(Batch(1, 512, 0, 0, 0)) == pytest.approx(floor + host.exposed_async_s, rel=1e-12)
    mixed = Batch(1, 512, 1, 16, 16 * 16)  # a decode and a 16-token chunk
    assert eager.seconds(mixed) == pytest.approx(floor + host.exposed_async_s, rel=1e-12)
    sync = model("llama-3.1-8b", "h100-sxm-80gb", eager=True, async_scheduling=False)
    assert sync.seconds(Batch(1, 512, 0, 0, 0)) == pytest.approx(floor + host.cpu_seconds(1), rel=1e-12)
    assert sync.seconds(mixed) == pytest.approx(floor + host.cpu_seconds(2), rel=1e-12)
    graphed = model("llama-3.1-8b", "h100-sxm-80gb").seconds(Batch(1, 512, 0, 0, 0))
    assert eager.seconds(Batch(1, 512, 0, 0, 0)) / graphed > 1.5  # public runs: 1.7× (vllm-omni #7960)
    big = Batch(0, 0, 1, 8192, 8192 * 8192)
    assert eager.seconds(big) > floor


def test_compiled_code_without_a_graph_is_as_slow_as_eager():
    """torch.compile without CUDA graphs leaves Python dispatching every layer: vLLM issue #45709
    measured TPOT 35.20 ms compiled (cudagraph mode none) against 33.92 eager and 10.03 graphed.
    So a step without a graph takes the same time compiled or eager: cudagraph mode none, a mixed
    step under full_decode_only, a batch above the largest capture size."""
    eager = model("llama-3.1-8b", "h100-sxm-80gb", eager=True)
    floor = 32 * eager.host.eager_layer_s
    small, big = Batch(1, 512, 1, 16, 16 * 16), Batch(0, 0, 1, 8192, 8192 * 8192)
    for mode in ("none", "full_decode_only"):
        compiled = model("llama-3.1-8b", "h100-sxm-80gb", mode=mode)
        assert compiled.seconds(small) == eager.seconds(small) >= floor
        assert compiled.seconds(big) == eager.seconds(big) > floor
    decode = Batch(1, 512, 0, 0, 0)  # the decode line's path: mode none graphs no decode either
    none, decode_only = (model("llama-3.1-8b", "h100-sxm-80gb", mode=m) for m in ("none", "full_decode_only"))
    assert none.seconds(decode) == eager.seconds(decode) >= floor > decode_only.seconds(decode)
    default = model("llama-3.1-8b", "h100-sxm-80gb")  # piecewise below the largest size, not above
    assert default.seconds(small) < floor < default.seconds(big) == eager.seconds(big)


def test_a_piecewise_decode_pays_its_launches_where_a_full_graph_pays_none():
    full, piecewise = (
        model("llama-3.1-8b", "h100-sxm-80gb", mode=m) for m in ("full_and_piecewise", "piecewise")
    )
    b = Batch(4, 4 * 512, 0, 0, 0)
    assert piecewise.seconds(b) - full.seconds(b) == pytest.approx(32 * 3 * 5e-6, rel=1e-9)


def test_a_decode_batch_pads_to_its_graph_size():
    m = model("llama-3.1-8b", "h100-sxm-80gb")
    # 9 and 16 requests run the same 16-wide graph: all but the LM head (outside it) costs the same
    nine, sixteen = m.seconds(Batch(9, 900, 0, 0, 0)), m.seconds(Batch(16, 900, 0, 0, 0))
    assert nine - m._head(9) == pytest.approx(sixteen - m._head(16), rel=1e-12)
    assert nine > m.seconds(Batch(8, 900, 0, 0, 0))  # 8 is a graph size of its own
