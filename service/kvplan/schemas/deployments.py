"""The deployments file (KVPLAN_DEPLOYMENTS, TOML) and what an autoscaler posts to
/v1/deployments/{namespace}/{name}/replicas."""

from __future__ import annotations

from typing import Annotated, Literal

from msgspec import Meta

from kvplan.core.budget.types import ENGINE_SETTINGS
from kvplan.core.limits import (
    MAX_METRICS_BYTES,
    MAX_OBSERVED_REPLICAS,
    MAX_OBSERVED_REQUEST_RATE,
    MAX_REPLICA_REQUESTS,
    MAX_REPLICAS,
)
from kvplan.core.validate import Input

from .capacity import Vary
from .common import _AT, Name, takes

# Kubernetes object names (DNS-1123): what the generated manifests are named after.
KubeName = Annotated[
    str,
    Meta(
        min_length=1,
        max_length=63,
        pattern=r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$",
        description="a Kubernetes name: lowercase letters, digits and '-', at most 63",
    ),
]
DeploymentName = Annotated[
    str,
    Meta(
        min_length=1,
        max_length=253,
        pattern=r"^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$",
        description="the vLLM Deployment's name (a Kubernetes object name)",
    ),
]
Utilization = Annotated[
    float,
    Meta(ge=0.01, le=1, description="share of one replica's capacity to fill before adding a replica"),
]
ReplicaCount = Annotated[int, Meta(ge=0, le=MAX_REPLICAS)]


@takes(
    "namespace name served_model_name model gpu",
    *ENGINE_SETTINGS[:_AT],
    "quantization",
    *ENGINE_SETTINGS[_AT:],
    "engine target_utilization min_replicas max_replicas slo traffic vary tokenize_us_per_token",
    kw_only=True,
)
class DeploymentSpec(Input, kw_only=True):
    """One vLLM deployment of the fleet: every /v1/budget input, and how it scales. A table
    [[deployment]] of the deployments file. With latency targets (`slo`) and the traffic's shape
    (`traffic`, as POST /v1/capacity takes it) the plan also searches the rate one replica sustains
    under them, and the replica rule counts the observed request rate against it; with `vary` too,
    each combination of its settings is searched and the plan takes the one that sustains the most
    requests a second per GPU (its settings replace the entry's, in the budget and in vllm-args)."""

    namespace: KubeName
    name: DeploymentName
    served_model_name: (
        Annotated[Name, Meta(description="vLLM's --served-model-name: its model_name label")] | None
    ) = None
    target_utilization: Utilization = 0.8
    min_replicas: ReplicaCount = 1
    max_replicas: Annotated[int, Meta(ge=1, le=MAX_REPLICAS)]
    vary: Vary | None = None


MatchOn = Literal["namespace,deployment", "model_name"]


class AutoscalingSettings(Input):
    """The [autoscaling] table: how vLLM's series are matched to a deployment and where the
    generated autoscaler configs find Prometheus."""

    match_on: Annotated[
        MatchOn,
        Meta(
            description="the labels joining vLLM's series with kvplan's: `namespace,deployment` "
            "relabelled onto vLLM's targets, or vLLM's own `model_name`"
        ),
    ] = "namespace,deployment"
    prometheus_address: Annotated[str, Meta(max_length=512, pattern=r"^https?://")] = (
        "http://prometheus-operated.monitoring.svc:9090"
    )
    polling_interval_seconds: Annotated[int, Meta(ge=1, le=3600)] = 15
    cooldown_seconds: Annotated[int, Meta(ge=0, le=86400)] = 300


class ReplicaObservation(Input):
    """One ready replica's load, as its vLLM /metrics says (summed over its engines)."""

    kv_cache_usage_perc: Annotated[float, Meta(ge=0, le=1, description="vllm:kv_cache_usage_perc (0 to 1)")]
    num_requests_running: Annotated[
        float, Meta(ge=0, le=MAX_REPLICA_REQUESTS, description="vllm:num_requests_running")
    ]
    num_requests_waiting: Annotated[
        float, Meta(ge=0, le=MAX_REPLICA_REQUESTS, description="vllm:num_requests_waiting")
    ]


class ReplicasRequest(Input):
    """What an autoscaler observed of a deployment's ready replicas: each replica's /metrics text
    (`metrics`), or the numbers (`replicas`); and the mean prompt length over the last 5 minutes
    (`mean_prompt_tokens`: without it, the scrapes' lifetime mean, else context_tokens); for a
    deployment with latency targets, the rate its replicas finish requests (`request_rate_per_s`)."""

    metrics: (
        Annotated[
            list[Annotated[str, Meta(max_length=MAX_METRICS_BYTES)]],
            Meta(max_length=MAX_OBSERVED_REPLICAS, description="one ready replica's /metrics text each"),
        ]
        | None
    ) = None
    replicas: Annotated[list[ReplicaObservation], Meta(max_length=MAX_OBSERVED_REPLICAS)] | None = None
    mean_prompt_tokens: Annotated[float, Meta(gt=0, le=MAX_REPLICA_REQUESTS)] | None = None
    request_rate_per_s: (
        Annotated[
            float,
            Meta(
                ge=0,
                le=MAX_OBSERVED_REQUEST_RATE,
                description="requests the deployment's replicas finish a second, the last 5 minutes' "
                "(Σ rate(vllm:request_success_total[5m])): the rate term of a deployment with slo",
            ),
        ]
        | None
    ) = None
