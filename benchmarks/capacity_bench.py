"""Capacity under latency targets through the HTTP API (issue #29): a 20-point rate search for one
replica (target under 10 s) and a fleet sized for a request rate on 5 GPU types × every layout
(target under 30 s), each against one plain simulation of the same workload in the same server
run (the ratio is the number of simulations the answer needed, and what else it costs). Medians
of three."""

from __future__ import annotations

import statistics
import sys
import time
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the root, for tests/

from benchmarks.http_bench import free_port, start

SHAPE = {
    "count": 1000,
    "prompt": {"kind": "lognormal", "mean": 1000, "sigma": 0.6},
    "output": {"kind": "lognormal", "mean": 200, "sigma": 0.6},
    "system_prompt_share": 0.3,
    "system_prompt_tokens": 1024,
}
SLO = {"ttft_p90_ms": 500, "tpot_p99_ms": 40}
REPLICA = {"model": "llama-3.1-8b", "gpu": "h100-sxm-80gb"}
FLEET = {
    "model": "llama-3.1-70b",
    "quantization": "fp8",
    "workload": {"context_tokens": 4096},
    "fleet": [
        {"gpu": "h100-sxm-80gb", "count": 64, "cost_per_hour": 2.5},
        {"gpu": "h200-141gb", "count": 32, "cost_per_hour": 3.5},
        {"gpu": "b200-180gb", "count": 16, "cost_per_hour": 6.0},
        {"gpu": "a100-80gb", "count": 64, "cost_per_hour": 1.2},
        {"gpu": "l40s-48gb", "count": 64, "cost_per_hour": 0.9},
    ],
    "target_rate": 40,
    "slo": {"ttft_p90_ms": 1000, "tpot_p99_ms": 60},
    "traffic": {**SHAPE, "count": 300},
}


def timed(port: int, path: str, body: dict[str, object]) -> tuple[float, dict[str, object]]:
    t0 = time.perf_counter()
    r = httpx.post(f"http://127.0.0.1:{port}{path}", json=body, timeout=120)
    seconds = time.perf_counter() - t0
    if r.status_code != 200:
        raise SystemExit(f"{path}: {r.status_code} {r.text[:300]}")
    return seconds, r.json()


def main() -> int:
    port = free_port()
    proc = start("uvicorn", port)
    try:
        one_sim = {**REPLICA, "workload": {"generator": {**SHAPE, "arrival_rate_per_s": 10.0}}}
        sim = statistics.median(timed(port, "/v1/simulate", one_sim)[0] for _ in range(3))
        # A tolerance tight enough that the search takes its 20 points.
        search = {"tolerance": 0.001, "max_points": 20}
        search_body = {**REPLICA, "workload": SHAPE, "slo": SLO, "search": search}
        runs = [timed(port, "/v1/capacity", search_body) for _ in range(3)]
        searched = statistics.median(s for s, _ in runs)
        answer = runs[0][1]
        fleet_runs = [timed(port, "/v1/fleet", FLEET) for _ in range(3)]
        fleet = statistics.median(s for s, _ in fleet_runs)
        traffic = fleet_runs[0][1]["traffic"]
        layouts = len(traffic["layouts"])  # type: ignore[index]
    finally:
        proc.terminate()
        proc.wait()
    print(f"one simulation of {SHAPE['count']:,} requests (Llama-3.1-8B, H100): {sim:.2f} s")
    print(
        f"rate search, one replica: {searched:.2f} s for {answer['points']} simulations "
        f"({searched / sim:.1f}× one simulation; target ≤ 10 s: {'meets' if searched <= 10 else 'misses'}); "
        f"{answer['max_rate_per_s']:.3g} requests/s, binding {answer['binding']['constraint']}"  # type: ignore[index]
    )
    print(
        f"fleet by traffic, 5 GPU types × every layout ({layouts} searched): {fleet:.2f} s "
        f"(target ≤ 30 s: {'meets' if fleet <= 30 else 'misses'})"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
