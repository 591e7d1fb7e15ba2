"""The memory-bound kernels between a layer's GEMMs (norms, activations), priced as
AIConfigurator prices them: a prior the step-time model (steptime.py) adds per layer."""

from __future__ import annotations

import msgspec


class ElementwisePrior(msgspec.Struct, frozen=True, gc=False, kw_only=True):
    """The memory-bound kernels between the GEMMs, priced as AIConfigurator 0.12.0 prices them
    (sdk/models/llama.py and moe.py: ops.ElementWise "add_norm_1", "add_norm_2" of 2h in and 2h
    out a layer, and "act_gate" of 2·I/TP in and I/TP out for a dense MLP; each lasts
    bytes ÷ (η·HBM) + a constant, with systems/<gpu>.yaml mem_bw_empirical_scaling_factor 0.8 and
    mem_empirical_constant_latency 3 µs on every GPU it lists). vLLM runs them as kernels of their
    own: fused_add_rms_norm twice a layer and SiluAndMul (vllm/model_executor/layers/layernorm.py,
    activation.py). A PRIOR taken from AIC's model, not fitted here."""

    constant_s: float = 3e-6  # mem_empirical_constant_latency
    eta_mem: float = 0.8  # mem_bw_empirical_scaling_factor
    bytes_per_element: int = 2  # bf16 activations


ELEMENTWISE_PRIOR = ElementwisePrior()
