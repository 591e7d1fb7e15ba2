"""Time in the simulator: how long each engine step takes, and runs of decode steps summed whole.

The scheduler decides which requests a step runs, exactly as vLLM does; a step-time model
(core/perf) says how long that batch takes on the GPU. The clock keeps the time at which the next
step starts. Between two events the scheduler skips steps in which every running request just
decodes one token (scheduler.py): their batches differ only in the context the requests attend,
which grows by the number of requests a step. The model's `decode_line` is affine in that context
on stretches, so a skipped run is summed in closed form, and the step at which a run has lasted a
given time (an arrival in seconds waits for the first step starting at or after it) is found by
solving a quadratic, not by walking the steps.
"""

from __future__ import annotations

import math
from typing import NamedTuple, Protocol

from ..errors import SchedulerStateError


class Batch(NamedTuple):
    """What one engine step schedules, as the step-time model needs it."""

    decode_requests: int  # requests sampling one token, with no prefill work
    decode_context: int  # Σ over them of their KV length this step (tokens attended)
    prefill_requests: int  # requests with a prefill chunk this step
    prefill_tokens: int  # Σ of the chunks' new tokens
    prefill_context: int  # Σ over chunks of chunk × (tokens cached before it + chunk)


class StepTimer(Protocol):
    """A step-time model (core/perf/steptime.py StepModel)."""

    def seconds(self, batch: Batch) -> float: ...

    def decode_line(self, n: int, context: int) -> tuple[float, float, int]:
        """(a, b, until): a step of n decoding requests with Σ context c ∈ [context, until]
        lasts a + b·c seconds."""
        ...


class Server(Protocol):
    """The serving path outside the engine (core/perf/serving.py ServingPrior)."""

    scheduled_ahead: bool  # async scheduling: a step is scheduled when its predecessor launches
    request_path_s: float  # the way in and out outside the engine, charged on the way in
    tokenizer_batch_wait_s: float  # micro-batching: how long a batch waits for more (0: none)
    tokenizer_batch_max: int  # micro-batching: the most requests a batch takes

    def admission_seconds(self, prompt_tokens: int) -> float:
        """How long the server's serialised request path holds a prompt of this length."""
        ...

    def batch_seconds(self, prompt_tokens: int, prompts: int) -> float:
        """How long one micro-batch of `prompts` prompts, `prompt_tokens` in all, holds it."""
        ...


def _sum(a: float, b: float, n: int, c0: int, k: int) -> float:
    """Σ_{j<k} a + b·(c0 + j·n): k steps of an affine stretch."""
    return k * a + b * (k * c0 + n * k * (k - 1) / 2)


def _first_reaching(a: float, b: float, n: int, c0: int, k: int, target: float) -> int:
    """The least j ≤ k with _sum(…, j) ≥ target, where _sum(…, k) ≥ target > 0."""
    qa, qb = b * n / 2, a + b * c0 - b * n / 2
    if qa > 0:
        j = math.ceil((-qb + math.sqrt(max(0.0, qb * qb + 4 * qa * target))) / (2 * qa))
    else:
        j = math.ceil(target / qb) if qb > 0 else k
    j = min(max(j, 0), k)
    # The root is a float: settle the integer by the sums themselves.
    while j > 0 and _sum(a, b, n, c0, j - 1) >= target:
        j -= 1
    while j < k and _sum(a, b, n, c0, j) < target:
        j += 1
    return j


class Clock:
    """The time at which the next step starts, in seconds from the first arrival."""

    def __init__(self, timer: StepTimer, server: Server | None = None) -> None:
        self.timer = timer
        self.server = server  # None: requests reach the engine when sent
        self.now = 0.0

    def step(self, batch: Batch) -> float:
        """The duration of a step that runs `batch`."""
        d = self.timer.seconds(batch)
        if not d > 0:
            raise SchedulerStateError(f"the step-time model gave {d!r} s for {batch}")
        return d

    def decode_run(self, n: int, context: int, steps: int, target: float = math.inf) -> tuple[int, float]:
        """Steps of n decoding requests whose Σ context starts at `context` and grows by n a step:
        how many of them (at most `steps`) start before `target` seconds into the run, and how long
        those last. With target = inf: all `steps`, and their total duration."""
        done, elapsed, c = 0, 0.0, context
        while done < steps:
            a, b, until = self.timer.decode_line(n, c)
            if until < c or not a + b * c > 0:
                raise SchedulerStateError(f"the step-time model's decode line at {n}, {c} is {a, b, until}")
            k = min(steps - done, (until - c) // n + 1)
            span = _sum(a, b, n, c, k)
            if elapsed + span >= target:
                j = _first_reaching(a, b, n, c, k, target - elapsed)
                return done + j, elapsed + _sum(a, b, n, c, j)
            done, elapsed, c = done + k, elapsed + span, c + k * n
        return done, elapsed

    def decode_starts(self, n: int, context: int, offsets: list[int], start: float) -> list[float]:
        """When steps `offsets` (ascending, 0 the first) of such a run start, the run starting
        at `start` seconds."""
        out: list[float] = []
        done, elapsed, c = 0, start, context
        a, b, until = self.timer.decode_line(n, c)
        k = (until - c) // n + 1  # steps on this stretch
        for j in offsets:
            while j >= done + k:
                done, elapsed, c = done + k, elapsed + _sum(a, b, n, c, k), c + k * n
                a, b, until = self.timer.decode_line(n, c)
                k = (until - c) // n + 1
            out.append(elapsed + _sum(a, b, n, c, j - done))
        return out
