"""Every error the core raises, in one tree. Each says what went wrong in its type; api/errors.py
maps a type to an HTTP answer by walking its class hierarchy (the nearest mapped ancestor wins),
so a new subclass answers as its parent does until it is mapped itself.

Hierarchy (HTTP status as the API answers it):

    KvplanError                   the input's fault: names the field (`field`, `reason`)     400
      InvalidInput                a value out of range or inconsistent with another          400
        InvalidLayout             a parallel layout the model's heads cannot take            400
        InvalidConfig             a Hugging Face config.json that cannot be interpreted      400
        InvalidDistribution       a workload length distribution that contradicts itself     400
                                  (also a ValueError, so msgspec names its JSON path)
        NoGpuSpecs                a timed simulation on a GPU without step-time specs        400
      UnknownName                 a name outside a closed set (engine profile, dtype)        400
        UnknownPreset             a model or GPU preset id the registry does not hold        404
        UnknownDeployment         a deployment the deployments file does not hold            404
    WorkStopped                   the caller's should_stop() said stop (deadline, client     503
                                  gone): no answer, through no fault of the input. Heavy
                                  work runs in api/offload.py, which answers it (503, or
                                  499 when the client left); anywhere else it is a 500
      SimulationStopped           a simulation stopped at its step check
    InternalInconsistency         an answer broke an invariant: a defect, logged, counted    500
      SchedulerStateError         a request event outside the scheduler's TRANSITIONS, or a
                                  simulation that can make no progress
    PoolExhausted                 the block pool has fewer free blocks than asked for: the   500
                                  scheduler preempts before it asks, so it never escapes

Only KvplanError and its subclasses are the caller's fault; WorkStopped and InternalInconsistency
are deliberately outside it. Private control-flow signals that never leave their module (such as
hf/params.py's _PerLayerSizes, "this config gives sizes per layer") are not errors and stay there.
"""

from __future__ import annotations


class KvplanError(Exception):
    """Base of the errors that are the input's fault: each names the field it is about."""

    field: str
    reason: str

    def __init__(self, field: str, reason: str) -> None:
        super().__init__(f"{field}: {reason}")
        self.field = field
        self.reason = reason


class InvalidInput(KvplanError):
    """A value is out of range, of the wrong kind, or inconsistent with another."""


class InvalidLayout(InvalidInput):
    """A tensor/pipeline/context-parallel layout that vLLM would reject."""


class InvalidConfig(InvalidInput):
    """A Hugging Face config.json that cannot be turned into a geometry."""


class InvalidDistribution(InvalidInput, ValueError):
    """A length distribution whose fields contradict each other (sim/workload.py). A ValueError
    too, so that msgspec reports it at the JSON path being decoded (`workload.generator.prompt`)."""


class UnknownName(KvplanError):
    """A name outside a closed set; `valid` lists what is accepted, `suggestions` the close ones."""

    kind: str
    name: str
    valid: tuple[str, ...]
    suggestions: tuple[str, ...]

    def __init__(
        self,
        field: str,
        kind: str,
        name: str,
        valid: tuple[str, ...],
        suggestions: tuple[str, ...] = (),
    ) -> None:
        if suggestions:
            hint = "did you mean " + ", ".join(suggestions) + "?"
        elif len(valid) <= 20:
            hint = "valid: " + ", ".join(valid)
        else:
            hint = f"{len(valid)} are known"
        super().__init__(field, f"unknown {kind} {name!r}; {hint}")
        self.kind = kind
        self.name = name
        self.valid = valid
        self.suggestions = suggestions


class UnknownPreset(UnknownName):
    """A model or GPU id the preset registry does not hold: a missing resource, not a bad value."""


class UnknownDeployment(UnknownName):
    """A namespace/name the deployments file (KVPLAN_DEPLOYMENTS) does not hold."""


class InternalInconsistency(Exception):
    """An answer broke an invariant (budget/invariants.py): a bug, never the caller's fault.
    Deliberately not a KvplanError, so it maps to a 500 that is logged and counted."""

    def __init__(self, what: str, failures: list[str]) -> None:
        super().__init__(f"{what}: " + "; ".join(failures))
        self.failures = failures


class SchedulerStateError(InternalInconsistency):
    """A transition outside the scheduler's TRANSITIONS (sim/scheduler.py), or a run that can make
    no progress: a defect in the scheduler, never the input's fault (so a 500, logged)."""

    def __init__(self, problem: str) -> None:
        super().__init__("scheduler", [problem])


class WorkStopped(Exception):
    """Long work (a simulation, a batch) polls a should_stop() the caller passes in; when it turns
    true the work raises this: no answer, through no fault of the input."""

    def __init__(self, reason: str = "stopped") -> None:
        super().__init__(reason)
        self.reason = reason


class SimulationStopped(WorkStopped):
    """The caller's should_stop() said stop during a simulation (a deadline passed, the client
    went away): no answer, through no fault of the input. The API answers 503."""


class PoolExhausted(Exception):
    """Fewer free blocks than asked for (sim/blockpool.py `allocate`; the argument is how many);
    the scheduler preempts or waits before it asks, so this reaching a caller is a defect."""


class NoGpuSpecs(InvalidInput):
    """A timed simulation on a GPU preset without peak figures (gpus.toml [gpu.specs]): kvplan
    does not guess a GPU's speed. Names the GPUs that have them."""

    gpu: str
    with_specs: tuple[str, ...]

    def __init__(self, gpu: str, with_specs: tuple[str, ...], field: str = "gpu") -> None:
        super().__init__(
            field,
            f"GPU {gpu!r} has no specs for the step-time model (peak FLOP/s, memory bandwidth); "
            f"timed simulations run on: {', '.join(with_specs)}",
        )
        self.gpu = gpu
        self.with_specs = with_specs
