"""The configs people write by hand for a vLLM deployment, built from its plan as plain values
(the shell writes them as YAML): the PrometheusRule of promql.py, a KEDA ScaledObject and an
HPA on its desired-replicas series, the endpoint picker's settings, and the `vllm serve` flags
that make the engine run the plan."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import msgspec

from kvplan.core.budget.types import Budget, EngineSettings
from kvplan.core.model.geometry import KIND_NAMES, MAMBA, MAMBA_REPLICATED
from kvplan.core.units import GiB

from .promql import DESIRED, rule_groups

MANAGED = {"app.kubernetes.io/managed-by": "kvplan"}
ADAPTER_METRIC = "kvplan_deployment_desired_replicas"  # prometheus-adapter's name: no colons
# Prompt characters a token, as the endpoint picker's prefix index assumes when it counts in
# characters (gateway-api-inference-extension: blockSize 64 = 16 tokens × 4 characters).
CHARS_PER_TOKEN = 4
# Kubernetes refuses an HPA behavior's stabilizationWindowSeconds above an hour (KEDA's CRD says
# so too: "less than or equal to 3600").
STABILIZATION_WINDOW_LIMIT_SECONDS = 3600
_STATE_KINDS = frozenset({KIND_NAMES[MAMBA], KIND_NAMES[MAMBA_REPLICATED]})


class Site(msgspec.Struct, frozen=True, kw_only=True):
    """Where a deployment runs and how it scales: what the manifests need besides the plan."""

    namespace: str
    name: str
    model: str  # as `vllm serve` takes it: a Hub id, or a path
    model_name: str  # --served-model-name: vLLM's model_name label
    revision: str | None = None  # --revision: the Hub revision the file pinned (org/name@revision)
    quantization: str | None = None  # --quantization, when the file gave it
    match_on: tuple[str, ...]
    prometheus_address: str
    polling_interval_seconds: int
    cooldown_seconds: int
    target_utilization: float
    min_replicas: int
    max_replicas: int


def _metadata(site: Site, name: str | None = None) -> dict[str, Any]:
    return {"name": name or site.name, "namespace": site.namespace, "labels": dict(MANAGED)}


def engine_block_size(b: Budget) -> int:
    """The block_size vLLM runs with (its vllm:cache_config_info label, the block it hashes prefixes
    in): the one planned with, unless the model mixes attention with Mamba states, whose attention
    block vLLM raises until a page holds a state (Platform._align_hybrid_block_size sets
    cache_config.block_size): then the attention groups' block."""
    if not any(g.kind in _STATE_KINDS for g in b.groups):
        return b.block_size
    return max((g.block_size for g in b.groups if g.kind not in _STATE_KINDS), default=b.block_size)


def scale_down_window(site: Site) -> int:
    """The cooldown as an HPA's scale-down stabilization window, which Kubernetes caps at an hour."""
    return min(site.cooldown_seconds, STABILIZATION_WINDOW_LIMIT_SECONDS)


def _target(site: Site) -> dict[str, str]:
    """The vLLM Deployment an autoscaler scales."""
    return {"apiVersion": "apps/v1", "kind": "Deployment", "name": site.name}


def desired_query(site: Site) -> str:
    """The PromQL an autoscaler reads: one deployment's desired-replicas series."""
    return f'{DESIRED}{{namespace="{site.namespace}",deployment="{site.name}"}}'


def prometheus_rule(match_on: Sequence[str]) -> dict[str, Any]:
    """One PrometheusRule for every deployment: the rules are the same for all of them."""
    return {
        "apiVersion": "monitoring.coreos.com/v1",
        "kind": "PrometheusRule",
        "metadata": {"name": "kvplan-deployments", "labels": {**MANAGED, "app.kubernetes.io/name": "kvplan"}},
        "spec": {"groups": rule_groups(match_on)},
    }


def scaled_object(site: Site) -> dict[str, Any]:
    """KEDA's prometheus trigger on the desired count: threshold 1 with AverageValue makes the
    HPA's count ceil(desired / 1) = desired. An empty answer (rules or kvplan missing) is an error
    for KEDA, which then keeps the replicas as they are, rather than a zero that scales down.
    cooldownPeriod only delays the last replica's removal (to zero); the HPA KEDA makes waits the
    same cooldown before any other scale-down, as kind=hpa's does."""
    return {
        "apiVersion": "keda.sh/v1alpha1",
        "kind": "ScaledObject",
        "metadata": _metadata(site),
        "spec": {
            "scaleTargetRef": _target(site),
            "minReplicaCount": site.min_replicas,
            "maxReplicaCount": site.max_replicas,
            "pollingInterval": site.polling_interval_seconds,
            "cooldownPeriod": site.cooldown_seconds,
            "advanced": {
                "horizontalPodAutoscalerConfig": {
                    "behavior": {"scaleDown": {"stabilizationWindowSeconds": scale_down_window(site)}}
                }
            },
            "triggers": [
                {
                    "type": "prometheus",
                    "name": "kvplan-desired-replicas",
                    "metricType": "AverageValue",
                    "metadata": {
                        "serverAddress": site.prometheus_address,
                        "query": desired_query(site),
                        "threshold": "1",
                        "activationThreshold": "0",
                        "ignoreNullValues": "false",
                    },
                }
            ],
        },
    }


def adapter_rules() -> dict[str, Any]:
    """prometheus-adapter's externalRules serving the desired count as an External metric (the
    adapter names it without colons; the HPA's namespace selects the series' namespace)."""
    return {
        "externalRules": [
            {
                "seriesQuery": f'{DESIRED}{{namespace!="",deployment!=""}}',
                "resources": {"overrides": {"namespace": {"resource": "namespace"}}},
                "name": {"matches": f"^{DESIRED}$", "as": ADAPTER_METRIC},
                "metricsQuery": "max(<<.Series>>{<<.LabelMatchers>>})",
            }
        ]
    }


def hpa(site: Site) -> dict[str, Any]:
    """An autoscaling/v2 HPA on the External metric adapter_rules() serves: target AverageValue 1,
    so its count is the desired count."""
    return {
        "apiVersion": "autoscaling/v2",
        "kind": "HorizontalPodAutoscaler",
        "metadata": _metadata(site),
        "spec": {
            "scaleTargetRef": _target(site),
            "minReplicas": max(1, site.min_replicas),
            "maxReplicas": site.max_replicas,
            "metrics": [
                {
                    "type": "External",
                    "external": {
                        "metric": {
                            "name": ADAPTER_METRIC,
                            "selector": {"matchLabels": {"deployment": site.name}},
                        },
                        "target": {"type": "AverageValue", "averageValue": "1"},
                    },
                }
            ],
            "behavior": {"scaleDown": {"stabilizationWindowSeconds": scale_down_window(site)}},
        },
    }


class RouterFigures(msgspec.Struct, frozen=True, kw_only=True):
    """The endpoint picker's numbers and how each follows from the plan."""

    block_size_tokens: int
    lru_capacity_per_server: int
    kv_cache_util_threshold: float
    queue_depth_threshold: int
    max_concurrency: int
    max_token_concurrency: int
    max_prefix_tokens: int


def router_figures(b: Budget, target_utilization: float) -> RouterFigures:
    """The prefix index holds one entry a KV block, blocks of the size vLLM runs with (as its
    autoTune reads them from the engines' vllm:cache_config_info: block_size, num_gpu_blocks); a
    replica is saturated once its free KV no longer holds one more request of context_tokens (so
    the threshold is 1 − blocks a request / blocks, floored to 0.001), or once more requests wait
    than the headroom between the autoscaler's target and what it schedules
    (schedulable − ⌊u × schedulable⌋). The concurrency detector's caps are what a replica runs at
    once (max_num_seqs) and the tokens its KV holds: in hybrid mode the one that binds decides,
    so short requests are not held to the count of full-length ones."""
    util = math.floor((1 - b.blocks_per_request / b.num_blocks) * 1000) / 1000
    schedulable = b.concurrency.schedulable
    return RouterFigures(
        block_size_tokens=engine_block_size(b),
        lru_capacity_per_server=b.num_blocks,
        kv_cache_util_threshold=max(0.001, util),
        queue_depth_threshold=max(1, schedulable - math.floor(target_utilization * schedulable)),
        max_concurrency=b.max_num_seqs,
        max_token_concurrency=max(1, b.kv_cache_size_tokens),
        max_prefix_tokens=b.max_model_len,
    )


def endpoint_picker(b: Budget, site: Site, flavor: str) -> dict[str, Any]:
    """The EndpointPickerConfig: `llm-d` (llm-d.ai/v1alpha1, the prefix index in
    approx-prefix-cache-producer counted in tokens, saturation under flowControl) or `gie`
    (gateway-api-inference-extension v1: prefix-cache-scorer counting characters, a top-level
    saturationDetector of thresholds)."""
    f = router_figures(b, site.target_utilization)
    scorers = [
        {"pluginRef": "prefix-cache-scorer", "weight": 3},
        {"pluginRef": "queue-scorer", "weight": 2},
        {"pluginRef": "kv-cache-utilization-scorer", "weight": 2},
    ]
    if flavor == "gie":
        return {
            "apiVersion": "inference.networking.x-k8s.io/v1alpha1",
            "kind": "EndpointPickerConfig",
            "plugins": [
                {
                    "type": "prefix-cache-scorer",
                    "parameters": {
                        "blockSize": f.block_size_tokens * CHARS_PER_TOKEN,
                        "maxPrefixBlocksToMatch": math.ceil(f.max_prefix_tokens / f.block_size_tokens),
                        "lruCapacityPerServer": f.lru_capacity_per_server,
                    },
                },
                {"type": "queue-scorer"},
                {"type": "kv-cache-utilization-scorer"},
                {"type": "max-score-picker"},
            ],
            "schedulingProfiles": [
                {"name": "default", "plugins": [*scorers, {"pluginRef": "max-score-picker"}]}
            ],
            "saturationDetector": {
                "queueDepthThreshold": f.queue_depth_threshold,
                "kvCacheUtilThreshold": f.kv_cache_util_threshold,
                "metricsStalenessThreshold": "200ms",
            },
        }
    return {
        "apiVersion": "llm-d.ai/v1alpha1",
        "kind": "EndpointPickerConfig",
        "plugins": [
            {
                "type": "approx-prefix-cache-producer",
                "parameters": {
                    "autoTune": True,
                    "blockSizeTokens": f.block_size_tokens,
                    "maxPrefixTokensToMatch": f.max_prefix_tokens,
                    "lruCapacityPerServer": f.lru_capacity_per_server,
                },
            },
            {"type": "prefix-cache-scorer"},
            {"type": "queue-scorer"},
            {"type": "kv-cache-utilization-scorer"},
            {
                "name": "kvplan-utilization",
                "type": "utilization-detector",
                "parameters": {
                    "queueDepthThreshold": f.queue_depth_threshold,
                    "kvCacheUtilThreshold": f.kv_cache_util_threshold,
                    "metricsStalenessThreshold": "200ms",
                },
            },
            {
                "name": "kvplan-concurrency",
                "type": "concurrency-detector",
                "parameters": {
                    "concurrencyMode": "hybrid",
                    "maxConcurrency": f.max_concurrency,
                    "maxTokenConcurrency": f.max_token_concurrency,
                },
            },
            {"type": "max-score-picker"},
        ],
        "schedulingProfiles": [
            {
                "name": "default",
                "plugins": [{"pluginRef": "kvplan-concurrency"}, *scorers, {"pluginRef": "max-score-picker"}],
            }
        ],
        "flowControl": {"saturationDetector": {"pluginRef": "kvplan-utilization"}},
    }


def vllm_args(site: Site, b: Budget, given: EngineSettings) -> list[str]:
    """`vllm serve` arguments (vllm/engine/arg_utils.py's names) that make the engine plan as kvplan
    did: the model, its served name (the label kvplan's series match), the layout and every limit
    the plan resolved, and each setting the deployments file gave."""
    args = [site.model, f"--served-model-name={site.model_name}"]
    if site.revision is not None:
        args.append(f"--revision={site.revision}")
    if b.tensor_parallel_size > 1:
        args.append(f"--tensor-parallel-size={b.tensor_parallel_size}")
    if b.pipeline_parallel_size > 1:
        args.append(f"--pipeline-parallel-size={b.pipeline_parallel_size}")
    if given.decode_context_parallel_size > 1:
        args.append(f"--decode-context-parallel-size={given.decode_context_parallel_size}")
    if given.kv_cache_memory_bytes is not None:
        args.append(f"--kv-cache-memory-bytes={given.kv_cache_memory_bytes}")
    else:
        args.append(f"--gpu-memory-utilization={b.gpu_memory_utilization!r}")  # exact: blocks follow it
    args += [
        f"--max-model-len={b.max_model_len}",
        f"--max-num-seqs={b.max_num_seqs}",
        f"--max-num-batched-tokens={b.max_num_batched_tokens}",
    ]
    if site.quantization is not None:
        args.append(f"--quantization={site.quantization}")
    if given.kv_cache_dtype != "auto":
        args.append(f"--kv-cache-dtype={given.kv_cache_dtype}")
    if given.kv_cache_dtype_skip_layers:  # a list flag (nargs="+"): its values follow it
        args += ["--kv-cache-dtype-skip-layers", *(str(x) for x in given.kv_cache_dtype_skip_layers)]
    if given.block_size is not None:
        args.append(f"--block-size={given.block_size}")
    if given.enforce_eager:
        args.append("--enforce-eager")
    if given.num_gpu_blocks_override is not None:
        args.append(f"--num-gpu-blocks-override={given.num_gpu_blocks_override}")
    if given.async_scheduling is not None:
        args.append("--async-scheduling" if given.async_scheduling else "--no-async-scheduling")
    if not given.hybrid_kv_cache_manager:
        args.append("--disable-hybrid-kv-cache-manager")
    if given.dtype != "auto":
        args.append(f"--dtype={given.dtype}")
    if given.data_parallel_size > 1:
        args.append(f"--data-parallel-size={given.data_parallel_size}")
    if given.enable_expert_parallel:
        args.append("--enable-expert-parallel")
    if given.cpu_offload_bytes:  # bytes ÷ 2³⁰ is exact in a float: vLLM's int(GiB × 1024³) gives them back
        args.append(f"--cpu-offload-gb={given.cpu_offload_bytes / GiB!r}")
    if given.kv_offloading_bytes is not None:
        args += [
            f"--kv-offloading-size={given.kv_offloading_bytes / GiB!r}",
            "--kv-offloading-backend=native",
        ]
    return args
