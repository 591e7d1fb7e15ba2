"""What a timed simulation runs on: the step-time model of the model, GPU and layout the request
names (core/perf), built from the same resolved inputs the budget plans with, and the note every
timed answer carries: which figures are exact, which are modelled, and how well the model did
against measured runs on that GPU (docs/validation-steptime.md)."""

from __future__ import annotations

from kvplan.core.budget import compute_budget
from kvplan.core.budget.capacity import captured_graphs
from kvplan.core.budget.defaults import resolve_settings
from kvplan.core.errors import InvalidInput
from kvplan.core.perf.serving import serving_prior
from kvplan.core.perf.steptime import step_model
from kvplan.core.perf.weights import gemm_dtype
from kvplan.core.sim.simulate import GoodputTargets, Timing, TimingNote
from kvplan.presets import Registry
from kvplan.presets.perf import AIC_TABLES, load_coefficients, load_validation
from kvplan.schemas import BudgetRequest, SimulateRequest

from .models import ModelRef
from .scenarios import _same_named, budget_input

EXACT = (
    "exact as vLLM 0.33 runs it: which requests each step schedules, their blocks, preemptions and "
    "prefix-cache hits, and so the queue each request waits in, counted in steps"
)
MODELLED = (
    "modelled: each step's duration, from kvplan's step-time model (docs/steptime.md): the step's "
    "FLOPs and bytes priced by kernel timings AIConfigurator 0.12.0 measured on this GPU, plus a "
    "host prior; every time in the answer (latency, throughput, time_s) is a sum of them, with the "
    "server's request path and tokenizer (priors, the tokenizer's rate the request's if it gives one; "
    "in timing.steps) before a request's first step"
)


def require_model_and_gpu(model: object, gpu: object) -> None:
    """A timed simulation's steps are timed on a model and a GPU: a 400 naming the one missing."""
    if model is None:
        raise InvalidInput(
            "model", "a timed simulation (arrivals in seconds) needs the model: its steps are timed"
        )
    if gpu is None:
        raise InvalidInput(
            "gpu", "a timed simulation (arrivals in seconds) needs the GPU: its steps are timed"
        )


def timing_for(
    registry: Registry,
    req: SimulateRequest,
    ref: ModelRef | None,
    concurrency: int | None,
    goodput: GoodputTargets | None,
) -> Timing:
    """The step-time model and note for req's model, GPU and settings. A 4xx naming the field
    when the request lacks the model or the GPU, or the GPU has no specs."""
    require_model_and_gpu(req.model, req.gpu)
    assert req.model is not None and req.gpu is not None
    specs = registry.gpu_specs(req.gpu)
    inp, _, _ = budget_input(registry, BudgetRequest(**_same_named(req, BudgetRequest)), ref=ref)
    b = compute_budget(inp)
    settings = resolve_settings(inp)  # async scheduling: the request's, else its engine's default
    graphs = captured_graphs(inp, settings)
    model = step_model(
        inp.geometry,
        specs,
        load_coefficients(),
        tensor_parallel=b.tensor_parallel_size,
        pipeline_parallel=b.pipeline_parallel_size,
        weights_dtype=gemm_dtype(inp.geometry, inp.weight_dtype),
        kv_cache_dtype=b.per_token.kv_cache_dtype,
        cudagraph_sizes=graphs.sizes,
        cudagraph_mode=graphs.mode,
        async_scheduling=settings.async_scheduling,
        data_parallel=inp.data_parallel_size or 1,
        expert_parallel=bool(inp.enable_expert_parallel),
        moe_backend=inp.moe_backend,
        mxfp8_activations=inp.flashinfer_moe_mxfp4_mxfp8,
        eager_forward=graphs.eager_forward,
    )
    server = serving_prior(
        settings.async_scheduling, req.tokenize_us_per_token, inp.profile.tokenizer_batch_wait_s
    )
    return Timing(
        timer=model,
        note=TimingNote(
            exact=EXACT,
            modelled=MODELLED,
            step_time_model=f"kvplan step time, fitted tables {AIC_TABLES}, GPU {specs.aic_system}",
            validation=load_validation().summary(specs.aic_system),
            steps=(*model.explain(), *server.explain()),
        ),
        concurrency=concurrency,
        slo=goodput,
        server=server,
    )
