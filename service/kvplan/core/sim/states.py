"""A simulated request's states and the events that move it between them (vLLM's RequestStatus,
vllm/v1/request.py): the table the scheduler's `_transition` follows, and nothing else does."""

from __future__ import annotations

import enum


class State(enum.Enum):
    """vLLM's RequestStatus (vllm/v1/request.py), with RUNNING split by what the step does."""

    PENDING = "pending"  # not arrived yet
    WAITING = "waiting"  # in the waiting queue, never scheduled
    PREFILLING = "prefilling"  # running: computing its prompt (and recomputing after preemption)
    DECODING = "decoding"  # running: sampling one token a step
    PREEMPTED = "preempted"  # blocks freed, at the front of the waiting queue, to be recomputed
    FINISHED = "finished"

    # Members are singletons compared by identity: hash them by identity too (in C), not by name
    # (Enum's default, in Python); a run hashes states hundreds of thousands of times.
    __hash__ = object.__hash__


class Event(enum.Enum):
    ARRIVE = "arrive"
    SCHEDULE = "schedule"  # admitted: cache hits taken, blocks for the first chunk allocated
    PREFILL_DONE = "prefill_done"  # every token computed: the step samples the next one
    PREEMPT = "preempt"
    FINISH = "finish"  # sampled its last token

    __hash__ = object.__hash__  # as State's


TRANSITIONS: dict[tuple[State, Event], State] = {
    (State.PENDING, Event.ARRIVE): State.WAITING,
    (State.WAITING, Event.SCHEDULE): State.PREFILLING,
    (State.PREEMPTED, Event.SCHEDULE): State.PREFILLING,
    (State.PREFILLING, Event.PREFILL_DONE): State.DECODING,
    (State.PREFILLING, Event.PREEMPT): State.PREEMPTED,
    (State.DECODING, Event.PREEMPT): State.PREEMPTED,
    (State.DECODING, Event.FINISH): State.FINISHED,
}
QUEUED = frozenset({State.WAITING, State.PREEMPTED})
RUNNING = frozenset({State.PREFILLING, State.DECODING})
