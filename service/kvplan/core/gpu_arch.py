"""Which GPU architecture a plan's backend choices hold on. Some KV layouts depend on the kernels
vLLM 0.33 picks for the GPU, not on the config alone: Kimi-K3's and GLM-5-next's KDA keep a prefill
checkpoint only where FlashKDA runs (SM 9.x / 10.x / 12.x: vllm/models/kimi_k3/nvidia/kda.py
is_flashkda_supported), and GLM-5-next's packed layout is Hopper's (SM 9.x: its sparse MLA backend
FLASHINFER_MLA_SPARSE_SM90; on SM 10.x vllm/model_executor/models/config.py Glm5NextModelConfig
turns a bf16 cache to fp8). kvplan plans them for those GPUs and says so when the named GPU is
another (docs/vllm-rules.md §8)."""

from __future__ import annotations

from . import warnings as w
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


def planned_arch_warning(geometry: Geometry, gpu_name: str) -> w.Warning | None:
    """A warning when the named GPU is not one the layout's backend-dependent rules hold on."""
    sm = sm_major(gpu_name) if gpu_name else None
    if sm is None:
        return None
    m = geometry.mamba
    flashkda = m is not None and m.mixer is Mixer.GATED_DELTA_NET and m.checkpoint_blocks > 0
    if geometry.kpool_indexer is not None and sm != 9:
        return w.Warning(
            w.PLANNED_FOR_OTHER_GPU,
            f"GLM-5-next's KV layout is planned as vLLM lays it out on SM 9.x GPUs (H100, H200); on "
            f"{gpu_name} vLLM picks other sparse-attention and KDA kernels: the figures may differ.",
        )
    if flashkda and sm not in _FLASHKDA_SM:
        return w.Warning(
            w.PLANNED_FOR_OTHER_GPU,
            f"The KDA layers' third state block a request is FlashKDA's prefill checkpoint, which vLLM "
            f"uses on SM 9.x / 10.x / 12.x GPUs; on {gpu_name} it prefills without one (2 blocks).",
        )
    return None
