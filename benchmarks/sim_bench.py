"""Block-pool simulation cost: 10,000 requests averaging 1,000 prompt and 200 output tokens
(target ≤ 2 s), and the cost at three sizes, which should grow linearly with total tokens /
block size (the event-driven loop's work: block boundaries, not tokens). Then the largest
workloads the limits accept, one at each limit, against the API's deadline."""

from __future__ import annotations

import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the root, for tests/

from tests.core.simulations import loaded_server

from kvplan.api.offload import ROUTE_DEADLINES
from kvplan.api.settings import Settings
from kvplan.core.limits import MAX_BLOCK_EVENTS, MAX_SIMULATED_STEPS
from kvplan.core.sim.simulate import Fixed, Generator, SimConfig, SimRequest, simulate

TARGET_S = 2.0


def run(count: int, block_size: int, repeats: int = 3) -> tuple[float, int]:
    cfg, gen = loaded_server(count, block_size)
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        r = simulate(cfg, generator=gen)
        times.append(time.perf_counter() - t0)
    assert r.completed == count
    tokens = r.prompt_tokens + count * 200
    return statistics.median(times), tokens // block_size


def main() -> int:
    print(f"{'requests':>9} {'block':>6} {'seconds':>8} {'blocks of tokens':>17} {'µs per block':>13}")
    worst = 0.0
    for bs in (16, 64):
        for count in (2_500, 5_000, 10_000):
            s, units = run(count, bs)
            if count == 10_000:
                worst = max(worst, s)
            print(f"{count:9,} {bs:6} {s:8.2f} {units:17,} {s / units * 1e6:13.2f}")
    verdict = "meets" if worst <= TARGET_S else "misses"
    print(f"\n10,000 requests, slowest block size: {worst:.2f} s ({verdict} the ≤ {TARGET_S:g} s target)")
    deadline = (
        Settings().heavy_deadline_seconds or ROUTE_DEADLINES["simulate"] * Settings().heavy_deadline_scale
    )
    print(f"\nAt the limits (the API stops a simulation after {deadline:g} s):")
    for name, seconds in at_the_limits():
        print(f"  {name:58} {seconds:6.2f} s")
    return 0


def at_the_limits() -> list[tuple[str, float]]:
    """One accepted workload just under each work limit: the slowest answers the API gives."""
    steps = MAX_SIMULATED_STEPS - 100  # one token of prefill a step
    cases = [
        (
            f"{steps:,} steps: a prompt at max_num_batched_tokens = 1",
            SimConfig(num_blocks=steps // 16 + 10, block_size=16, max_num_seqs=1, max_num_batched_tokens=1),
            [SimRequest(prompt_tokens=steps - 20, output_tokens=10)],
            None,
        ),
        (
            f"{MAX_BLOCK_EVENTS:,} blocks: 2,100 requests of 1,400 tokens in blocks of 1",
            SimConfig(max_num_seqs=256, max_num_batched_tokens=8192, num_blocks=200_000, block_size=1),
            None,
            Generator(
                count=2100, arrival_rate=0.1, prompt=Fixed(value=1000), output=Fixed(value=400), seed=1
            ),
        ),
    ]
    out = []
    for name, cfg, requests, generator in cases:
        t0 = time.perf_counter()
        simulate(cfg, requests, generator)
        out.append((name, time.perf_counter() - t0))
    return out


if __name__ == "__main__":
    sys.exit(main())
