"""A GPU's peak figures, which the step-time model's roofline divides by."""

from __future__ import annotations

import msgspec


class GpuSpecs(msgspec.Struct, frozen=True, gc=False, kw_only=True):
    """Peak dense figures of one GPU, as AIConfigurator's `systems/<system>.yaml` gives them.
    `aic_system` names the kernel tables its coefficients were fitted on (presets/data/perf)."""

    aic_system: str
    hbm_bytes_per_s: int
    bf16_flops: int  # dense tensor-core FLOP/s
    fp8_flops: int | None = None  # None: the GPU has no fp8 tensor cores (A100)
    fp4_flops: int | None = None
    intra_node_bytes_per_s: int  # NVLink (or PCIe) per GPU, one direction
    p2p_latency_s: float
    gpus_per_node: int
    sm_version: int
    source: str  # the file and version the figures come from

    def peak_flops(self, gemm_dtype: str) -> int:
        """The tensor-core peak a GEMM of this dtype runs against (bf16 where the GPU lacks it)."""
        if gemm_dtype == "nvfp4" and self.fp4_flops:
            return self.fp4_flops
        if gemm_dtype.startswith("fp8") and self.fp8_flops:
            return self.fp8_flops
        return self.bf16_flops
