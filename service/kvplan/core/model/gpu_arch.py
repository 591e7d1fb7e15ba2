"""Which GPU architecture a plan's backend choices hold on. Some KV layouts depend on the kernels
vLLM 0.33 picks for the GPU, not on the config alone: Kimi-K3's and GLM-5-next's KDA keep a prefill
checkpoint only where FlashKDA runs (SM 9.x / 10.x / 12.x: vllm/models/kimi_k3/nvidia/kda.py
is_flashkda_supported), and GLM-5-next's packed layout is Hopper's (SM 9.x: its sparse MLA backend
FLASHINFER_MLA_SPARSE_SM90; on SM 10.x vllm/model_executor/models/config.py Glm5NextModelConfig
turns a bf16 cache to fp8). A named GPU gets its own architecture's plan where kvplan knows it and a
refusal naming `gpu` where it does not; with no GPU named (or one kvplan cannot place) the plan is
Hopper's, as docs/vllm-rules.md §8 says."""

from __future__ import annotations

from msgspec.structs import replace

from ..errors import InvalidLayout
from .geometry import Geometry
from .mamba import Mixer

# Compute-capability majors by the name the GPU reports (the GPU presets' names); AMD GPUs run
# vLLM's ROCm path (vllm/models/*/amd), 0 here. Unknown names: no claim.
_SM_BY_NAME = (
    ("GH200", 9), ("H100", 9), ("H200", 9), ("H800", 9), ("H20", 9),
    ("GB200", 10), ("GB300", 10), ("B200", 10), ("B300", 10),
    ("RTX PRO 6000", 12), ("RTX 50", 12),
    ("A100", 8), ("A800", 8), ("A10", 8), ("A30", 8), ("A40", 8), ("L40", 8), ("L4", 8),
    ("RTX 40", 8), ("RTX 30", 8), ("RTX A", 8),
    ("Instinct", 0), ("MI2", 0), ("MI3", 0),
)  # fmt: skip
_FLASHKDA_SM = frozenset({9, 10, 12})


def sm_major(gpu_name: str) -> int | None:
    """The GPU's compute-capability major (0: AMD), or None when the name says nothing kvplan knows."""
    upper = gpu_name.upper()
    return next((sm for key, sm in _SM_BY_NAME if key.upper() in upper), None)


def for_gpu(geometry: Geometry, gpu_name: str) -> Geometry:
    """The geometry as vLLM 0.33 runs it on the named GPU. InvalidLayout where kvplan does not
    model that GPU's kernels (a fleet plan marks the GPU infeasible and plans the others). A gated
    delta net with a checkpoint block is a FlashKDA-prefilled KDA layer: no other reader sets one
    (an inline geometry that does is read the same way)."""
    sm = sm_major(gpu_name) if gpu_name else None
    if sm is None:
        return geometry
    if geometry.kpool_indexer is not None and sm != 9:
        raise InvalidLayout(
            "gpu",
            f"GLM-5-next's KV layout is planned as vLLM lays it out on SM 9.x GPUs (H100, H200); on "
            f"{gpu_name!r} vLLM picks other sparse-attention and KDA kernels (SM 10.x: an fp8 cache), "
            "which kvplan does not model",
        )
    m = geometry.mamba
    if m is None or m.mixer is not Mixer.GATED_DELTA_NET or not m.checkpoint_blocks or sm in _FLASHKDA_SM:
        return geometry
    if sm == 0:  # vllm/models/kimi_k3/amd/kda.py keeps prefill checkpoints by rules of its own
        raise InvalidLayout(
            "gpu", f"the KDA layers' prefill checkpoints on ROCm ({gpu_name!r}) are not modelled by kvplan"
        )
    # Not FlashKDA's GPU: resolve_kda_prefill_backend picks Triton, which keeps no checkpoint.
    return replace(geometry, mamba=replace(m, checkpoint_blocks=0))
