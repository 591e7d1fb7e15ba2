"""Load test of the real server with wrk (Debian's package), loopback only, bounded in time.

For each server (uvicorn with uvloop + httptools, and optionally granian) in one run:
  - a bare handler returning a constant on the same server, with the same middleware and logs
    (/bench/constant, enabled by KVPLAN_BENCH_ROUTES=1) — the baseline;
  - GET and POST /v1/budget (the seed's group A), and POST /v1/budget/batch (1000 scenarios);
  - req/s, p50 and p99 latency, the ratio to the baseline, and scenarios/s for the batch;
  - resident memory after 10,000 and after 100,000 requests of varied budget questions.
Results go to benchmarks/results/http-<server>.json. Run: make bench (or python benchmarks/http_bench.py).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results"
GIB = 1024**3
A = {"model": "llama-3-70b", "gpu": "pool-160gib", "weights_bytes": 130 * GIB, "context_tokens": 8192}
BATCH = 1000
TARGETS = {
    "budget_get_ratio": 0.75,
    "budget_post_ratio": 0.75,
    "batch_scenarios_per_s": 100_000,
    "rss_growth": 0.10,
}


def ensure_wrk() -> str:
    wrk = shutil.which("wrk")
    if wrk:
        return wrk
    if os.geteuid() == 0:
        subprocess.run(["apt-get", "update", "-qq"], check=False, capture_output=True)
        subprocess.run(["apt-get", "install", "-y", "-qq", "wrk"], check=True, capture_output=True)
        wrk = shutil.which("wrk")
    if not wrk:
        raise SystemExit("wrk is needed: apt-get install wrk")
    return wrk


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def start(server: str, port: int) -> subprocess.Popen[bytes]:
    env = {**os.environ, "KVPLAN_BENCH_ROUTES": "1"}
    # Both servers listen alike: loopback, this port, one worker.
    listen = ["--host", "127.0.0.1", "--port", str(port), "--workers", "1"]
    if server == "uvicorn":
        cmd = [sys.executable, "-m", "kvplan", "serve", *listen]
    else:
        cmd = [
            sys.executable,
            "-m",
            "granian",
            "--interface",
            "asgi",
            "--factory",
            *listen,
            "--loop",
            "uvloop",
            "--no-ws",
            "kvplan.api.app:create_app",
        ]
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            if httpx.get(f"http://127.0.0.1:{port}/readyz", timeout=1).status_code == 200:
                return proc
        except httpx.HTTPError:
            time.sleep(0.1)
    proc.kill()
    raise SystemExit(f"{server} did not start")


def rss_bytes(pid: int) -> int:
    """Resident memory of a process and its children (granian runs workers as children)."""
    total = 0
    pids = [pid]
    while pids:
        p = pids.pop()
        try:
            status = Path(f"/proc/{p}/status").read_text()
            total += int(re.search(r"VmRSS:\s+(\d+) kB", status).group(1)) * 1024  # type: ignore[union-attr]
            for task in Path(f"/proc/{p}/task").iterdir():
                pids += [int(c) for c in (task / "children").read_text().split()]
        except (FileNotFoundError, ProcessLookupError, AttributeError):
            continue
    return total


def lua_rotating(path: str, bodies: list[dict]) -> str:
    """POST a different body each request, cycling through `bodies`."""
    items = ",\n".join(json.dumps(json.dumps(b)) for b in bodies)
    return (
        f"bodies = {{\n{items}\n}}\ncounter = 0\n"
        "request = function()\n  counter = counter + 1\n"
        "  local b = bodies[(counter % #bodies) + 1]\n"
        f'  return wrk.format("POST", "{path}", {{["Content-Type"] = "application/json"}}, b)\nend\n'
    )


def lua(method: str, body: dict | None = None, varied_get: bool = False) -> str:
    if varied_get:
        return (
            "request = function()\n"
            "  local t = math.random(1, 131072)\n"
            '  return wrk.format("GET", "/v1/budget?model=llama-3-70b&gpu=pool-160gib'
            f'&weights_bytes={130 * GIB}&context_tokens=" .. t)\nend\n'
        )
    s = f'wrk.method = "{method}"\n'
    if body is not None:
        s += 'wrk.headers["Content-Type"] = "application/json"\n'
        s += "wrk.body = " + json.dumps(json.dumps(body)) + "\n"
    return s


def wrk_run(
    wrk: str, url: str, script: str, seconds: int, connections: int, threads: int = 1
) -> dict[str, float]:
    with tempfile.NamedTemporaryFile("w", suffix=".lua", delete=False) as f:
        f.write(script)
    try:
        out = subprocess.run(
            [wrk, f"-t{threads}", f"-c{connections}", f"-d{seconds}s", "--latency", "-s", f.name, url],
            capture_output=True,
            text=True,
            check=True,
        ).stdout
    finally:
        os.unlink(f.name)

    def lat(pct: str) -> float:
        m = re.search(rf"^\s+{pct}%\s+([\d.]+)(us|ms|s)", out, re.M)
        if not m:
            return float("nan")
        return float(m.group(1)) * {"us": 1e-3, "ms": 1.0, "s": 1e3}[m.group(2)]

    errors = re.search(r"Non-2xx or 3xx responses: (\d+)", out)
    socket_err = re.search(r"Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)", out)
    return {
        "requests": int(re.search(r"(\d+) requests in", out).group(1)),  # type: ignore[union-attr]
        "req_per_s": float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1)),  # type: ignore[union-attr]
        "p50_ms": lat("50"),
        "p99_ms": lat("99"),
        "non_2xx": int(errors.group(1)) if errors else 0,
        "socket_errors": sum(int(x) for x in socket_err.groups()) if socket_err else 0,
    }


def median_row(rs: list[dict[str, float]]) -> dict[str, float]:
    out = {k: statistics.median(float(r[k]) for r in rs) for k in ("req_per_s", "p50_ms", "p99_ms")}
    out["non_2xx"] = sum(int(r["non_2xx"]) for r in rs)
    out["requests"] = sum(int(r["requests"]) for r in rs)
    out["rounds_req_per_s"] = [r["req_per_s"] for r in rs]  # type: ignore[assignment]
    return out


def bench(server: str, wrk: str, seconds: int, connections: int, rounds: int) -> dict[str, object]:
    port = free_port()
    proc = start(server, port)
    url = f"http://127.0.0.1:{port}"
    query = "&".join(f"{k}={v}" for k, v in A.items())
    repeated = {"scenarios": [{**A, "context_tokens": 1024 + i} for i in range(BATCH)]}
    distinct = [
        {"scenarios": [{**A, "context_tokens": 2048 + k * BATCH + i} for i in range(BATCH)]}
        for k in range(20)
    ]
    try:
        wrk_run(wrk, f"{url}/bench/constant", lua("GET"), 2, connections)  # warm-up
        # Baseline, GET and POST interleaved over several rounds: the machine is shared and
        # drifts, so each ratio compares medians of measurements taken side by side.
        single = {
            "bare_constant": (f"{url}/bench/constant", lua("GET")),
            "budget_get": (f"{url}/v1/budget?{query}", lua("GET")),
            "budget_post": (f"{url}/v1/budget", lua("POST", A)),
        }
        runs: dict[str, list[dict[str, float]]] = {k: [] for k in single}
        for _ in range(rounds):
            for name, (target, script) in single.items():
                runs[name].append(wrk_run(wrk, target, script, seconds, connections))
        rows = {name: median_row(rs) for name, rs in runs.items()}
        # The same 1000 scenarios every call (an autoscaler's poll) ...
        rows["batch_repeated"] = wrk_run(wrk, f"{url}/v1/budget/batch", lua("POST", repeated), seconds, 4)
        # ... and 20 bodies of distinct scenarios in turn: 20,000 scenarios, beyond every cache.
        rows["batch_distinct"] = wrk_run(
            wrk, f"{url}/v1/budget/batch", lua_rotating("/v1/budget/batch", distinct), seconds, 4
        )
        # Memory: varied questions (the memo and caches fill and must stay bounded).
        done = 0
        rss_10k = rss_100k = 0
        while done < 100_000:
            r = wrk_run(wrk, url, lua("GET", varied_get=True), 2, connections)
            done += int(r["requests"])
            if not rss_10k and done >= 10_000:
                rss_10k = rss_bytes(proc.pid)
        rss_100k = rss_bytes(proc.pid)
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=30)
    base = rows["bare_constant"]["req_per_s"]
    summary = {
        "server": server,
        "seconds": seconds,
        "rounds": rounds,
        "connections": connections,
        "rows": rows,
        "budget_get_ratio": rows["budget_get"]["req_per_s"] / base,
        "budget_post_ratio": rows["budget_post"]["req_per_s"] / base,
        "batch_scenarios_per_s": rows["batch_repeated"]["req_per_s"] * BATCH,
        "batch_distinct_scenarios_per_s": rows["batch_distinct"]["req_per_s"] * BATCH,
        "rss_after_10k": rss_10k,
        "rss_after_100k": rss_100k,
        "requests_for_memory": done,
        "rss_growth": rss_100k / rss_10k - 1,
    }
    return summary


def report(s: dict[str, object]) -> None:
    rows = s["rows"]
    assert isinstance(rows, dict)
    print(
        f"\n== {s['server']} (1 worker, wrk -t1 -c{s['connections']}, {s['seconds']} s each, loopback; "
        f"first three rows: medians of {s['rounds']} interleaved rounds)"
    )
    print(f"{'endpoint':16} {'req/s':>10} {'p50 ms':>8} {'p99 ms':>8} {'non-2xx':>8}")
    for name, r in rows.items():
        print(f"{name:16} {r['req_per_s']:10.0f} {r['p50_ms']:8.2f} {r['p99_ms']:8.2f} {r['non_2xx']:8d}")
    for key, target in TARGETS.items():
        v = float(s[key])  # type: ignore[arg-type]
        ok = v <= target if key == "rss_growth" else v >= target
        shown = f"{v:,.0f}" if key.endswith("per_s") else f"{v:.3f}"
        print(
            f"  {key:24} {shown:>12}  target {'≤' if key == 'rss_growth' else '≥'} {target:,}  "
            f"{'ok' if ok else 'MISSED'}"
        )
    print(
        f"  rss after 10k / 100k    {int(s['rss_after_10k']) / 2**20:.1f} MiB / "  # type: ignore[call-overload]
        f"{int(s['rss_after_100k']) / 2**20:.1f} MiB"
    )  # type: ignore[call-overload]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--server", choices=["uvicorn", "granian", "both"], default="uvicorn")
    ap.add_argument("--seconds", type=int, default=5)
    ap.add_argument("--connections", type=int, default=32)
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    wrk = ensure_wrk()
    RESULTS.mkdir(parents=True, exist_ok=True)
    servers = ["uvicorn", "granian"] if args.server == "both" else [args.server]
    for server in servers:
        s = bench(server, wrk, args.seconds, args.connections, args.rounds)
        (RESULTS / f"http-{server}.json").write_text(json.dumps(s, indent=2) + "\n")
        report(s)
    return 0


if __name__ == "__main__":
    sys.exit(main())
