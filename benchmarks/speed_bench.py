"""The simulator against itself before its speed-up (issue #29), side by side in one run.

Today's simulator is the revision BASELINE (the simulator as issue #29 found it: event-driven,
visiting every step in which a request crosses a block boundary), checked out in a temporary git
worktree; this tree's is the speed-up, run twice: as shipped (its hot modules compiled by mypyc,
kvplan/compiled.py; `make bench` builds them) and on its Python source (KVPLAN_COMPILED=0). Each
workload runs through the same service function (services.answers.simulate_answer: what POST
/v1/simulate runs) in a fresh process per variant, the order rotating round by round, so all see
the same machine drift. Medians of ROUNDS; the ratio is today's seconds over this tree's.
Then the day-long mix at 1,000,000 requests through the HTTP API of this tree (a `kvplan serve`
worker on loopback with the default settings, compiled), which today's simulator refuses (its
MAX_REQUESTS is 100,000).

Run: python benchmarks/speed_bench.py (about 8 minutes); results in benchmarks/results/speed.json.
"""

from __future__ import annotations

import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "benchmarks")]  # the root, for benchmarks/; compare_http's imports

from benchmarks.capacity_bench import FLEET, REPLICA, SHAPE, SLO  # noqa: E402
from benchmarks.compare_http import serve, wait_ready  # noqa: E402
from benchmarks.http_bench import free_port, start  # noqa: E402

BASELINE = "a3e696b"  # the commit before the speed-up: the simulator as issue #29 found it
ROUNDS = 3
RESULTS = ROOT / "benchmarks" / "results" / "speed.json"
POOL = {"model": "llama-3.1-8b", "gpu": "h100-sxm-80gb"}
# A day of a busy replica: Azure's 2023 LLM inference trace (conversation) has prompts of 1,155
# and outputs of 211 tokens on average; lognormal around those, Poisson at 1M a day (11.6 a second).
DAY = {
    "arrival_rate_per_s": 1_000_000 / 86_400,
    "prompt": {"kind": "lognormal", "mean": 1155, "sigma": 0.8},
    "output": {"kind": "lognormal", "mean": 211, "sigma": 0.8},
    "seed": 7,
}


def decode_heavy(**arrivals: float) -> dict[str, object]:
    """Long outputs, few prompts (reasoning traffic): most steps only decode. 2,000 requests."""
    lengths = {
        "prompt": {"kind": "lognormal", "mean": 1000, "sigma": 0.5},
        "output": {"kind": "lognormal", "mean": 4000, "sigma": 0.5},
    }
    return {
        **POOL,
        "max_num_seqs": 64,
        "workload": {"generator": {"count": 2000, **arrivals, **lengths, "seed": 1}},
    }


WORKLOADS = {
    "decode-heavy: 2,000 requests, outputs of ~4,000 tokens, 64 at once": decode_heavy(concurrency=64),
    "decode-heavy, untimed: the same in steps (arrivals a step apart)": decode_heavy(arrival_rate=0.02),
    "day-long mix: its first 50,000 requests": {
        **POOL,
        "workload": {"generator": {**DAY, "count": 50_000}},
    },
}
RUNNER = """
import json, sys, time
import msgspec
from kvplan.presets.registry import load_registry
from kvplan.schemas import SimulateRequest
from kvplan.services.answers import simulate_answer
body = json.loads(sys.argv[1])
reg = load_registry()
req = msgspec.convert(body, SimulateRequest)
t0 = time.perf_counter()
answer, _ = simulate_answer(reg, req)
seconds = time.perf_counter() - t0
compiled = not sys.modules["kvplan.core.sim.scheduler"].__file__.endswith(".py")
finish = hash(answer.finish_order)
print(json.dumps({"seconds": seconds, "steps": answer.steps, "finish": finish, "compiled": compiled}))
"""
# (name, tree, environment): the tree None is BASELINE's worktree; the rest are this tree.
VARIANTS = (("today", None, {}), ("python", ROOT, {"KVPLAN_COMPILED": "0"}), ("now", ROOT, {}))


def run(tree: Path, body: dict[str, object], **extra_env: str) -> dict[str, float]:
    env = {**os.environ, "PYTHONPATH": str(tree / "service"), "PYTHONHASHSEED": "0", **extra_env}
    out = subprocess.run(
        [sys.executable, "-c", RUNNER, json.dumps(body)], env=env, cwd=tree, capture_output=True, text=True
    )
    if out.returncode:
        raise SystemExit(f"{tree}: {out.stderr[-600:]}")
    return json.loads(out.stdout)  # type: ignore[no-any-return]


def rotated(i: int) -> tuple[tuple[str, Path | None, dict[str, str]], ...]:
    return VARIANTS[i % 3 :] + VARIANTS[: i % 3]


def side_by_side(baseline: Path) -> dict[str, dict[str, float]]:
    results = {}
    for name, body in WORKLOADS.items():
        got: dict[str, list[dict[str, float]]] = {v: [] for v, _, _ in VARIANTS}
        for i in range(ROUNDS):
            for variant, tree, env in rotated(i):
                got[variant].append(run(tree or baseline, body, **env))
        if len({(r["steps"], r["finish"]) for rs in got.values() for r in rs}) != 1:
            raise SystemExit(f"{name}: the simulators scheduled differently")
        if not all(r["compiled"] for r in got["now"]) or any(r["compiled"] for r in got["python"]):
            raise SystemExit("this tree's compiled simulator is not built or not fresh: make compiled")
        t, p, o = (statistics.median(r["seconds"] for r in got[v]) for v in ("today", "python", "now"))
        steps = got["now"][0]["steps"]
        results[name] = {
            "today_s": t,
            "python_s": p,
            "now_s": o,
            "ratio": t / o,
            "python_ratio": t / p,
            "steps": steps,
        }
        print(
            f"{name:70} today {t:6.2f} s   now {o:6.2f} s   {t / o:5.1f}×   "
            f"(Python source {p:6.2f} s, {t / p:4.1f}×; {steps:,} steps)"
        )
    return results


SEARCHES = {
    # A tolerance tight enough that the search takes its 20 points (target under 10 s).
    "20-point rate search, one replica (POST /v1/capacity)": (
        "/v1/capacity",
        {**REPLICA, "workload": SHAPE, "slo": SLO, "search": {"tolerance": 0.001, "max_points": 20}},
    ),
    "fleet by traffic, 5 GPU types × every layout (POST /v1/fleet)": ("/v1/fleet", FLEET),  # under 30 s
}


def searches_side_by_side(baseline: Path) -> dict[str, dict[str, float]]:
    """The searches through each variant's server, one worker each, the order rotating."""
    ports = {v: free_port() for v, _, _ in VARIANTS}
    procs = [serve(tree or baseline, ports[v], **env) for v, tree, env in VARIANTS]
    results = {}
    try:
        for port in ports.values():
            wait_ready(f"http://127.0.0.1:{port}")
        for name, (path, body) in SEARCHES.items():
            times: dict[str, list[float]] = {v: [] for v in ports}
            for i in range(ROUNDS):
                for variant, _, _ in rotated(i):
                    t0 = time.perf_counter()
                    r = httpx.post(f"http://127.0.0.1:{ports[variant]}{path}", json=body, timeout=300)
                    times[variant].append(time.perf_counter() - t0)
                    if r.status_code != 200:
                        raise SystemExit(f"{name} ({variant}): {r.status_code} {r.text[:300]}")
            t, p, o = (statistics.median(times[v]) for v in ("today", "python", "now"))
            results[name] = {"today_s": t, "python_s": p, "now_s": o, "ratio": t / o, "python_ratio": t / p}
            print(f"{name:70} today {t:6.2f} s   now {o:6.2f} s   {t / o:5.1f}×   (Python source {p:6.2f} s)")
    finally:
        for p in procs:
            p.send_signal(signal.SIGINT)
            p.wait(timeout=30)
    return results


def day_over_http(count: int = 1_000_000) -> dict[str, float]:
    port = free_port()
    proc = start("uvicorn", port)
    try:
        body = {**POOL, "workload": {"generator": {**DAY, "count": count}}}
        t0 = time.perf_counter()
        r = httpx.post(f"http://127.0.0.1:{port}/v1/simulate", json=body, timeout=600)
        seconds = time.perf_counter() - t0
        t1 = time.perf_counter()
        health = httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=10)
        probe = time.perf_counter() - t1
    finally:
        proc.terminate()
        proc.wait()
    if r.status_code != 200:
        raise SystemExit(f"day over HTTP: {r.status_code} {r.text[:400]}")
    a = r.json()
    print(
        f"day-long mix, {count:,} requests through POST /v1/simulate: {seconds:.1f} s "
        f"(target under 60 s: {'meets' if seconds < 60 else 'misses'}); {a['steps']:,} steps, "
        f"{a['throughput']['duration_s'] / 3600:.1f} h simulated, "
        f"TTFT p99 {a['latency']['ttft_ms']['p99']:.0f} ms; "
        f"/healthz after it {health.status_code} in {probe * 1000:.0f} ms"
    )
    return {"seconds": seconds, "requests": count, "steps": a["steps"]}


def main() -> int:
    with tempfile.TemporaryDirectory() as tmp:
        baseline = Path(tmp) / "baseline"
        subprocess.run(
            ["git", "-C", str(ROOT), "worktree", "add", "-q", "--detach", str(baseline), BASELINE], check=True
        )
        try:
            print(f"today's simulator: {BASELINE}; this tree: {ROOT}; medians of {ROUNDS}, alternating")
            results = side_by_side(baseline)
            results |= searches_side_by_side(baseline)
        finally:
            subprocess.run(
                ["git", "-C", str(ROOT), "worktree", "remove", "--force", str(baseline)], check=False
            )
    day = day_over_http()
    RESULTS.parent.mkdir(exist_ok=True)
    RESULTS.write_text(
        json.dumps({"baseline": BASELINE, "side_by_side": results, "day_http": day}, indent=1) + "\n"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
