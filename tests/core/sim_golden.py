"""Answers of the simulator pinned before its speed-up (issue #29): a seeded set of workloads
over pools, block sizes, policies and prefix caching, each answer's whole JSON hashed. The
speed-up must leave every untimed answer byte-identical, and every timed one the same schedule.
`python -m tests.core.sim_golden` writes tests/core/data/sim-golden.json (only ever from a
revision whose answers are the reference)."""

from __future__ import annotations

import hashlib
import json
import random
from pathlib import Path

import msgspec

from kvplan.core.sim.simulate import (
    Generator,
    SimConfig,
    SimRequest,
    Timing,
    TimingNote,
    Uniform,
    simulate,
)

GOLDEN = Path(__file__).parent / "data" / "sim-golden.json"
CASES = 120


class Linear:
    """A step-time model for the timed cases: affine in every part of the batch."""

    def seconds(self, b) -> float:  # type: ignore[no-untyped-def]
        return 0.004 + 2e-5 * b.decode_requests + 3e-8 * b.decode_context + 6e-5 * b.prefill_tokens

    def decode_line(self, n: int, context: int) -> tuple[float, float, int]:
        return 0.004 + 2e-5 * n, 3e-8, 1 << 62


def case(i: int) -> tuple[SimConfig, list[SimRequest] | None, Generator | None, tuple[int, ...], bool]:
    """Workload i: a pool and requests drawn from seed i (a third from the generator)."""
    rnd = random.Random(i)
    bs = rnd.choice([1, 2, 16, 16, 16, 32])
    seqs = rnd.choice([1, 4, 16, 64, 256])
    cfg = SimConfig(
        num_blocks=rnd.choice([40, 200, 1000, 5000, 40_000]),
        block_size=bs,
        max_num_seqs=seqs,
        max_num_batched_tokens=max(seqs, rnd.choice([16, 256, 2048, 8192])),
        policy=rnd.choice(["fcfs", "fcfs", "priority"]),
        prefix_caching=rnd.random() < 0.8,
        admit_full_sequence=rnd.random() < 0.7,
    )
    timed = i % 4 == 3
    snapshots = i % 5 == 0 and not timed and cfg.num_blocks <= 4096
    snaps = tuple(sorted(rnd.sample(range(400), 3))) if snapshots else ()
    usable = cfg.num_blocks - 1
    longest = max(2, min(usable * bs // 2, 3000))
    if i % 3 == 0:
        gen = Generator(
            count=rnd.choice([20, 100, 400]),
            arrival_rate=None if timed else rnd.choice([0.05, 0.5, 4.0]),
            arrival_rate_per_s=rnd.choice([2.0, 20.0]) if timed else None,
            prompt=Uniform(low=1, high=max(1, longest // 2 - 64)),
            output=Uniform(low=1, high=max(1, longest // 2)),
            system_prompt_share=rnd.choice([0.0, 0.5]),
            system_prompt_tokens=min(longest // 4, 64),
            seed=i,
        )
        return cfg, None, gen, snaps, timed
    reqs = []
    for _ in range(rnd.choice([5, 40, 150])):
        p = rnd.randint(1, longest // 2)
        o = rnd.randint(1, longest - p)
        shared = rnd.random() < 0.3 and p > 40
        common = dict(
            prompt_tokens=p,
            output_tokens=o,
            prefix_id="s" if shared else None,
            prefix_tokens=min(p - 1, 32) if shared else 0,
            priority=rnd.randint(0, 3),
        )
        if timed:
            reqs.append(SimRequest(arrival_time=round(rnd.uniform(0, 5), 3), **common))
        else:
            reqs.append(SimRequest(arrival_step=rnd.randint(0, 300), **common))
    return cfg, reqs, None, snaps, timed


def answer(i: int) -> dict[str, object]:
    cfg, reqs, gen, snaps, timed = case(i)
    timing = None
    if timed:
        note = TimingNote(exact="scheduling", modelled="durations", step_time_model="linear", validation="-")
        timing = Timing(Linear(), note)
    try:
        r = simulate(cfg, reqs, gen, snaps, timing=timing)
    except Exception as e:  # refusals are answers too
        return {"error": f"{type(e).__name__}: {e}"}
    if not timed:
        body = msgspec.json.encode(r)
        return {"sha256": hashlib.sha256(body).hexdigest(), "steps": r.steps, "preemptions": r.preemptions}
    return {
        "steps": r.steps,
        "preemptions": r.preemptions,
        "finish_order": hashlib.sha256(json.dumps(list(r.finish_order)).encode()).hexdigest(),
        "peak_blocks_in_use": r.peak_blocks_in_use,
        "mean_blocks_in_use": r.mean_blocks_in_use,
        "ttft_mean_ms": r.latency.ttft_ms.mean,  # type: ignore[attr-defined]
        "e2e_p99_ms": r.latency.e2e_ms.p99,  # type: ignore[attr-defined]
        "duration_s": r.throughput.duration_s,  # type: ignore[attr-defined]
    }


def main() -> None:
    GOLDEN.write_text(json.dumps({str(i): answer(i) for i in range(CASES)}, indent=1) + "\n")


if __name__ == "__main__":
    main()
