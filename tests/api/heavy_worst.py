"""The slowest inputs each heavy route's bounds admit (core/limits.py), as requests: the deadline
tests (test_heavy_deadlines.py) drive each route past its deadline with them, and
`python -m tests.api.heavy_worst` measures how long each takes and the longest gap between two
of its should_stop() checks (the figures beside api/offload.py ROUTE_DEADLINES)."""

from __future__ import annotations

import copy
import functools
import itertools
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tests.oracle.cases import budget_request, oracle_case
from tests.oracle.generate import load_config

GPUS = ["a100-40gb", "a100-80gb", "h100-sxm-80gb", "h100-pcie-80gb", "h200-141gb", "h20-96gb", "b200-180gb",
        "gb200-186gb", "l40s-48gb", "l4-24gb", "rtx-4090-24gb", "mi300x-192gb", "mi325x-256gb", "pool-80gib",
        "pool-141gib", "pool-160gib"]  # fmt: skip
# A 4,096-layer model (MAX_LAYERS): the deepest config the readers take.
DEEP = {"model_type": "llama", "num_hidden_layers": 4096, "num_attention_heads": 8, "num_key_value_heads": 8,
        "hidden_size": 1024, "max_position_embeddings": 1 << 20}  # fmt: skip


def dsv41_every_layer_a_source() -> dict[str, Any]:
    """DeepSeek-V4.1 at 4,096 layers, each a kv and index source: the slowest config to read and
    plan (tests/api/test_new_families_hostile_input.py)."""
    cfg = copy.deepcopy(load_config(oracle_case("dsv41-shaped-64k-h100-block64")["config"]))
    text = cfg.get("text_config", cfg)
    assert isinstance(text, dict)
    text["num_hidden_layers"] = 4096
    text["compress_ratios"] = [2] * 4096
    text["kv_source_layer_ids"] = text["index_source_layer_ids"] = list(range(4096))
    return cfg


def deep_budget() -> dict[str, Any]:
    case = oracle_case("dsv41-shaped-64k-h100-block64")
    return budget_request({"hf_config": dsv41_every_layer_a_source()}, case) | {"gpu": "h100-sxm-80gb"}


def _lengths(n: int) -> list[dict[str, Any]]:
    return [{"context_tokens": 1024 * (j + 1), "share": 1} for j in range(n)]


# name → (endpoint, method, path, keyword arguments for the test client)
Case = tuple[str, str, str, dict[str, Any]]


# num_blocks, block_size, max_num_seqs, max_num_batched_tokens: a pool that never binds.
_WIDE = (1 << 20, 16, 65536, 1 << 20)


def _generated(count: int, rate: float, prompt: Any, output: Any, seed: int) -> dict[str, Any]:
    """A simulate workload from the generator, its keys in the order the cases were measured with."""
    return {
        "generator": {"count": count, "arrival_rate": rate, "prompt": prompt, "output": output, "seed": seed}
    }


def _simulate(pool: tuple[int, int, int, int], workload: dict[str, Any]) -> Case:
    """A /v1/simulate case on the pool (num_blocks, block_size, max_num_seqs, max_num_batched_tokens)."""
    blocks, block, seqs, tokens = pool
    body = {"num_blocks": blocks, "block_size": block, "max_num_seqs": seqs, "max_num_batched_tokens": tokens}
    return "simulate", "POST", "/v1/simulate", {"json": {**body, "workload": workload}}


def cases() -> dict[str, Case]:
    deep = deep_budget()
    return {
        # /v1/simulate: MAX_BLOCK_EVENTS, MAX_SIMULATED_STEPS, and MAX_REQUESTS generated.
        "simulate: 100M blocks (70,000 × 1,400 tokens, blocks of 1)": _simulate(
            (200_000, 1, 256, 8192), _generated(70_000, 0.1, {"value": 1000}, {"value": 400}, seed=1)
        ),
        "simulate: 20M steps (two prompts, 1 token a step)": _simulate(
            (1_300_000, 16, 1, 1),
            {"requests": [{"prompt_tokens": 9_999_000, "output_tokens": 10}] * 2},
        ),
        "simulate: 1,000,000 requests generated (MAX_REQUESTS)": _simulate(
            _WIDE,
            _generated(1_000_000, 1e6, {"kind": "lognormal", "mean": 40, "sigma": 1}, {"value": 1}, seed=3),
        ),
        "simulate: 100,000 requests arriving at once": _simulate(
            _WIDE, _generated(100_000, 1e6, {"value": 40}, {"value": 1}, seed=3)
        ),
        # /v1/budget/batch: MAX_BATCH_LAYER_PASSES with inline configs.
        "budget_batch: 146 inline 4,096-layer configs": (
            "budget_batch",
            "POST",
            "/v1/budget/batch",
            {
                "json": {
                    "scenarios": [
                        {
                            "model": {"hf_config": DEEP},
                            "gpu": "h100-sxm-80gb",
                            "weights_bytes": 1,
                            "context_tokens": 4096 - i,
                        }
                        for i in range(146)
                    ]
                }
            },
        ),
        "budget_batch: 1,000 inline 596-layer configs": (
            "budget_batch",
            "POST",
            "/v1/budget/batch",
            {
                "json": {
                    "scenarios": [
                        {
                            "model": {"hf_config": DEEP | {"num_hidden_layers": 596}},
                            "gpu": "h100-sxm-80gb",
                            "weights_bytes": 1,
                            "context_tokens": 4096 - i,
                        }
                        for i in range(1000)
                    ]
                }
            },
        ),
        # /v1/fleet: MAX_FLEET_BUDGETS and MAX_FLEET_LAYER_PASSES.
        "fleet: 16 types × 32 lengths, every layout, a target": (
            "fleet",
            "POST",
            "/v1/fleet",
            {
                "json": {
                    "model": "llama-3-70b",
                    "workload": {"mix": _lengths(32)},
                    "target_concurrency": 4294967295,
                    "fleet": [
                        {"gpu": g, "count": 1_000_000, "cost_per_hour": 1 + i / 3} for i, g in enumerate(GPUS)
                    ],
                }
            },
        ),
        "fleet: a 4,096-layer model × 6 types": (
            "fleet",
            "POST",
            "/v1/fleet",
            {
                "json": {
                    "model": {"hf_config": DEEP},
                    "weights_bytes": 1,
                    "workload": {"context_tokens": 4096},
                    "target_concurrency": 1000,
                    "fleet": [
                        {"gpu": g, "count": 64, "cost_per_hour": 1 + i} for i, g in enumerate(GPUS[:6])
                    ],
                }
            },
        ),
        # /v1/sweep: MAX_SWEEP_POINTS of the deepest model.
        "sweep: 200 points of a 4,096-layer model": (
            "sweep",
            "GET",
            "/v1/sweep",
            {
                "params": {
                    "model.geometry.num_layers": "4096",
                    "model.geometry.num_attention_heads": "8",
                    "model.geometry.num_kv_heads": "8",
                    "model.geometry.head_dim": "128",
                    "gpu": "h100-sxm-80gb",
                    "weights_bytes": "1",
                    "vary": "context_tokens",
                    "values": ",".join(str(1024 + i) for i in range(200)),
                }
            },
        ),
        "sweep: 200 points of DeepSeek-V3": (
            "sweep",
            "GET",
            "/v1/sweep",
            {
                "params": {
                    "model": "deepseek-v3",
                    "gpu": "h200-141gb",
                    "tensor_parallel_size": "8",
                    "vary": "context_tokens",
                    "values": ",".join(str(1024 + i) for i in range(200)),
                }
            },
        ),
        # /v1/reconcile: MAX_LOG_BYTES in MAX_LOG_LINES lines, and a real log repeated to MAX_LOG_BYTES.
        "reconcile: 8 MiB of 2M short lines": (
            "reconcile",
            "POST",
            "/v1/reconcile",
            {"json": {"log": "INFO a\n" * 1_190_000 + _log(), "overrides": {"model": "llama-3.1-70b"}}},
        ),
        "reconcile: a log and 1 MiB of /metrics (20,000 samples)": (
            "reconcile",
            "POST",
            "/v1/reconcile",
            {
                "json": {
                    "log": _log(),
                    "metrics": _metrics(),
                    "overrides": {"model": "llama-3.1-70b", "target_concurrency": 4294967295},
                }
            },
        ),
        "reconcile: a start-up log repeated to 8 MiB": ("reconcile", "POST", "/v1/reconcile", _long_log()),
        # Engine arguments that take MAX_ARGS_TRIES parses of MAX_ARGS_CHARS each (0.3 s a line), on
        # 1,000 lines: minutes of work between two per-line checks, before the check in each try.
        "reconcile: 1,000 lines of engine arguments, 64 parses each": (
            "reconcile",
            "POST",
            "/v1/reconcile",
            {"json": {"log": _args_log(), "overrides": {"model": "llama-3.1-70b"}}},
        ),
        # /v1/deployments/…/replicas: scrapes up to the route's body limit, each at MAX_METRICS_SAMPLES.
        "replicas: 15 scrapes of 1 MiB (300,000 samples)": (
            "replicas",
            "POST",
            "/v1/deployments/serving/llama-8b-h100/replicas",
            {"json": {"metrics": [_metrics()] * 15}},
        ),
        # /v1/plan: a command beside the deepest inline config (its reading, then the budget's).
        "plan: DeepSeek-V4.1 at 4,096 layers beside a command": (
            "plan",
            "POST",
            "/v1/plan",
            {"json": {**deep, "command": "vllm serve deepseek-ai/DeepSeek-V4.1 --max-model-len 64k"}},
        ),
        # One inline model, read and planned: the budget, per-token and resolve routes.
        "budget: DeepSeek-V4.1 at 4,096 layers, every layer a source": (
            "budget",
            "POST",
            "/v1/budget",
            {"json": deep},
        ),
        "per_token: DeepSeek-V4.1 at 4,096 layers, every layer a source": (
            "per_token",
            "POST",
            "/v1/per-token",
            {"json": {"model": deep["model"]}},
        ),
        "resolve: DeepSeek-V4.1 at 4,096 layers, every layer a source": (
            "resolve",
            "POST",
            "/v1/models/resolve",
            {"json": deep["model"]["hf_config"]},
        ),
        # /v1/capacity and /v1/fleet by traffic: searches at their work bounds (MAX_SEARCH_STEPS,
        # MAX_FLEET_SEARCH_STEPS), each simulation asking should_stop() as /v1/simulate does.
        "capacity: 40 simulations of 2,000 decode-heavy requests": (
            "capacity",
            "POST",
            "/v1/capacity",
            {
                "json": {
                    "model": "llama-3.1-8b",
                    "gpu": "h100-sxm-80gb",
                    # Long outputs: each simulation's run, not its generation, takes the time.
                    "workload": {**_SHAPE, "count": 2000, "output": {"kind": "fixed", "value": 2000}},
                    "slo": {"ttft_p90_ms": 500},
                    "search": {"max_points": 40, "tolerance": 0.001},
                }
            },
        ),
        "fleet_traffic: 5 GPU types × every layout": (
            "fleet_traffic",
            "POST",
            "/v1/fleet",
            {
                "json": {
                    "model": "llama-3.1-8b",
                    "workload": {"context_tokens": 4096},
                    "fleet": [
                        {"gpu": g, "count": 8}
                        for g in ("h100-sxm-80gb", "h200-141gb", "b200-180gb", "a100-80gb", "l40s-48gb")
                    ],
                    "target_rate": 50,
                    "slo": {"ttft_p90_ms": 500},
                    "traffic": {**_SHAPE, "count": 1000},
                }
            },
        ),
        "capacity_sweep: 32 combinations of settings": (
            "capacity_sweep",
            "POST",
            "/v1/capacity",
            {
                "json": {
                    "model": "llama-3.1-8b",
                    "gpu": "h100-sxm-80gb",
                    "workload": {**_SHAPE, "count": 1000},
                    "slo": {"ttft_p90_ms": 500},
                    "vary": {
                        "max_num_seqs": [16, 32, 64, 128, 256, 512, 1024, 2048],
                        "tensor_parallel_size": [1, 2, 4, 8],
                    },
                }
            },
        ),
    }


_SHAPE = {
    "count": 2500,
    "prompt": {"kind": "lognormal", "mean": 1000, "sigma": 0.6},
    "output": {"kind": "lognormal", "mean": 200, "sigma": 0.6},
}


def _log() -> str:
    return (Path(__file__).parents[1] / "reconcile" / "data" / "engine-0.33-tp2.log").read_text()


def _metrics() -> str:
    """A /metrics scrape at MAX_METRICS_SAMPLES, under MAX_METRICS_BYTES: vLLM's own samples first."""
    own = (Path(__file__).parents[1] / "reconcile" / "data" / "metrics-0.33.txt").read_text()
    return own + "# TYPE x gauge\n" + "".join(f'x{{a="{i}"}} 1\n' for i in range(19_990))


def _long_log() -> dict[str, Any]:
    log = _log()
    text = (log * (8_300_000 // len(log)))[: 8 << 20]
    return {"json": {"log": text, "overrides": {"model": "llama-3.1-70b"}}}


def measure(run: Callable[[], Any]) -> tuple[float, float, int]:
    """Seconds the heavy thread worked on run()'s request, the longest gap between two of its
    should_stop() checks (or its start or end), and the checks: offload's stop signal replaced by
    one that never stops and notes each call, the pool's threads timed."""
    from kvplan.api import offload

    calls: list[float] = []
    spans: list[tuple[float, float]] = []

    def signal(stop: Any, deadline: float) -> Callable[[], bool]:
        def should_stop() -> bool:
            calls.append(time.perf_counter())
            return False

        return should_stop

    pool = offload._get_pool()
    submit = pool.executor.submit

    def timed_submit(fn: Callable[..., Any], /, *args: Any) -> Any:
        def timed() -> Any:
            t0 = time.perf_counter()
            try:
                return fn(*args)
            finally:
                spans.append((t0, time.perf_counter()))

        return submit(timed)

    original = offload._stop_signal
    offload._stop_signal = signal  # type: ignore[assignment]
    pool.executor.submit = timed_submit  # type: ignore[method-assign]
    try:
        run()
    finally:
        offload._stop_signal = original  # type: ignore[assignment]
        del pool.executor.submit
    gap = 0.0
    for t0, t1 in spans:
        marks = [t0, *(c for c in calls if t0 <= c <= t1), t1]
        gap = max(gap, *(b - a for a, b in itertools.pairwise(marks)))
    return sum(t1 - t0 for t0, t1 in spans), gap, len(calls)


def _request(client: Any, method: str, path: str, kwargs: dict[str, Any], status: list[int]) -> None:
    status.append(client.request(method, path, **kwargs).status_code)


def main() -> int:
    from litestar.testing import TestClient

    from kvplan.api import offload
    from kvplan.api.app import create_app
    from kvplan.api.settings import Settings
    from kvplan.core.memo import clear_all
    from tests.autoscale.conftest import FLEET

    offload._pool = offload._Pool(1, 4, 600.0)
    with TestClient(create_app(Settings(deployments=str(FLEET))), timeout=600) as client:
        print(f"{'case':66} {'status':>6} {'seconds':>8} {'max gap ms':>10} {'checks':>8}")
        chosen = sys.argv[1:]
        for name, (_, method, path, kwargs) in cases().items():
            if chosen and not any(c in name for c in chosen):
                continue
            clear_all()
            status: list[int] = []
            secs, gap, n = measure(functools.partial(_request, client, method, path, kwargs, status))
            print(f"{name:66} {status[0]:6} {secs:8.2f} {gap * 1000:10.1f} {n:8,}")
    return 0


def _args_log() -> str:
    line = "non-default args: {'a':(" + "1," * 4040 + "}" * 64 + " GiB"
    return (line + "\n") * 1_000 + _log()


if __name__ == "__main__":
    sys.exit(main())
