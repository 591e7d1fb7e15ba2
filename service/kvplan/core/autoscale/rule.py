"""The replica rule: how many replicas of a deployment its observed load asks for.

    D_tok   = Σ kv_cache_usage_perc × C + Σ num_requests_waiting × P
    D_req   = Σ (num_requests_running + num_requests_waiting)
    D_rate  = Σ rate(vllm:request_success_total)            (a deployment with latency targets)
    desired = clamp(ceil(max(D_tok / (u·C), D_req / (u·S), D_rate / (u·R)) − ε), min_replicas, max_replicas)

C is one replica's planned KV capacity in tokens, S its max_num_seqs, u the target utilization,
P the mean prompt length (Prometheus: the last 5 minutes'), the sums over ready replicas; R the
request rate one replica sustains under the deployment's latency targets (/v1/capacity's search
on its traffic), D_rate the requests its replicas finish a second (the last 5 minutes'): without
latency targets, or without the rate observed, the term is left out. ε = 1e-9
of a replica absorbs float rounding, so a demand of exactly n replicas' target is n whichever
order the sums are taken in. promql.py states the same rule for Prometheus, term for term in the
same order of operations: tests/autoscale compare the two with promtool and a real Prometheus."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Literal

from kvplan.core import warnings as w
from kvplan.core.ledger import LedgerBuilder

from .types import ReplicaLoad, Replicas, Target

EPSILON = 1e-9
UNCLAMPED_LIMIT = 1_000_000_000
METRICS_SOURCE = "vllm/v1/metrics/loggers.py (vllm:kv_cache_usage_perc, vllm:num_requests_*)"


def desired_replicas(
    target: Target,
    replicas: Sequence[ReplicaLoad],
    mean_prompt_tokens: float | None = None,
    prompt_source: Literal["given", "scrapes"] = "given",
    request_rate_per_s: float | None = None,
) -> Replicas:
    """The desired count for `replicas`' load, with each term and its ledger. `mean_prompt_tokens`
    None counts waiting requests at context_tokens (as Prometheus's rule does without traffic);
    `prompt_source` says where a given mean came from ("given" or "scrapes");
    `request_rate_per_s` is the deployment's finished requests a second, for the rate term."""
    c, s, u = target.capacity_tokens, target.max_num_seqs, target.target_utilization
    usage = running = waiting = 0.0
    for r in replicas:
        usage += r.kv_cache_usage_perc
        running += r.num_requests_running
        waiting += r.num_requests_waiting
    source: Literal["given", "scrapes", "context_tokens"] = prompt_source
    if mean_prompt_tokens is None:
        p, source = float(target.context_tokens), "context_tokens"
    else:
        p = mean_prompt_tokens
    demand_tokens = usage * c + waiting * p
    demand_requests = running + waiting
    for_tokens = demand_tokens / (u * c)
    for_requests = demand_requests / (u * s)
    rate_cap = target.max_rate_per_s
    for_rate = None
    if rate_cap is not None and request_rate_per_s is not None:
        for_rate = request_rate_per_s / (u * rate_cap)
    top = max(for_tokens, for_requests)
    if for_rate is not None:
        top = max(top, for_rate)
    need = top - EPSILON
    # A demand past any fleet (or overflowing a float) is a count no bound lets through anyway.
    unclamped = UNCLAMPED_LIMIT if not need < UNCLAMPED_LIMIT else max(0, math.ceil(need))
    desired = min(max(unclamped, target.min_replicas), target.max_replicas)
    clamped_by: Literal["min_replicas", "max_replicas"] | None = None
    if desired > unclamped:
        clamped_by = "min_replicas"
    elif desired < unclamped:
        clamped_by = "max_replicas"

    warnings = []
    if not replicas and for_rate is None:
        warnings.append(
            w.Warning(w.NO_READY_REPLICAS, "No ready replica was observed: desired is min_replicas.")
        )
    if waiting > 0 and source != "given":
        said = "the scrapes' lifetime mean" if source == "scrapes" else "context_tokens"
        warnings.append(
            w.Warning(
                w.MEAN_PROMPT_ASSUMED,
                f"Waiting requests were counted at {p:g} prompt tokens ({said}); give mean_prompt_tokens "
                "(the last 5 minutes' mean) to match Prometheus's rule.",
            )
        )
    if rate_cap is None and request_rate_per_s is not None:
        warnings.append(
            w.Warning(
                w.REQUEST_RATE_UNUSED,
                "request_rate_per_s was given, but the deployment has no latency targets (slo): the "
                "count has no rate term.",
            )
        )
    if rate_cap is not None and request_rate_per_s is None:
        warnings.append(
            w.Warning(
                w.REQUEST_RATE_NOT_GIVEN,
                f"The deployment sustains {rate_cap:g} requests a second a replica under its latency "
                "targets, but the observed rate was not given: the count leaves the rate term out. Give "
                "request_rate_per_s, Σ rate(vllm:request_success_total[5m]), to match Prometheus's rule.",
            )
        )
    if clamped_by == "max_replicas":
        warnings.append(
            w.Warning(
                w.DESIRED_ABOVE_MAX_REPLICAS,
                f"The load asks for {unclamped} replicas; max_replicas is {target.max_replicas}: the "
                "deployment runs above its target utilization and requests queue.",
            )
        )

    ledger = LedgerBuilder()
    ledger.add(
        "demand_tokens",
        "Σ kv_cache_usage_perc × capacity_tokens + Σ num_requests_waiting × mean_prompt_tokens",
        demand_tokens,
        "tokens",
        METRICS_SOURCE,
        kv_cache_usage_sum=usage,
        capacity_tokens=c,
        requests_waiting=waiting,
        mean_prompt_tokens=p,
    )
    ledger.add(
        "demand_requests",
        "Σ (num_requests_running + num_requests_waiting)",
        demand_requests,
        "requests",
        METRICS_SOURCE,
        requests_running=running,
        requests_waiting=waiting,
    )
    ledger.add(
        "replicas_for_tokens",
        "demand_tokens / (target_utilization × capacity_tokens)",
        for_tokens,
        "replicas",
        demand_tokens=demand_tokens,
        target_utilization=u,
        capacity_tokens=c,
    )
    ledger.add(
        "replicas_for_requests",
        "demand_requests / (target_utilization × max_num_seqs)",
        for_requests,
        "replicas",
        demand_requests=demand_requests,
        target_utilization=u,
        max_num_seqs=s,
    )
    terms: dict[str, float] = {"replicas_for_tokens": for_tokens, "replicas_for_requests": for_requests}
    if for_rate is not None and rate_cap is not None and request_rate_per_s is not None:
        ledger.add(
            "replicas_for_rate",
            "request_rate_per_s / (target_utilization × max_rate_per_s)",
            for_rate,
            "replicas",
            "the deployment's latency targets, searched on its traffic (POST /v1/capacity)",
            request_rate_per_s=request_rate_per_s,
            target_utilization=u,
            max_rate_per_s=rate_cap,
        )
        terms["replicas_for_rate"] = for_rate
    ledger.add(
        "unclamped_replicas",
        f"ceil(max({', '.join(terms)}) − 1e-9)",
        unclamped,
        "replicas",
        "",
        **terms,
    )
    ledger.add(
        "desired_replicas",
        "clamp(unclamped_replicas, min_replicas, max_replicas)",
        desired,
        "replicas",
        unclamped_replicas=unclamped,
        min_replicas=target.min_replicas,
        max_replicas=target.max_replicas,
    )
    return Replicas(
        desired_replicas=desired,
        unclamped_replicas=unclamped,
        clamped_by=clamped_by,
        binding=_binding(for_tokens, for_requests, for_rate),
        ready_replicas=len(replicas),
        capacity_tokens=c,
        max_num_seqs=s,
        target_utilization=u,
        min_replicas=target.min_replicas,
        max_replicas=target.max_replicas,
        kv_cache_usage_sum=usage,
        requests_running=running,
        requests_waiting=waiting,
        mean_prompt_tokens=p,
        mean_prompt_tokens_source=source,
        demand_tokens=demand_tokens,
        demand_requests=demand_requests,
        replicas_for_tokens=for_tokens,
        replicas_for_requests=for_requests,
        max_rate_per_s=rate_cap,
        request_rate_per_s=request_rate_per_s if rate_cap is not None else None,
        replicas_for_rate=for_rate,
        warnings=tuple(warnings),
        ledger=ledger.build(),
    )


def _binding(tokens: float, requests: float, rate: float | None) -> Literal["tokens", "requests", "rate"]:
    """The term that set the count: tokens, then requests, then rate on a tie."""
    if rate is not None and rate > tokens and rate > requests:
        return "rate"
    return "tokens" if tokens >= requests else "requests"
