"""Block-pool simulation cost: 10,000 requests averaging 1,000 prompt and 200 output tokens
(target ≤ 2 s), and the cost at three sizes, which should grow linearly with total tokens /
block size (the event-driven loop's work: block boundaries, not tokens)."""

from __future__ import annotations

import statistics
import sys
import time

from kvplan.core.simulate import Generator, Length, SimConfig, simulate

TARGET_S = 2.0


def run(count: int, block_size: int, repeats: int = 3) -> tuple[float, int]:
    # A pool that runs about 40 requests at once: busy, with some preemption, like a loaded server.
    cfg = SimConfig(
        num_blocks=40 * 1300 // block_size,
        block_size=block_size,
        max_num_seqs=256,
        max_num_batched_tokens=8192,
    )
    gen = Generator(
        count=count,
        arrival_rate=0.2,
        prompt=Length(kind="lognormal", mean=1000, sigma=0.5),
        output=Length(kind="lognormal", mean=200, sigma=0.5),
        system_prompt_share=0.3,
        system_prompt_tokens=512,
        seed=11,
    )
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
    return 0


if __name__ == "__main__":
    sys.exit(main())
