"""This tree's server against another revision's, side by side, loopback only, bounded in time.

"Slower than before?" cannot be read off two `http_bench.py` runs: on these shared machines the
bare handler alone moves by a third between runs. Here both servers run at once (one worker each,
the same venv, the other revision checked out in a temporary git worktree) and wrk loads one at a
time, alternating between them endpoint by endpoint and round by round (the order flips each
round), so the two are measured side by side under the same drift:

  - the bare handler (/bench/constant), GET and POST /v1/budget (the seed's group A);
  - POST /v1/budget/batch of 1000 repeated scenarios, and of 1000 distinct ones in rotation
    (20 bodies: 20,000 scenarios, beyond every cache).

For each, the median over rounds of this tree's req/s over the other's (each round's pair taken
within seconds of each other), and the spread of those ratios. Results go to
benchmarks/results/compare-<rev>.json. Run: make bench-compare AGAINST=<rev> (default e8b5a9e, the
commit before issue 10).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

from http_bench import BATCH, RESULTS, ROOT, A, ensure_wrk, free_port, lua, lua_rotating, wrk_run


def serve(tree: Path, port: int, **extra_env: str) -> subprocess.Popen[bytes]:
    env = {**os.environ, "KVPLAN_BENCH_ROUTES": "1", "PYTHONPATH": str(tree / "service"), **extra_env}
    cmd = [sys.executable, "-m", "kvplan", "serve", "--host", "127.0.0.1", "--port", str(port)]
    cmd += ["--workers", "1"]
    return subprocess.Popen(cmd, cwd=tree, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def wait_ready(url: str) -> None:
    for _ in range(150):
        try:
            if httpx.get(f"{url}/readyz", timeout=1).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.2)
    raise SystemExit(f"{url} did not become ready")


def endpoints() -> dict[str, tuple[str, str, int]]:
    query = "&".join(f"{k}={v}" for k, v in A.items())
    repeated = {"scenarios": [{**A, "context_tokens": 1024 + i} for i in range(BATCH)]}
    distinct = [{"scenarios": [{**A, "context_tokens": 2048 + k * BATCH + i} for i in range(BATCH)]}
                for k in range(20)]  # fmt: skip
    return {
        "bare_constant": ("/bench/constant", lua("GET"), 32),
        "budget_get": (f"/v1/budget?{query}", lua("GET"), 32),
        "budget_post": ("/v1/budget", lua("POST", A), 32),
        "batch_repeated": ("/v1/budget/batch", lua("POST", repeated), 4),
        "batch_distinct": ("/v1/budget/batch", lua_rotating("/v1/budget/batch", distinct), 4),
    }


def stop(procs: list[subprocess.Popen[bytes]]) -> None:
    for p in procs:
        p.terminate()
    for p in procs:
        try:
            p.wait(timeout=30)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()


def _terminated(_signum: int, _frame: object) -> None:
    raise SystemExit(143)  # make or CI stopping the run: still stop the servers, drop the worktree


def compare(against: str, rounds: int, seconds: int) -> dict[str, object]:
    wrk = ensure_wrk()
    signal.signal(signal.SIGTERM, _terminated)
    scratch = Path(tempfile.mkdtemp(prefix="kvplan-compare-"))
    other = scratch / "tree"
    procs: list[subprocess.Popen[bytes]] = []
    runs: dict[tuple[str, str], list[float]] = {}
    try:
        subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "-f", "--detach", str(other), against],
                       check=True, capture_output=True)  # fmt: skip
        trees = {"this": ROOT, against: other}
        urls = {name: f"http://127.0.0.1:{free_port()}" for name in trees}
        for name, tree in trees.items():
            procs.append(serve(tree, int(urls[name].rsplit(":", 1)[1])))
        for url in urls.values():
            wait_ready(url)
            wrk_run(wrk, f"{url}/bench/constant", lua("GET"), 2, 32)  # warm-up
        order = list(trees)
        for r in range(rounds):
            for endpoint, (path, script, connections) in endpoints().items():
                for name in order if r % 2 == 0 else order[::-1]:
                    out = wrk_run(wrk, urls[name] + path, script, seconds, connections)
                    runs.setdefault((name, endpoint), []).append(out["req_per_s"])
    finally:
        stop(procs)
        remove = ["git", "-C", str(ROOT), "worktree", "remove", "--force", str(other)]
        subprocess.run(remove, capture_output=True)
        shutil.rmtree(scratch, ignore_errors=True)
        subprocess.run(["git", "-C", str(ROOT), "worktree", "prune"], capture_output=True)
    rows = {}
    for endpoint in endpoints():
        mine, theirs = runs[("this", endpoint)], runs[(against, endpoint)]
        ratios = [a / b for a, b in zip(mine, theirs, strict=True)]
        rows[endpoint] = {
            "this_req_per_s": statistics.median(mine),
            "other_req_per_s": statistics.median(theirs),
            "ratio_median": statistics.median(ratios),
            "ratios": [round(x, 3) for x in ratios],
        }
    return {"against": against, "rounds": rounds, "seconds": seconds, "rows": rows}


def report(s: dict[str, object]) -> None:
    rows = s["rows"]
    assert isinstance(rows, dict)
    print(f"\n== this tree against {s['against']} ({s['rounds']} alternating rounds, {s['seconds']} s each)")
    print(f"{'endpoint':16} {'this req/s':>11} {'other req/s':>12} {'ratio':>6}  ratio each round")
    for name, r in rows.items():
        each = " ".join(f"{x:.2f}" for x in r["ratios"])
        mine, theirs, ratio = r["this_req_per_s"], r["other_req_per_s"], r["ratio_median"]
        print(f"{name:16} {mine:11.0f} {theirs:12.0f} {ratio:6.2f}  {each}")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--against", default="e8b5a9e", help="a git revision (default: before issue 10)")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--seconds", type=int, default=3)
    args = ap.parse_args()
    s = compare(args.against, args.rounds, args.seconds)
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / f"compare-{args.against}.json").write_text(json.dumps(s, indent=2) + "\n")
    report(s)
    return 0


if __name__ == "__main__":
    sys.exit(main())
