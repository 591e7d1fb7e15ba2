"""A timed simulation in the field names of `vllm bench serve --save-result`
(vllm/benchmarks/serve.py, the result dict it writes), so the notebooks and dashboards that read
those files read kvplan's. Percentiles are written as --metric-percentiles 50,90,99 would write
them, and e2el among the --percentile-metrics; fields the bench measures on the client and a
simulation has no counterpart for are left out."""

from __future__ import annotations

import datetime
from typing import Any

import msgspec

from kvplan.core.errors import InvalidInput
from kvplan.core.sim.latency import Distribution
from kvplan.core.sim.simulate import SimResult, TimedSimResult


def _metric(out: dict[str, Any], name: str, d: Distribution) -> None:
    out[f"mean_{name}_ms"] = d.mean
    out[f"median_{name}_ms"] = d.p50
    out[f"std_{name}_ms"] = d.std
    out[f"p50_{name}_ms"] = d.p50
    out[f"p90_{name}_ms"] = d.p90
    out[f"p99_{name}_ms"] = d.p99


UNTIMED = "vllm-bench needs a timed simulation: give arrivals in seconds"


def vllm_bench_result(result: SimResult, labels: dict[str, Any], now: datetime.datetime) -> dict[str, Any]:
    """The --save-result dict of a timed simulation; an untimed one has none (a 400 on `format`)."""
    if not isinstance(result, TimedSimResult):
        raise InvalidInput("format", UNTIMED)
    t, lat = result.throughput, result.latency
    out: dict[str, Any] = {
        "date": now.strftime("%Y%m%d-%H%M%S"),
        "backend": "vllm",
        "model_id": labels.get("model"),
        "tokenizer_id": labels.get("model"),
        "num_prompts": result.requests,
        "request_rate": labels.get("request_rate", "inf"),
        "burstiness": 1.0,
        "max_concurrency": labels.get("concurrency"),
        "duration": t.duration_s,
        "completed": result.completed,
        "failed": result.requests - result.completed,
        "total_input_tokens": t.input_tokens,
        "total_output_tokens": t.output_tokens,
        "request_throughput": t.requests_per_s,
        "request_goodput": result.goodput.requests_per_s if result.goodput is not None else None,
        "output_throughput": t.output_tokens_per_s,
        "total_token_throughput": t.total_tokens_per_s,
        "max_concurrent_requests": result.peak_in_flight,
    }
    _metric(out, "ttft", lat.ttft_ms)
    _metric(out, "tpot", lat.tpot_ms)
    _metric(out, "itl", lat.itl_ms)
    _metric(out, "e2el", lat.e2e_ms)
    out["kvplan"] = {
        "simulated": True,
        "engine": labels.get("engine"),
        "gpu": labels.get("gpu"),
        "registry_version": labels.get("registry_version"),
        "modelled": result.timing.modelled,
        "validation": result.timing.validation,
    }
    return out


def vllm_bench_json(result: SimResult, labels: dict[str, Any]) -> bytes:
    return msgspec.json.encode(vllm_bench_result(result, labels, datetime.datetime.now(datetime.UTC)))
