"""/metrics with a fleet of deployments (KVPLAN_DEPLOYMENTS), and whether planning them costs the
budget route anything. Two servers of this tree, side by side on loopback (one worker each):
  - with 100 deployments: /metrics scraped one request at a time (as Prometheus scrapes), p50/p99
    over `--scrapes` requests, and its size; then with 1,000 deployments (the file's bound);
  - with and without the deployments: POST /v1/budget (the seed's group A) against the bare
    handler (/bench/constant) on the same server, wrk, interleaved rounds: the two ratios.
Results: benchmarks/results/deployments.json. Run: make bench (or python benchmarks/deployments_bench.py).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent))
from http_bench import RESULTS, A, ensure_wrk, lua, median_row, wrk_run

TARGET_P50_MS = 5.0


def fleet_file(n: int) -> str:
    """`n` deployments that plan: the presets on the GPUs that hold them, at growing TP."""
    from kvplan.presets import load_registry
    from kvplan.services.deployments import read

    reg = load_registry(extra_dir="")
    tables = []
    for gpu in ("h100-sxm-80gb", "h200-141gb", "a100-80gb", "b200-180gb", "mi300x-192gb", "l40s-48gb"):
        for model in sorted(reg.models):
            for tp in (1, 2, 4, 8):
                tables.append(
                    f'[[deployment]]\nnamespace = "bench"\nname = "d{len(tables)}"\nmodel = "{model}"\n'
                    f'gpu = "{gpu}"\ntensor_parallel_size = {tp}\ncontext_tokens = 8192\nmax_replicas = 8\n'
                )
    good = read(reg, "\n".join(tables).encode())
    kept = [t for t in tables if ("bench", t.split('"')[3]) in good.plans]
    # The same plans again in other namespaces, up to n.
    spread = [t.replace('"bench"', f'"bench-{i}"') for i in range(n // len(kept) + 1) for t in kept][:n]
    text = "\n".join(spread)
    assert len(read(reg, text.encode()).plans) == n
    return text


def start(env: dict[str, str]) -> tuple[object, str]:
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from tests.live import start_server

    server = start_server(env={"KVPLAN_BENCH_ROUTES": "1", **env})
    return server, server.url


def scrapes(url: str, n: int) -> dict[str, float]:
    """Sequential scrapes on one keep-alive connection: latency percentiles and the size."""
    times = []
    with httpx.Client() as c:
        for _ in range(20):
            c.get(f"{url}/metrics")
        for _ in range(n):
            t0 = time.perf_counter()
            r = c.get(f"{url}/metrics")
            times.append((time.perf_counter() - t0) * 1000)
            assert r.status_code == 200
    times.sort()
    return {
        "p50_ms": statistics.median(times),
        "p99_ms": times[int(len(times) * 0.99) - 1],
        "bytes": len(r.content),
        "series": sum(1 for line in r.text.splitlines() if line.startswith("kvplan_deployment")),
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--scrapes", type=int, default=500)
    ap.add_argument("--seconds", type=int, default=3)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--connections", type=int, default=32)
    args = ap.parse_args()
    wrk = ensure_wrk()
    out: dict[str, object] = {}
    with tempfile.TemporaryDirectory() as d:
        files = {}
        for n in (100, 1000):
            files[n] = Path(d) / f"fleet-{n}.toml"
            files[n].write_text(fleet_file(n))
        for n in (100, 1000):
            server, url = start({"KVPLAN_DEPLOYMENTS": str(files[n])})
            try:
                out[f"metrics_{n}_deployments"] = scrapes(url, args.scrapes)
            finally:
                server.stop()  # type: ignore[attr-defined]
        # Budget against the bare handler, with and without the 100 deployments, rounds interleaved.
        with_fleet, url_with = start({"KVPLAN_DEPLOYMENTS": str(files[100])})
        without, url_without = start({})
        runs: dict[str, list[dict[str, float]]] = {}
        try:
            for _ in range(args.rounds):
                for name, url in (("with", url_with), ("without", url_without)):
                    for what, target, script in (
                        ("bare", f"{url}/bench/constant", lua("GET")),
                        ("budget", f"{url}/v1/budget", lua("POST", A)),
                    ):
                        row = wrk_run(wrk, target, script, args.seconds, args.connections)
                        runs.setdefault(f"{what}_{name}", []).append(row)
        finally:
            with_fleet.stop()  # type: ignore[attr-defined]
            without.stop()  # type: ignore[attr-defined]
        rows = {k: median_row(v) for k, v in runs.items()}
        out["rows"] = rows
        for name, key in (("with", "budget_ratio_with_deployments"), ("without", "budget_ratio_without")):
            out[key] = rows[f"budget_{name}"]["req_per_s"] / rows[f"bare_{name}"]["req_per_s"]
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "deployments.json").write_text(json.dumps(out, indent=2) + "\n")
    for n in (100, 1000):
        m = out[f"metrics_{n}_deployments"]
        assert isinstance(m, dict)
        ok = "ok" if m["p50_ms"] < TARGET_P50_MS or n != 100 else "MISSED"
        print(
            f"/metrics, {n:5} deployments: p50 {m['p50_ms']:.2f} ms, p99 {m['p99_ms']:.2f} ms, "
            f"{m['bytes'] / 1024:.0f} KiB, {m['series']:,} deployment series"
            + (f"  (target p50 < {TARGET_P50_MS} ms: {ok})" if n == 100 else "")
        )
    print(
        f"budget ÷ bare handler: {out['budget_ratio_with_deployments']:.3f} with 100 deployments, "
        f"{out['budget_ratio_without']:.3f} without (medians of {args.rounds} interleaved rounds)"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
