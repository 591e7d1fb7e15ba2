"""What the replica rule reads: a deployment's planned figures and its replicas' load."""

from __future__ import annotations

from typing import Literal

import msgspec

from kvplan.core.ledger import Step
from kvplan.core.warnings import Warning


class Target(msgspec.Struct, frozen=True, gc=False, kw_only=True):
    """One replica's planned capacity and the deployment's scaling bounds: `capacity_tokens` is
    vLLM's "GPU KV cache size" (C), `max_num_seqs` its request limit (S), `target_utilization`
    the share of each to fill before adding a replica (u), and, for a deployment with latency
    targets, the request rate one replica sustains under them (R, from /v1/capacity's search)."""

    capacity_tokens: int
    max_num_seqs: int
    target_utilization: float
    context_tokens: int
    min_replicas: int
    max_replicas: int
    max_rate_per_s: float | None = None


class ReplicaLoad(msgspec.Struct, frozen=True, gc=False, kw_only=True):
    """One ready replica's load as vLLM reports it on /metrics (summed over its engines):
    `kv_cache_usage_perc` is a fraction (vllm:kv_cache_usage_perc, 0 to 1)."""

    kv_cache_usage_perc: float
    num_requests_running: float
    num_requests_waiting: float


class Replicas(msgspec.Struct, frozen=True, gc=False, kw_only=True):
    """The desired replica count and every term of the rule that gave it."""

    desired_replicas: int
    unclamped_replicas: int
    clamped_by: Literal["min_replicas", "max_replicas"] | None
    binding: Literal["tokens", "requests", "rate"]  # the demand that set the count (in this order on a tie)
    ready_replicas: int
    capacity_tokens: int
    max_num_seqs: int
    target_utilization: float
    min_replicas: int
    max_replicas: int
    kv_cache_usage_sum: float
    requests_running: float
    requests_waiting: float
    mean_prompt_tokens: float
    mean_prompt_tokens_source: Literal["given", "scrapes", "context_tokens"]  # scrapes: their lifetime mean
    demand_tokens: float
    demand_requests: float
    replicas_for_tokens: float
    replicas_for_requests: float
    # With latency targets (Target.max_rate_per_s) and the observed rate given; else None.
    max_rate_per_s: float | None = None
    request_rate_per_s: float | None = None
    replicas_for_rate: float | None = None
    warnings: tuple[Warning, ...] = ()
    ledger: tuple[Step, ...] = ()
