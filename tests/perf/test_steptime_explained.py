"""The step-time model says what it is and what it priced, and refuses what it does not model."""

from __future__ import annotations

import pytest
from msgspec.structs import replace

from kvplan.core.errors import InvalidInput
from kvplan.core.model.geometry import make_geometry
from kvplan.core.perf.serving import serving_prior
from kvplan.core.perf.steptime import Batch, step_model
from kvplan.presets.perf import load_coefficients
from tests.perf.steptime_cases import REGISTRY, model

H100 = REGISTRY.gpu_specs("h100-sxm-80gb")


def build(name: str = "llama-3.1-8b", **kw):
    args = {
        "tensor_parallel": 1,
        "pipeline_parallel": 1,
        "weights_dtype": "bfloat16",
        "kv_cache_dtype": "auto",
        "cudagraph_sizes": (1, 2, 4, 8),
        "async_scheduling": True,
    } | kw
    return step_model(REGISTRY.model(name).geometry, H100, load_coefficients(), **args)


def test_explain_names_the_gpu_figures_the_dtypes_the_graphs_the_prior_and_the_fits():
    steps = {s.name: s for s in model("llama-3.1-70b", "h100-sxm-80gb", 4, "fp8").explain()}
    assert steps["GPU specs"].inputs["fp8_flops"] == 1_978 * 10**12
    assert steps["step-time dtypes and layout"].inputs["gemm"] == "fp8"
    assert steps["CUDA graphs in the step time"].inputs["largest"] == 512
    assert steps["host overhead (prior)"].value == "prior, not fitted"
    assert "AIConfigurator 0.12.0" in str(steps["fitted tables"].value)
    assert "step-time validation error" not in steps


def test_the_validation_error_shows_once_the_caller_fills_it():
    m = replace(model("qwen3-32b", "h100-sxm-80gb"), validation_error_pct=7.5)
    assert m.explain()[-1].name == "step-time validation error" and m.explain()[-1].value == 7.5


def moe_table(m) -> str:
    return str(next(s for s in m.explain() if s.name == "step-time dtypes and layout").inputs["moe"])


@pytest.mark.parametrize(
    ("tp", "table"), [(1, "w4a16_mxfp4"), (2, "w4a16_mxfp4@tp2"), (8, "w4a16_mxfp4@tp8")]
)
def test_moe_experts_are_priced_on_the_fit_of_their_tp_size(tp, table):
    """AIC measures each TP size's shard of the experts; the GPU-time of TP 8's shards is more than
    TP 1's (smaller GEMMs), which dividing TP 1's time by 8 would leave out."""
    assert (
        moe_table(model("gpt-oss-120b", "h200-141gb", tp)) == f"mxfp4 experts priced on the {table} MoE table"
    )
    one, eight = model("gpt-oss-120b", "h200-141gb", 1), model("gpt-oss-120b", "h200-141gb", 8)
    assert 8 * eight._tokens(8192, False) > one._tokens(8192, False) * 1.2


def test_marlin_prices_mxfp4_experts_on_the_marlin_table_only_when_asked():
    """--moe-backend marlin: AIC's Marlin rows (Kimi-K3's shape), about half the Triton kernel's
    rate on a long prefill on Hopper; auto keeps the kernel vLLM picks for gpt-oss (Triton)."""
    auto = model("gpt-oss-120b", "h200-141gb", 1)
    marlin = model("gpt-oss-120b", "h200-141gb", 1, moe_backend="marlin")
    assert moe_table(marlin) == "mxfp4 experts priced on the w4a16_mxfp4_marlin MoE table"
    prefill = Batch(0, 0, 1, 8192, 8192 * 8192)
    assert marlin.seconds(prefill) > 1.5 * auto.seconds(prefill)
    dense = model("llama-3.1-70b", "h200-141gb", 1, "fp8", moe_backend="marlin")
    assert dense.seconds(prefill) == model("llama-3.1-70b", "h200-141gb", 1, "fp8").seconds(prefill)


def test_mxfp8_activations_price_mxfp4_experts_on_flashinfers_mxfp4_by_mxfp8_table():
    """MXFP8 activations (InferenceX's B200 gpt-oss script: VLLM_USE_FLASHINFER_MOE_MXFP4_MXFP8=1):
    AIC's rows of that kernel (other shapes, read by tokens an expert) price a long prefill's experts
    at FP8 rate."""
    bf16 = model("gpt-oss-120b", "b200-180gb", 2)
    mxfp8 = model("gpt-oss-120b", "b200-180gb", 2, mxfp8=True)
    assert moe_table(mxfp8) == "mxfp4 experts priced on the w4a8_mxfp4_mxfp8@tp2 MoE table"
    prefill = Batch(0, 0, 1, 8192, 8192 * 8192)
    assert mxfp8.seconds(prefill) < 0.8 * bf16.seconds(prefill)
    dense = model("llama-3.1-70b", "b200-180gb", 2, "fp8", mxfp8=True)
    assert dense.seconds(prefill) == model("llama-3.1-70b", "b200-180gb", 2, "fp8").seconds(prefill)


def test_an_explicit_moe_backend_wins_over_mxfp8_activations_as_in_vllm():
    both = model("gpt-oss-120b", "b200-180gb", 1, moe_backend="marlin", mxfp8=True)
    assert moe_table(both) == "mxfp4 experts priced on the w4a16_mxfp4_marlin MoE table"


@pytest.mark.parametrize("gpu", ["h200-141gb", "a100-80gb"])
def test_mxfp8_activations_before_blackwell_fall_back_to_bf16_as_vllm_0_33_does(gpu):
    """vLLM 0.33 has no MXFP4 × MXFP8 kernel before data-center Blackwell: it warns and runs BF16
    activations (fused_moe/oracle/mxfp4.py _warn_on_bf16_fallback), so the step is timed so."""
    asked, plain = model("gpt-oss-120b", gpu, 1, mxfp8=True), model("gpt-oss-120b", gpu, 1)
    prefill = Batch(0, 0, 1, 8192, 8192 * 8192)
    assert asked.seconds(prefill) == plain.seconds(prefill)
    assert moe_table(asked).startswith(moe_table(plain)) and "falls back to BF16" in moe_table(asked)


@pytest.mark.parametrize("name", ["deepseek-v3", "kimi-k2"])
def test_deepseek_v3_shaped_mla_is_priced_on_aics_mla_module(name):
    m = model(name, "h200-141gb", 8, "fp8")
    steps = {s.name: s for s in m.explain()}
    assert steps["step-time dtypes and layout"].inputs["attention table"] == "MLA module bfloat16/fp8_block"
    assert len(m.gemms) == 2  # the MLP's; the module holds the attention projections


def test_other_mla_models_are_priced_on_their_latent_width():
    steps = {s.name: s for s in model("deepseek-v2-lite", "h100-sxm-80gb").explain()}
    assert steps["step-time dtypes and layout"].inputs["attention table"] == "bfloat16"


def test_awq_weights_are_a_memory_bound_read_of_four_bits():
    steps = {s.name: s for s in build(weights_dtype="int4").explain()}
    assert "weight-only" in str(steps["step-time dtypes and layout"].inputs["gemm"])


@pytest.mark.parametrize(
    ("kw", "field"),
    [
        ({"data_parallel": 2}, "data_parallel_size"),
        ({"expert_parallel": True}, "enable_expert_parallel"),
        ({"weights_dtype": "int3"}, "weights_dtype"),
        ({"tensor_parallel": 16}, "tensor_parallel_size"),
    ],
)
def test_what_it_does_not_model_is_refused_naming_the_field(kw, field):
    with pytest.raises(InvalidInput) as e:
        build(**kw)
    assert e.value.field == field


def test_mamba_layers_are_refused():
    with pytest.raises(InvalidInput, match="mamba"):
        build("jamba-1.5-mini")


def test_an_inline_geometry_without_its_config_is_refused():
    g = make_geometry(
        name="x", num_layers=2, num_attention_heads=8, num_kv_heads=8, head_dim=64, params_total=10**9
    )
    with pytest.raises(InvalidInput, match="hidden size"):
        step_model(
            g,
            H100,
            load_coefficients(),
            tensor_parallel=1,
            pipeline_parallel=1,
            weights_dtype="bfloat16",
            kv_cache_dtype="auto",
            cudagraph_sizes=(),
            async_scheduling=True,
        )


def test_element_wise_kernels_are_priced_as_aiconfigurator_prices_them():
    # Llama-3.1-70B at TP 8: two add + RMSNorm of 2h in and out, and SiLU-and-mul of 2·I/8 in and
    # I/8 out, in each of 80 layers (AIC sdk/models/llama.py ElementWise; 3 µs, η 0.8).
    m = model("llama-3.1-70b", "h100-sxm-80gb", 8, "fp8")
    h, inter = 8192, 28672
    assert m.elementwise_kernels == 80 * 3
    assert m.elementwise_bytes_per_token == pytest.approx(80 * 2 * (8 * h + 3 * inter / 8), rel=1e-3)
    none = replace(m, elementwise_kernels=0, elementwise_bytes_per_token=0.0, _memo={}, _lines={})
    added = m.seconds(Batch(32, 32 * 1000, 0, 0, 0)) - none.seconds(Batch(32, 32 * 1000, 0, 0, 0))
    expected = 240 * 3e-6 + 32 * m.elementwise_bytes_per_token / (0.8 * 3.35e12)
    assert added == pytest.approx(expected, rel=1e-3)
    step = {s.name: s for s in m.explain()}["element-wise kernels (prior)"]
    assert step.inputs["kernels a step"] == 240 and "AIConfigurator" in step.source


def test_gpt_oss_prefill_attention_is_priced_at_its_head_dim_of_64():
    """Its full and sliding layers both read the d 64 fit, and the ledger names it."""
    m = model("gpt-oss-120b", "b200-180gb", 1, kv="fp8")
    layout = {s.name: s for s in m.explain()}["step-time dtypes and layout"]
    assert layout.inputs["prefill attention table"] == "full fp8@d64; sliding fp8@d64"
    fits = load_coefficients().systems["b200_sxm"].prefill_attention
    # 18 layers of each kind, 64 query heads of d 64 on one GPU: 4·H·d FLOPs a (query, key) pair.
    for kind in (m.full, m.sliding):
        assert kind is not None
        assert kind.prefill_per_work == pytest.approx(18 * fits["fp8@d64"].s_per_flop * 4 * 64 * 64)
    assert fits["fp8@d64"].s_per_flop > 1.5 * fits["fp8"].s_per_flop  # d 64 runs below the pooled rate


def test_a_model_without_sliding_layers_names_one_prefill_fit_and_mla_the_pooled_one():
    llama = {s.name: s for s in model("llama-3.1-70b", "h100-sxm-80gb", 8, "fp8").explain()}
    assert llama["step-time dtypes and layout"].inputs["prefill attention table"] == "full bfloat16@d128"
    lite = {s.name: s for s in model("deepseek-v2-lite", "h100-sxm-80gb", 1).explain()}
    assert lite["step-time dtypes and layout"].inputs["prefill attention table"] == "mla bfloat16"


def test_the_serving_path_prior_states_its_sources():
    prior = serving_prior(async_scheduling=True)
    assert prior.admission_seconds(1000) == pytest.approx(1.3e-3)  # prose, a DGX H100's CPU
    names = {s.name: s for s in prior.explain()}
    assert "#19012" in names["server tokenization (prior)"].source
    assert "tokenizer_rates.py" in names["server tokenization (prior)"].source
    assert prior.request_path_s == pytest.approx(5e-3)  # the middle of 4.3 and 5.8 ms, public runs
    path = names["request path outside the engine (prior)"]
    assert path.value == "prior, not fitted" and "#44172" in path.source and "openinfer" in path.source
    assert names["scheduled a step ahead"].value is True
    assert serving_prior(async_scheduling=False).scheduled_ahead is False
    assert names["tokenizer micro-batches"].value is False  # 0.33's server tokenizes alone


def test_a_micro_batched_tokenizer_names_its_wait_and_the_measured_cost_of_one_call():
    prior = serving_prior(async_scheduling=True, tokenizer_batch_wait_s=2e-3)
    step = {s.name: s for s in prior.explain()}["tokenizer micro-batches"]
    assert step.value is True and step.inputs == {"wait_s": 2e-3, "max_prompts": 32}
    assert "#19334" in step.source and "#45759" in step.source
    # One call on n prompts, as PR #45759 timed it: 8.08 s for 1,024 prompts alone, 1.71 in 32s.
    assert prior.batch_seconds(1000, 1) == prior.admission_seconds(1000)
    assert prior.batch_seconds(32_000, 32) == pytest.approx(32 * 1.3e-3 * 1.7133 / 8.0752, rel=1e-3)
    assert prior.batch_seconds(3000, 3) == pytest.approx(3000 * 1.3e-6 * (0.5393 + 0.3273) / 2)


@pytest.mark.parametrize(("mode", "mixed"), [("full_decode_only", "none"), ("piecewise", "piecewise")])
def test_a_timed_answer_prices_the_cudagraph_mode_its_flags_give(mode, mixed):
    """The mode the budget resolves reaches the step-time model (it used to get the sizes only)."""
    import msgspec

    from kvplan.schemas import SimulateRequest
    from kvplan.services.timing import timing_for

    one = {"kind": "fixed", "value": 16}
    body = {"model": "llama-3.1-8b", "gpu": "h100-sxm-80gb", "cudagraph_mode": mode}
    body["workload"] = {"generator": {"count": 1, "concurrency": 1, "prompt": one, "output": one}}
    timer = timing_for(REGISTRY, msgspec.convert(body, SimulateRequest), None, 1, None).timer
    assert (timer.mixed_graph, timer.sizes != ()) == (mixed, True)
