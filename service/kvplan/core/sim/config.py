"""The simulator's pool and scheduler limits (SimConfig), and the work a workload asks of the
loop, bounded before it runs (scheduler.py runs it)."""

from __future__ import annotations

import msgspec

from ..errors import InvalidInput
from ..limits import MAX_BLOCK_SIZE, MAX_NUM_SEQS
from ..units import cdiv
from .workload import Size

# Steps a request can cause besides its prefill chunks and decode blocks (see step_bound).
STEPS_PER_REQUEST = 8
POLICIES = ("fcfs", "priority")


class SimConfig(msgspec.Struct, frozen=True, kw_only=True):
    """The pool and the scheduler's limits. No defaults here: the engine profile owns vLLM's
    (the service resolves them as budget does)."""

    num_blocks: int
    block_size: int
    max_num_seqs: int
    max_num_batched_tokens: int
    policy: str = "fcfs"
    prefix_caching: bool = True
    # Admit a waiting request only when blocks for its whole sequence fit, not just its first
    # chunk (vLLM 0.33's scheduler_reserve_full_isl). The service sets it from the engine profile.
    admit_full_sequence: bool = False


# -- bounds -------------------------------------------------------------------------------------
def check_config(cfg: SimConfig) -> None:
    if not 1 <= cfg.block_size <= MAX_BLOCK_SIZE:
        raise InvalidInput("block_size", f"must be 1..{MAX_BLOCK_SIZE:,}")
    if not 1 <= cfg.max_num_seqs <= MAX_NUM_SEQS:
        raise InvalidInput("max_num_seqs", f"must be 1..{MAX_NUM_SEQS:,}")
    if cfg.max_num_batched_tokens < cfg.max_num_seqs:
        raise InvalidInput("max_num_batched_tokens", "must be at least max_num_seqs (as vLLM requires)")
    if cfg.policy not in POLICIES:
        raise InvalidInput("scheduling_policy", "must be fcfs or priority")


def step_bound(cfg: SimConfig, s: Size) -> tuple[int, int]:
    """An upper bound on the steps the loop takes when nothing is preempted, and its prefill term.

    Every step the loop visits is one of:
    - a step that starts with a prefill in progress. It either spends the whole token budget
      (decodes and prefill chunks: max_num_batched_tokens tokens) or completes a prefill. All
      steps together schedule at most Σ prompt + Σ output tokens, so at most
      ceil((Σ prompt + Σ output) / max_num_batched_tokens) spend it; completions are one a request;
    - a step that tries to admit: it admits (once a request) or finds the pool full, which it
      tries again only after an arrival or a release (two a request);
    - an arrival (one a request) or a running request's event: a block boundary while decoding
      (ceil(output / block_size) a request) or its last token (one a request).
    With the first step, steps ≤ ceil((Σ prompt + Σ output) / max_num_batched_tokens)
    + Σ ceil(output / block_size) + 6·requests + 2, which STEPS_PER_REQUEST·requests + 1 covers
    (the worst measured is 2.3 a request). Prompts include each turn's history.

    A preemption adds its recomputed tokens to the first term and a few steps (a completion, an
    admission, a release, a stale event). No useful bound on preemptions exists before the run
    (with prefix caching off, each block an old request takes can throw away a young one's whole
    prefill), so the run itself stops at the same limits (`Scheduler.run`)."""
    steps, prefill = visit_bound(cfg, s)
    return steps + s.decode_blocks, prefill


def visit_bound(cfg: SimConfig, s: Size) -> tuple[int, int]:
    """step_bound without the block boundaries: the steps the loop runs one by one (a run of
    decode steps crosses its boundaries at once, runs.py `advance`), and its prefill term."""
    prefill = cdiv(s.prompt_tokens + s.output_tokens, cfg.max_num_batched_tokens)
    return prefill + STEPS_PER_REQUEST * s.requests + 1, prefill
