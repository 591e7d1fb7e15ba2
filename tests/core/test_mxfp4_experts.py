"""gpt-oss's MXFP4 experts as vLLM 0.33 allocates them: padded to the alignment of the kernel it
picks for the GPU (core/model/mxfp4.py), which "Model loading took" counts and the checkpoint does
not hold."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kvplan.core.errors import InvalidInput
from kvplan.core.logs.enginelog import read_log
from kvplan.core.model.mxfp4 import KERNEL_ALIGNMENT, gpt_oss_experts, kernel_from_log
from kvplan.core.units import GiB

GPT_OSS_120B = "openai/gpt-oss-120b"
LAYERS, EXPERTS, HIDDEN, INTER = 36, 128, 2880, 2880


def _experts_step(b):
    (step,) = [s for s in b.ledger if s.name == "expert_weights_bytes_per_gpu"]
    return step


def _layer_bytes(experts: int, h: int, i: int, bias: int = 2) -> int:
    """create_weights by hand: w13 [E, 2I, H/2] + scales [E, 2I, H/32] + bias [E, 2I], w2 [E, H, I/2]
    + scales [E, H, I/32] + bias [E, H]; the biases bf16, or fp32 where the kernel converts them."""
    return experts * (2 * i * h // 2 + 2 * i * h // 32 + 2 * i * bias + h * i // 2 + h * i // 32 + h * bias)


def test_gpt_oss_120b_on_marlin_loads_what_a_real_h100_log_printed(budget):
    """vLLM 0.10.1 on an H100 ran gpt-oss-120b's experts on Marlin (its log warns so) and printed
    "Model loading took 65.9651 GiB" (github.com/vllm-project/vllm/issues/23278, TP 1). Marlin pads
    hidden 2880 → 3072 and the intermediate 2880 → 2944: 5.13 GiB more than the checkpoint holds."""
    b = budget(GPT_OSS_120B, gpu="h100-sxm-80gb", moe_backend="marlin", explain=True)
    step = _experts_step(b)
    assert (step.inputs["H_padded"], step.inputs["I_padded"]) == (3072, 2944)
    assert step.value == LAYERS * _layer_bytes(EXPERTS, 3072, 2944) == 66_501_476_352
    assert step.inputs["padding_bytes"] == LAYERS * (
        _layer_bytes(EXPERTS, 3072, 2944) - _layer_bytes(EXPERTS, HIDDEN, INTER)
    )
    assert abs(b.weights_bytes_per_gpu / GiB - 65.9651) < 0.1
    triton = _experts_step(budget(GPT_OSS_120B, gpu="h100-sxm-80gb", explain=True))
    assert triton.inputs["padding_bytes"] == 0  # 2880 is 45 × 64
    assert triton.value == LAYERS * _layer_bytes(EXPERTS, HIDDEN, INTER, bias=4)  # its biases fp32


def test_b200_runs_trtllm_and_pads_gpt_oss_experts_to_3072_by_384_at_tp8(budget):
    b = budget(GPT_OSS_120B, gpu="b200-180gb", tensor_parallel_size=8, explain=True)
    step = _experts_step(b)
    assert step.inputs["kernel"] == "flashinfer_trtllm"
    assert (step.inputs["I_per_rank"], step.inputs["H_padded"], step.inputs["I_padded"]) == (360, 3072, 384)
    assert step.value == LAYERS * _layer_bytes(EXPERTS, 3072, 384, bias=4) == 8_734_113_792


@pytest.mark.parametrize(
    ("gpu", "tp", "kernel", "padded"),
    [
        ("h100-sxm-80gb", 1, "triton", (2880, 2880)),
        ("h200-141gb", 2, "triton", (2880, 1472)),  # 1,440 is not a multiple of 64
        ("h100-sxm-80gb", 4, "triton", (2880, 768)),
        ("b300-288gb", 1, "flashinfer_trtllm", (3072, 2944)),
        ("gb200-186gb", 2, "flashinfer_trtllm", (3072, 1536)),
        ("a100-80gb", 2, "marlin", (3072, 1536)),
        ("l40s-48gb", 4, "marlin", (3072, 768)),
        ("rtx-pro-6000-96gb", 1, "marlin", (3072, 2944)),  # SM 12.x ranks Triton after Marlin
        ("pool-80gib", 2, "triton", (2880, 1472)),  # a GPU kvplan cannot place: Hopper's plan
    ],
)
def test_each_gpu_gets_the_kernel_vllm_picks_and_its_padding(budget, gpu, tp, kernel, padded):
    step = _experts_step(budget(GPT_OSS_120B, gpu=gpu, tensor_parallel_size=tp, explain=True))
    assert step.inputs["kernel"] == kernel
    assert (step.inputs["H_padded"], step.inputs["I_padded"]) == padded


def test_amd_gpus_keep_the_checkpoints_experts_and_say_the_padding_is_not_modelled(budget):
    """ROCm's AITER kernels align by kernel and CDNA generation: not modelled, so the experts are
    the checkpoint's share, no MXFP4 step is claimed, and a warning says so."""
    b = budget(GPT_OSS_120B, gpu="mi300x-192gb", explain=True)
    assert "kernel" not in _steps_inputs(b)
    (said,) = [x for x in b.warnings if x.code == "mxfp4_padding_not_modelled"]
    assert "AITER" in said.message and "MI300X" in said.message
    modelled = budget(GPT_OSS_120B, gpu="h100-sxm-80gb")
    given = budget(GPT_OSS_120B, gpu="mi300x-192gb", weights_bytes=64 * GiB)
    assert not [x for x in (*modelled.warnings, *given.warnings) if x.code == "mxfp4_padding_not_modelled"]


def _steps_inputs(b):
    return {k for s in b.ledger for k in s.inputs}


def test_expert_parallel_keeps_whole_experts_at_the_full_intermediate_size(budget):
    ep = {"tensor_parallel_size": 8, "enable_expert_parallel": True}
    b = budget(GPT_OSS_120B, gpu="b200-180gb", explain=True, **ep)
    step = _experts_step(b)
    assert (step.inputs["E"], step.inputs["I_per_rank"], step.inputs["I_padded"]) == (16, 2880, 2944)
    assert step.value == LAYERS * _layer_bytes(16, 3072, 2944, bias=4)


def test_data_parallel_splits_each_expert_over_tp_times_dp():
    """vLLM's MoE layers flatten TP over DP (fused_moe/config.py): H100 at TP 2 × DP 2 holds a
    quarter of each expert's intermediate size, 720, which Triton pads to 768."""
    mx = gpt_oss_experts(
        sm=9, moe_backend="auto", mxfp8=False, hidden=HIDDEN, intermediate=INTER, experts=EXPERTS,
        layers=LAYERS, ranks=4, expert_parallel=False,
    )  # fmt: skip
    assert mx is not None and (mx.intermediate, mx.padded_intermediate) == (720, 768)


def test_a_data_parallel_budget_pads_the_tp_times_dp_share(budget):
    b = budget(GPT_OSS_120B, gpu="h100-sxm-80gb", tensor_parallel_size=2, data_parallel_size=2, explain=True)
    step = _experts_step(b)
    assert (step.inputs["I_per_rank"], step.inputs["I_padded"]) == (720, 768)


@pytest.mark.parametrize(
    ("gpu", "kernel", "padded"),
    [
        ("b200-180gb", "flashinfer_trtllm_mxfp8", (3072, 2944)),
        ("rtx-pro-6000-96gb", "flashinfer_cutlass_mxfp8", (2944, 2944)),  # CUTLASS × MXFP8 from SM 10.0
        ("h100-sxm-80gb", "triton", (2880, 2880)),  # no MXFP8 kernel on Hopper: BF16 activations
    ],
)
def test_mxfp8_activations_pick_their_kernel_where_one_runs(budget, gpu, kernel, padded):
    step = _experts_step(budget(GPT_OSS_120B, gpu=gpu, flashinfer_moe_mxfp4_mxfp8=True, explain=True))
    assert step.inputs["kernel"] == kernel
    assert (step.inputs["H_padded"], step.inputs["I_padded"]) == padded


@pytest.mark.parametrize(
    ("gpu", "backend"),
    [
        ("h100-sxm-80gb", "flashinfer_trtllm"),
        ("a100-80gb", "triton"),
        ("b200-180gb", "flashinfer_cutlass"),
        ("h100-sxm-80gb", "aiter"),  # ROCm's, on an NVIDIA GPU
    ],
)
def test_a_moe_backend_whose_kernel_does_not_run_on_the_gpu_is_refused(budget, gpu, backend):
    """vLLM checks the kernel --moe-backend names against the GPU and fails to start
    (fused_moe/oracle/mxfp4.py _return_or_raise): TRT-LLM is data-center Blackwell's, Triton needs
    SM 9.0, FlashInfer's CUTLASS MXFP4 × BF16 runs on SM 9.0 only."""
    with pytest.raises(InvalidInput) as e:
        budget(GPT_OSS_120B, gpu=gpu, moe_backend=backend)
    assert e.value.field == "moe_backend" and "fails to start" in e.value.reason


def test_a_moe_backend_without_an_mxfp4_kernel_is_refused(budget):
    """vLLM maps --moe-backend to an MXFP4 kernel and fails to start when it names none."""
    with pytest.raises(InvalidInput) as e:
        budget(GPT_OSS_120B, gpu="b200-180gb", moe_backend="cutlass")
    assert e.value.field == "moe_backend" and "MXFP4" in e.value.reason


def test_given_weights_still_refuse_a_backend_vllm_refuses(budget):
    with pytest.raises(InvalidInput) as e:
        budget(GPT_OSS_120B, gpu="b200-180gb", moe_backend="cutlass", weights_bytes=64 * GiB)
    assert e.value.field == "moe_backend"


def test_given_weights_are_not_padded(budget):
    b = budget(GPT_OSS_120B, gpu="b200-180gb", tensor_parallel_size=8, weights_bytes=64 * GiB, explain=True)
    assert "kernel" not in _steps_inputs(b)


@given(
    kernel=st.sampled_from(["flashinfer_trtllm", "marlin", "triton", "deep_gemm", "emulation"]),
    ranks=st.sampled_from([1, 2, 4, 8, 16]),
    ep=st.booleans(),
)
def test_padding_never_shrinks_the_experts(kernel, ranks, ep):
    mx = gpt_oss_experts(
        sm=10,
        moe_backend=kernel,
        mxfp8=False,
        hidden=HIDDEN,
        intermediate=INTER,
        experts=EXPERTS,
        layers=LAYERS,
        ranks=ranks,
        expert_parallel=ep,
    )
    assert mx is not None
    assert mx.kernel == kernel and mx.bytes >= mx.unpadded_bytes
    h, i = KERNEL_ALIGNMENT[mx.kernel]
    assert mx.padded_hidden % h == 0 and mx.padded_intermediate % i == 0
    assert mx.padded_intermediate - mx.intermediate < i


SM100_BF16 = "INFO [mxfp4.py:137] Using FlashInfer MXFP4 BF16 backend for SM100, For faster performance"
MARLIN_FP4 = (
    "WARNING [marlin_utils_fp4.py:196] Your GPU does not have native support for FP4 computation but FP4 "
    "quantization is being used. Weight-only FP4 compression will be used leveraging the Marlin kernel."
)


@pytest.mark.parametrize(
    ("line", "kernel"),
    [
        ("(EngineCore pid=1) INFO [mxfp4.py:352] Using 'MARLIN' Mxfp4 MoE backend.", "marlin"),
        ("INFO [mxfp4.py:352] Using 'FLASHINFER_TRTLLM_MXFP4_BF16' Mxfp4 MoE backend.", "flashinfer_trtllm"),
        ("INFO [mxfp4.py:352] Using 'TRITON' Mxfp4 MoE backend.", "triton"),
        ("INFO 09-01 [mxfp4.py:166] Using Marlin backend", "marlin"),
        ("INFO 09-01 [mxfp4.py:170] Using Triton backend", "triton"),
        (SM100_BF16, "flashinfer_trtllm"),
        ("INFO [mxfp4.py:120] Using FlashInfer MXFP4 BF16 backend for SM90", "flashinfer_cutlass"),
        (MARLIN_FP4, "marlin"),
    ],
)
def test_each_vllms_log_line_naming_the_mxfp4_kernel_is_read(line, kernel):
    found = read_log(f"INFO vLLM API server version 0.19.0\n{line}").first("moe_backend")
    assert found is not None and kernel_from_log(str(found.value)) == kernel


def test_an_attention_backend_line_is_no_moe_kernel():
    log = read_log(
        "INFO vLLM API server version 0.19.0\nINFO [cuda.py:298] Using Triton Attention backend on V1."
    )
    assert log.first("moe_backend") is None
