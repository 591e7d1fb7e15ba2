"""The replica rule of rule.py as Prometheus recording rules, and the alerts beside it.

vLLM's series (vllm/v1/metrics/loggers.py) are joined with kvplan's gauges on `match_on`: the
`namespace` and `deployment` labels relabelled onto vLLM's targets (the default), or vLLM's own
`model_name` when each deployment serves a name no other does. Every term is recorded under its
own name, so a dashboard shows why the count is what it is; the operations are rule.py's, in its
order, so both give the same count for the same load."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .rule import EPSILON

DEFAULT_MATCH_ON = ("namespace", "deployment")
RULES_GROUP = "kvplan-deployments.rules"
ALERTS_GROUP = "kvplan-deployments.alerts"
DESIRED = "kvplan:deployment_desired_replicas"


def _by(match_on: Sequence[str]) -> str:
    return ", ".join(match_on)


def recording_rules(match_on: Sequence[str] = DEFAULT_MATCH_ON) -> list[dict[str, str]]:
    """The rule's terms, one recording rule each, ending in kvplan:deployment_desired_replicas.
    A deployment with no vLLM series yet counts zero load (desired: min_replicas)."""
    j = _by(match_on)

    def plan(gauge: str) -> str:  # one value a deployment, labelled by the join labels only
        return f"max by ({j}) (kvplan_deployment_{gauge})"

    def load(series: str) -> str:  # summed over the deployment's replicas, 0 with none
        return f"sum by ({j}) ({series}) or on ({j}) (0 * {plan('kv_cache_capacity_tokens')})"

    def at_least(x: str, bound: str) -> str:
        return f"({x} > on ({j}) {bound}) or on ({j}) {bound}"

    def at_most(x: str, bound: str) -> str:
        return f"({x} < on ({j}) {bound}) or on ({j}) {bound}"

    tokens = "kvplan:deployment_replicas_for_tokens"
    requests = "kvplan:deployment_replicas_for_requests"
    rate = "kvplan:deployment_replicas_for_rate"
    rules = {
        # vLLM before 0.10 named the usage gauge gpu_cache_usage_perc (0.9.2 to 0.11 export both).
        "kvplan:deployment_kv_cache_usage:sum": load("vllm:kv_cache_usage_perc or vllm:gpu_cache_usage_perc"),
        "kvplan:deployment_requests_running:sum": load("vllm:num_requests_running"),
        "kvplan:deployment_requests_waiting:sum": load("vllm:num_requests_waiting"),
        "kvplan:deployment_mean_prompt_tokens": (
            f"(sum by ({j}) (rate(vllm:request_prompt_tokens_sum[5m]))"
            f" / (sum by ({j}) (rate(vllm:request_prompt_tokens_count[5m])) > 0))"
            f" or on ({j}) {plan('context_tokens')}"
        ),
        "kvplan:deployment_demand_tokens": (
            f"kvplan:deployment_kv_cache_usage:sum * on ({j}) {plan('kv_cache_capacity_tokens')}"
            f" + on ({j}) kvplan:deployment_requests_waiting:sum"
            f" * on ({j}) kvplan:deployment_mean_prompt_tokens"
        ),
        "kvplan:deployment_demand_requests": (
            f"kvplan:deployment_requests_running:sum + on ({j}) kvplan:deployment_requests_waiting:sum"
        ),
        "kvplan:deployment_request_rate:sum": load("rate(vllm:request_success_total[5m])"),
        tokens: (
            f"kvplan:deployment_demand_tokens / on ({j})"
            f" ({plan('target_utilization')} * on ({j}) {plan('kv_cache_capacity_tokens')})"
        ),
        requests: (
            f"kvplan:deployment_demand_requests / on ({j})"
            f" ({plan('target_utilization')} * on ({j}) {plan('max_num_seqs')})"
        ),
        # Only a deployment with latency targets publishes max_rate_per_s: without it, no term.
        rate: (
            f"kvplan:deployment_request_rate:sum / on ({j})"
            f" ({plan('target_utilization')} * on ({j}) {plan('max_rate_per_s')})"
        ),
        "kvplan:deployment_desired_replicas:unclamped": (
            f"ceil(((((({tokens} >= on ({j}) {requests}) or on ({j}) {requests}) >= on ({j}) {rate})"
            f" or on ({j}) {rate}) or on ({j}) (({tokens} >= on ({j}) {requests}) or on ({j}) {requests}))"
            f" - {EPSILON:g})"
        ),
    }
    clamped = at_most(
        "(" + at_least("kvplan:deployment_desired_replicas:unclamped", plan("min_replicas")) + ")",
        plan("max_replicas"),
    )
    if tuple(match_on) == DEFAULT_MATCH_ON:
        rules[DESIRED] = clamped
    else:  # the count keeps kvplan's namespace and deployment labels, which autoscalers select on
        rules[f"{DESIRED}:by_{'_'.join(match_on)}"] = clamped
        rules[DESIRED] = (
            f"{DESIRED}:by_{'_'.join(match_on)} * on ({j}) group_left (namespace, deployment)"
            f" (0 * max by ({j}, namespace, deployment) (kvplan_deployment_max_replicas) + 1)"
        )
    return [{"record": name, "expr": expr} for name, expr in rules.items()]


def alerts(match_on: Sequence[str] = DEFAULT_MATCH_ON) -> list[dict[str, Any]]:
    """Desired above max_replicas for 10 minutes; an engine whose cache_config_info states other
    blocks than the plan (a different engine, GPU, memory setting or flag than planned), one alert
    an engine: each engine of a data-parallel pod allocates its own blocks."""
    j = _by(match_on)
    engines_config = "vllm:cache_config_info"
    if "model_name" in match_on:  # vLLM's cache_config_info has no model_name: take its pod's
        engines_config = (
            "vllm:cache_config_info * on (instance) group_left (model_name)"
            " max by (instance, model_name) (vllm:num_requests_running)"
        )
    where = " ".join("{{ $labels." + label + " }}" for label in match_on)
    return [
        {
            "alert": "KvplanDesiredReplicasAboveMax",
            "expr": (
                f"kvplan:deployment_desired_replicas:unclamped > on ({j})"
                f" max by ({j}) (kvplan_deployment_max_replicas)"
            ),
            "for": "10m",
            "labels": {"severity": "warning"},
            "annotations": {
                "summary": f"{where} needs more replicas than max_replicas allows",
                "description": (
                    "The load asks for {{ $value }} replicas for 10 minutes, above max_replicas: the "
                    "deployment runs above its target utilization and requests queue. Raise max_replicas "
                    "in kvplan's deployments file (and the autoscaler's bound it generates)."
                ),
            },
        },
        {
            "alert": "KvplanEngineBlocksDifferFromPlan",
            "expr": (
                f"(max by ({j}, num_gpu_blocks, instance, engine) ({engines_config})"
                f" unless on ({j}, num_gpu_blocks) kvplan_deployment_cache_config_info)"
                f" and on ({j}) kvplan_deployment_cache_config_info"
            ),
            "for": "5m",
            "labels": {"severity": "warning"},
            "annotations": {
                "summary": (
                    f"{where}: an engine has {{{{ $labels.num_gpu_blocks }}}} KV blocks, not the plan's"
                ),
                "description": (
                    "vLLM on {{ $labels.instance }} (engine {{ $labels.engine }}) reports num_gpu_blocks "
                    "{{ $labels.num_gpu_blocks }} in vllm:cache_config_info; kvplan planned "
                    "kvplan_deployment_num_gpu_blocks. The engine runs with other inputs than the "
                    "deployments file says (engine version, GPU, gpu_memory_utilization, max_model_len, "
                    "kv_cache_dtype, …): its capacity, and the replica count, are off. Reconcile its "
                    "start-up log with POST /v1/reconcile."
                ),
            },
        },
    ]


def rule_groups(match_on: Sequence[str] = DEFAULT_MATCH_ON) -> list[dict[str, Any]]:
    """Both groups, as a Prometheus rules file's `groups` (and a PrometheusRule's spec.groups)."""
    return [
        {"name": RULES_GROUP, "rules": recording_rules(match_on)},
        {"name": ALERTS_GROUP, "rules": alerts(match_on)},
    ]
