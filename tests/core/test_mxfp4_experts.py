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


def _layer_bytes(experts: int, h: int, i: int) -> int:
    """create_weights by hand: w13 [E, 2I, H/2] + scales [E, 2I, H/32] + bias [E, 2I] bf16, w2 [E, H,
    I/2] + scales [E, H, I/32] + bias [E, H] bf16."""
    return experts * (2 * i * h // 2 + 2 * i * h // 32 + 2 * i * 2 + h * i // 2 + h * i // 32 + h * 2)


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
    unpadded = budget(GPT_OSS_120B, gpu="h100-sxm-80gb", explain=True)  # Triton: 2880 is 45 × 64
    assert _experts_step(unpadded).inputs["padding_bytes"] == 0
    assert b.weights_bytes_per_gpu - unpadded.weights_bytes_per_gpu == step.inputs["padding_bytes"]


def test_b200_runs_trtllm_and_pads_gpt_oss_experts_to_3072_by_384_at_tp8(budget):
    b = budget(GPT_OSS_120B, gpu="b200-180gb", tensor_parallel_size=8, explain=True)
    step = _experts_step(b)
    assert step.inputs["kernel"] == "flashinfer_trtllm"
    assert (step.inputs["I_per_rank"], step.inputs["H_padded"], step.inputs["I_padded"]) == (360, 3072, 384)
    assert step.value == LAYERS * _layer_bytes(EXPERTS, 3072, 384) == 8_698_724_352


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


def test_amd_gpus_keep_the_checkpoints_experts(budget):
    """ROCm's AITER kernels align by kernel and CDNA generation: not modelled, so the experts are
    the checkpoint's share and no MXFP4 step is claimed."""
    b = budget(GPT_OSS_120B, gpu="mi300x-192gb", explain=True)
    assert "kernel" not in _steps_inputs(b)


def _steps_inputs(b):
    return {k for s in b.ledger for k in s.inputs}


def test_expert_parallel_keeps_whole_experts_at_the_full_intermediate_size(budget):
    ep = {"tensor_parallel_size": 8, "enable_expert_parallel": True}
    b = budget(GPT_OSS_120B, gpu="b200-180gb", explain=True, **ep)
    step = _experts_step(b)
    assert (step.inputs["E"], step.inputs["I_per_rank"], step.inputs["I_padded"]) == (16, 2880, 2944)
    assert step.value == LAYERS * _layer_bytes(16, 3072, 2944)


def test_a_moe_backend_without_an_mxfp4_kernel_is_refused(budget):
    """vLLM maps --moe-backend to an MXFP4 kernel and fails to start when it names none."""
    with pytest.raises(InvalidInput) as e:
        budget(GPT_OSS_120B, gpu="b200-180gb", moe_backend="cutlass")
    assert e.value.field == "moe_backend" and "MXFP4" in e.value.reason


def test_given_weights_are_not_padded(budget):
    b = budget(GPT_OSS_120B, gpu="b200-180gb", tensor_parallel_size=8, weights_bytes=64 * GiB, explain=True)
    assert "kernel" not in _steps_inputs(b)


@given(
    kernel=st.sampled_from(sorted(KERNEL_ALIGNMENT)),
    ranks=st.sampled_from([1, 2, 4, 8, 16]),
    ep=st.booleans(),
)
def test_padding_never_shrinks_the_experts(kernel, ranks, ep):
    mx = gpt_oss_experts(
        sm=9,
        moe_backend=kernel,
        hidden=HIDDEN,
        intermediate=INTER,
        experts=EXPERTS,
        layers=LAYERS,
        ranks=ranks,
        expert_parallel=ep,
    )
    assert mx is not None
    assert mx.bytes >= mx.unpadded_bytes
    assert mx.padded_hidden % KERNEL_ALIGNMENT[kernel][0] == 0
    assert mx.padded_intermediate % KERNEL_ALIGNMENT[kernel][1] == 0
    assert mx.padded_intermediate - mx.intermediate < KERNEL_ALIGNMENT[kernel][1]


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
