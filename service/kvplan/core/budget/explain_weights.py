"""The budget ledger's steps for one GPU's weights: how they are split over TP × PP, or the dense
part over TP and the routed experts over TP × DP (whole experts under expert parallelism; gpt-oss's
MXFP4 experts as vLLM allocates them), then what --cpu-offload-gb offloads, LoRA slots and a drafter."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..ledger import LedgerBuilder
from ..model.lora import lora_steps
from ..model.mxfp4 import KERNEL_ALIGNMENT
from ..units import GiB
from .memory import own_weights
from .types import Budget, BudgetInput

if TYPE_CHECKING:
    from .capacity import LayoutCapacity

SRC_MOE_PARALLEL = "vllm/model_executor/layers/fused_moe/config.py (FusedMoEParallelConfig.make: TP × DP)"
SRC_EXPERT_MAP = "vllm/model_executor/layers/fused_moe/expert_map_manager.py (determine_expert_map)"
SRC_MXFP4_ALLOC = (
    "vllm/model_executor/layers/fused_moe/oracle/mxfp4.py (select_mxfp4_moe_backend, "
    "mxfp4_round_up_hidden_size_and_intermediate_size, convert_gpt_oss_weight_to_mxfp4_moe_kernel_format: "
    "fp32 biases); vllm/model_executor/layers/quantization/mxfp4.py (GptOssMxfp4MoEMethod.create_weights)"
)
SRC_UVA_OFFLOAD = "vllm/model_executor/offloader/uva.py (UVAOffloader._maybe_offload_to_cpu)"


def weights_per_gpu_steps(inp: BudgetInput, b: Budget, cap: LayoutCapacity, led: LedgerBuilder) -> None:
    """One GPU's weights: the split over TP × PP, or the dense part over TP and the routed experts
    over TP × DP (whole experts under expert parallelism; gpt-oss's MXFP4 experts as vLLM allocates
    them for its kernel), then what --cpu-offload-gb offloads."""
    g, par, pl = inp.geometry, cap.parallel, cap.placement
    # The last step is the GPU's figure: with LoRA slots or a drafter, the model's weights plus
    # theirs; with an offload (before them), the one before it is what was loaded.
    lora = cap.lora_bytes if cap.lora_slots else 0
    draft = b.weights_bytes_per_gpu - pl.per_gpu - lora  # ⌈draft ÷ TP⌉ (capacity.py)
    final = "model_weights_bytes_per_gpu" if lora or draft else "weights_bytes_per_gpu"
    name = "weights_loaded_bytes_per_gpu" if inp.cpu_offload_bytes else final
    loaded = g.loaded_weights is not None and own_weights(inp)
    if pl.expert_per_gpu is None:
        led.add(
            name,
            "⌈(sharded / TP + replicated + K/V proj / min(TP, Hkv)) / PP⌉"
            if loaded
            else "ceil((weights_bytes − draft_weights_bytes) / (TP × PP))"
            if draft
            else "ceil(weights_bytes / (TP × PP))",
            pl.before_offload,
            "B",
            "weights are split over the TP × PP workers",
            TP=par.tensor,
            PP=par.pipeline,
            GiB=round(pl.before_offload / GiB, 6),
        )
    else:
        led.add(
            "dense_weights_bytes_per_gpu",
            "sharded / TP + replicated + K/V proj / min(TP, Hkv)" if loaded else "ceil(dense weights / TP)",
            pl.dense_per_gpu,
            "B",
            "attention and dense layers follow TP only; each DP rank holds them whole",
            TP=par.tensor,
        )
        if (mx := pl.mxfp4) is not None:
            ep = inp.enable_expert_parallel
            split = "E = ⌈E / (TP × DP)⌉ whole experts, I whole" if ep else "I = I / (TP × DP)"
            h_align, i_align = KERNEL_ALIGNMENT[mx.kernel]
            led.add(
                "expert_weights_bytes_per_gpu",
                "layers × E × [2I'·(H'/2 + H'/32 + b) + H'·(I'/2 + I'/32 + b)]: w13 and w2 packed uint8, "
                f"their scales a 32-block uint8, biases of b bytes; {split}; H' and I' rounded up to the "
                "kernel's alignment",
                mx.bytes,
                "B",
                SRC_MXFP4_ALLOC,
                kernel=mx.kernel,
                chosen_by=mx.chosen_by,
                layers=mx.layers,
                E=mx.experts,
                H=mx.hidden,
                I_per_rank=mx.intermediate,
                alignment=f"H to {h_align}, I to {i_align}",
                H_padded=mx.padded_hidden,
                I_padded=mx.padded_intermediate,
                b=mx.bias_bytes,
                TP=par.tensor,
                DP=inp.data_parallel_size,
                expert_parallel=ep,
                padding_bytes=mx.bytes - mx.unpadded_bytes,
                rules="vLLM 0.33's kernel order and alignment, under every engine profile",
                not_modelled="Triton's swizzled layout" if mx.kernel.startswith("triton") else None,
            )
        elif pl.experts_per_rank is not None:
            led.add(
                "expert_weights_bytes_per_gpu",
                "ceil(expert weights × ⌈E / (TP × DP)⌉ / E): whole experts, the first E mod (TP × DP) "
                "ranks one more",
                pl.expert_per_gpu,
                "B",
                f"{SRC_MOE_PARALLEL}; {SRC_EXPERT_MAP}",
                E=pl.num_experts,
                TP=par.tensor,
                DP=inp.data_parallel_size,
                experts_per_gpu=pl.experts_per_rank,
            )
        else:
            led.add(
                "expert_weights_bytes_per_gpu",
                "ceil(expert weights / (TP × DP)): each expert's tensors split over TP × DP",
                pl.expert_per_gpu,
                "B",
                SRC_MOE_PARALLEL,
                TP=par.tensor,
                DP=inp.data_parallel_size,
                expert_parallel=inp.enable_expert_parallel,
            )
        led.add(
            name,
            "ceil((dense per GPU + experts per GPU) / PP)",
            pl.before_offload,
            "B",
            "pipeline stages split the layers",
            PP=par.pipeline,
            GiB=round(pl.before_offload / GiB, 6),
        )
    if inp.cpu_offload_bytes:
        led.add(
            final,
            "weights per GPU − min(cpu_offload_bytes, weights per GPU): whole parameters of the decoder "
            "layers moved to CPU until the budget is reached",
            pl.per_gpu,
            "B",
            f"{SRC_UVA_OFFLOAD}; vllm/model_executor/offloader/base.py (create_offloader: int(GiB × 1024³))",
            before=pl.before_offload,
            cpu_offload_bytes=inp.cpu_offload_bytes,
            offloaded=pl.offloaded,
            GiB=round(pl.per_gpu / GiB, 6),
        )
    if cap.lora_slots:
        lora_steps(led, cap.lora_slots, inp.max_loras, inp.max_lora_rank, par.tensor)
    if draft:
        led.add(
            "draft_weights_bytes_per_gpu",
            "⌈draft_weights_bytes / TP⌉ (the drafter on the last pipeline stage)",
            draft,
            "B",
            "vllm/v1/worker/gpu/model_runner.py (load_model: the drafter loads with the target)",
            draft_weights_bytes=cap.draft_weights_bytes,
            TP=par.tensor,
        )
    if lora or draft:
        what = " + ".join(x for x, v in (("lora_bytes", lora), ("draft weights per GPU", draft)) if v)
        led.add(
            "weights_bytes_per_gpu",
            f"model weights per GPU + {what} (counted with the weights: Model loading took …)",
            b.weights_bytes_per_gpu,
            "B",
            "vllm/v1/worker/gpu_model_runner.py (load_model: load_lora_model, the drafter)",
            model_weights=pl.per_gpu,
            lora_bytes=lora or None,
            draft_weights_per_gpu=draft or None,
            GiB=round(b.weights_bytes_per_gpu / GiB, 6),
        )
