"""Step-time models of preset models on preset GPUs, as the simulator builds them."""

from __future__ import annotations

from functools import cache

from kvplan.core.engine.cudagraphs import capture_sizes
from kvplan.core.perf.steptime import StepModel, step_model
from kvplan.presets import load_registry
from kvplan.presets.perf import load_coefficients

REGISTRY = load_registry("")


@cache
def model(
    name: str,
    gpu: str,
    tp: int = 1,
    weights: str = "bfloat16",
    *,
    kv: str = "auto",
    pp: int = 1,
    max_num_seqs: int = 256,
    max_num_batched_tokens: int = 8192,
    eager: bool = False,
    async_scheduling: bool = True,
    mode: str = "full_and_piecewise",
    moe_backend: str = "auto",
    mxfp8: bool = False,
) -> StepModel:
    specs = REGISTRY.gpu_specs(gpu)
    sizes = capture_sizes(
        given=None,
        given_max=None,
        max_num_seqs=max_num_seqs,
        max_num_batched_tokens=max_num_batched_tokens,
        blackwell=specs.sm_version in (100, 103),
    )
    return step_model(
        REGISTRY.model(name).geometry,
        specs,
        load_coefficients(),
        tensor_parallel=tp,
        pipeline_parallel=pp,
        weights_dtype=weights,
        kv_cache_dtype=kv,
        cudagraph_sizes=() if eager else sizes,
        async_scheduling=async_scheduling,
        cudagraph_mode=mode,
        moe_backend=moe_backend,
        mxfp8_activations=mxfp8,
        eager_forward=eager,  # --enforce-eager: neither graphs nor compilation
    )
