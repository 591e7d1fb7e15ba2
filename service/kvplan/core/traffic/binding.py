"""What binds first when the rate rises past what a replica sustains: the KV pool, max_num_seqs,
the step's token budget (max_num_batched_tokens) or compute, read from the simulation just above
the sustainable rate: where its requests waited, and which target it missed."""

from __future__ import annotations

import msgspec

from .point import RatePoint

CONSTRAINTS = ("kv_capacity", "max_num_seqs", "max_num_batched_tokens", "compute")
WORDS = {
    "kv_capacity": "the KV-cache pool: requests waited for blocks (or were preempted)",
    "max_num_seqs": "max_num_seqs: requests waited for a running slot",
    "max_num_batched_tokens": "the step's token budget (max_num_batched_tokens): prefills queued behind it",
    "compute": "compute: no request waited long, but every step grew slower as batches grew",
}
# A reason binds when requests waited for it this share of the run, or more.
WAITED_SHARE = 0.05


class Binding(msgspec.Struct, frozen=True, kw_only=True):
    constraint: str  # one of CONSTRAINTS
    target: str  # the target missed first (its field), "" when none was
    why: str


# Compute at a rate where the replica is idle between requests: no batch to grow.
IDLE_WORDS = (
    "compute: the targets are missed even with the replica idle between requests; "
    "each request's own steps take that long"
)


def binding(p: RatePoint, *, idle: bool = False) -> Binding:
    """The constraint that binds at p: the wait reason that held longest, when requests waited a
    meaningful share of the run; a preemption means the pool; else compute (`idle`: p is a rate at
    which the replica is idle between requests, so no batch grew)."""
    missed = [c for c in p.checks if not c.met]
    # The target missed by the largest factor is the one that binds first.
    worst = max(missed, key=lambda c: c.value_ms / c.limit_ms) if missed else None
    target = worst.target if worst is not None else ""
    duration = p.throughput.duration_s or 1.0
    reason, waited = max(p.waiting_s.items(), key=lambda kv: kv[1]) if p.waiting_s else ("", 0.0)
    if p.preemptions:
        constraint, share = "kv_capacity", f"; {p.preemptions:,} preemptions"
    elif waited >= WAITED_SHARE * duration:
        constraint, share = reason, f"; requests waited {waited / duration:.0%} of the run for it"
    else:
        constraint, share = "compute", ""
    missed_words = (
        f"{worst.target} was {worst.value_ms:,.1f} ms against {worst.limit_ms:,.1f} ms "
        f"at {p.rate_per_s:.4g}/s"
        if worst is not None
        else "no target was missed"
    )
    words = IDLE_WORDS if idle and constraint == "compute" else WORDS[constraint]
    return Binding(constraint=constraint, target=target, why=f"{words}{share}. {missed_words}")
