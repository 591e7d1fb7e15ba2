"""kvplan's replica rule run by a real Prometheus: the rules of kvplan's own PrometheusRule, on a
Prometheus that scrapes kvplan (honor_labels) and vLLM look-alike replicas (namespace and
deployment set on their targets by relabelling, as a Kubernetes pod monitor would), count the
replicas kvplan's POST …/replicas counts for the same observation, term by term, as the load goes
idle, busy, queued, a replica down and back; and the blocks alert's expression names the engine
whose num_gpu_blocks is not the plan's."""

from __future__ import annotations

import math
import time
from collections.abc import Iterator
from contextlib import ExitStack
from dataclasses import dataclass, field
from typing import Any

import httpx
import pytest
import yaml

from tests.autoscale.prom import Prometheus, binary
from tests.autoscale.vllm_exporter import VllmExporter
from tests.live import Server, start_server

pytestmark = pytest.mark.server
PROMETHEUS = binary("prometheus")

FLEET = """
[[deployment]]
namespace = "serving"
name = "llama-8b-h100"
model = "llama-3.1-8b"
gpu = "h100-sxm-80gb"
context_tokens = 8192
target_utilization = 0.8
min_replicas = 1
max_replicas = 5

[[deployment]]
namespace = "research"
name = "qwen3-8b-l40s"
model = "qwen3-8b"
gpu = "l40s-48gb"
context_tokens = 8192
max_num_seqs = 64
target_utilization = 0.8
min_replicas = 0
max_replicas = 4
"""
PROMPT_TOKENS = 4000  # the length of every prompt of the queued state's traffic

# Prometheus's recorded terms and the fields of kvplan's answer that state them.
TERMS = {
    "kvplan:deployment_kv_cache_usage:sum": "kv_cache_usage_sum",
    "kvplan:deployment_requests_running:sum": "requests_running",
    "kvplan:deployment_requests_waiting:sum": "requests_waiting",
    "kvplan:deployment_mean_prompt_tokens": "mean_prompt_tokens",
    "kvplan:deployment_demand_tokens": "demand_tokens",
    "kvplan:deployment_demand_requests": "demand_requests",
    "kvplan:deployment_replicas_for_tokens": "replicas_for_tokens",
    "kvplan:deployment_replicas_for_requests": "replicas_for_requests",
    "kvplan:deployment_desired_replicas:unclamped": "unclamped_replicas",
    "kvplan:deployment_desired_replicas": "desired_replicas",
}
# Recorded for every deployment; a term only for one with latency targets (neither here: the fake
# engines finish no requests, so the sum is 0; test_rules_promtool checks the rate term).
REQUEST_RATE = "kvplan:deployment_request_rate:sum"
DESIRED = "kvplan:deployment_desired_replicas"
SETTLE_SECONDS = 1.5  # the load seen, and the count unchanged, over more than one rule evaluation


@dataclass
class Deployment:
    namespace: str
    name: str
    plan: dict[str, Any]  # the values of its kvplan_deployment_* series
    replicas: list[VllmExporter]
    prompt_tokens: int | None = None  # every prompt's length, once it has prompt traffic

    @property
    def key(self) -> tuple[str, str]:
        return (self.namespace, self.name)

    def ready(self) -> list[VllmExporter]:
        return [r for r in self.replicas if r.up]

    def totals(self) -> tuple[float, int, int]:
        usage, running, waiting = 0.0, 0, 0
        for r in self.ready():
            u, run, wait = r.totals()
            usage, running, waiting = usage + u, running + run, waiting + wait
        return usage, running, waiting


@dataclass
class Fleet:
    kvplan: Server
    prometheus: Prometheus
    groups: list[dict[str, Any]]
    big: Deployment  # three replicas, the middle one of two engines (data parallel)
    small: Deployment  # one replica
    answers: dict[str, dict[str, Any]] = field(default_factory=dict)

    @property
    def deployments(self) -> tuple[Deployment, Deployment]:
        return (self.big, self.small)


def scrape_config(d: Deployment) -> dict[str, Any]:
    """A static target list standing for Kubernetes discovery: the pod's namespace and app label
    relabelled onto the target as `namespace` and `deployment`."""
    return {
        "targets": [r.address for r in d.replicas],
        "labels": {"__meta_kubernetes_namespace": d.namespace, "__meta_kubernetes_pod_label_app": d.name},
    }


@pytest.fixture(scope="module")
def fleet(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Fleet]:
    directory = tmp_path_factory.mktemp("prometheus")
    (directory / "deployments.toml").write_text(FLEET)
    with ExitStack() as stack:
        kvplan = start_server(
            env={
                "KVPLAN_DEPLOYMENTS": str(directory / "deployments.toml"),
                "KVPLAN_DEPLOYMENTS_RELOAD_SECONDS": "1",
            }
        )
        stack.callback(kvplan.stop)
        made = []
        for (ns, name), engines in (
            (("serving", "llama-8b-h100"), (1, 2, 1)),
            (("research", "qwen3-8b-l40s"), (1,)),
        ):
            plan = httpx.get(f"{kvplan.url}/v1/deployments/{ns}/{name}").json()
            blocks, size = plan["series"]["num_gpu_blocks"], plan["series"]["block_size_tokens"]
            replicas = [
                VllmExporter(plan["model_name"], n, blocks, size, plan["inputs"].get("max_model_len") or 8192)
                for n in engines
            ]
            for r in replicas:
                r.start()
                stack.callback(r.stop)
            made.append(Deployment(ns, name, plan["series"], replicas))
        big, small = made
        rule = httpx.get(
            f"{kvplan.url}/v1/deployments/{big.namespace}/{big.name}/manifests?kind=prometheusrule"
        )
        groups = yaml.safe_load(rule.text)["spec"]["groups"]
        config = {
            "global": {"scrape_interval": "1s", "scrape_timeout": "1s", "evaluation_interval": "1s"},
            "scrape_configs": [
                {
                    "job_name": "kvplan",
                    "honor_labels": True,
                    "static_configs": [{"targets": [kvplan.url.removeprefix("http://")]}],
                },
                {
                    "job_name": "vllm",
                    "static_configs": [scrape_config(big), scrape_config(small)],
                    "relabel_configs": [
                        {"source_labels": ["__meta_kubernetes_namespace"], "target_label": "namespace"},
                        {"source_labels": ["__meta_kubernetes_pod_label_app"], "target_label": "deployment"},
                    ],
                },
            ],
        }
        prometheus = Prometheus(PROMETHEUS, directory, config, groups)
        stack.callback(prometheus.stop)
        yield Fleet(kvplan, prometheus, groups, big, small)


# Reading both sides -------------------------------------------------------------------------------


def recorded_terms(prometheus: Prometheus) -> dict[tuple[str, str], dict[str, float]]:
    """Every recorded term of every deployment, as Prometheus answers them now."""
    out: dict[tuple[str, str], dict[str, float]] = {}
    for s in prometheus.query('{__name__=~"kvplan:deployment_.+"}'):
        m = s["metric"]
        out.setdefault((m["namespace"], m["deployment"]), {})[m["__name__"]] = float(s["value"][1])
    return out


def shows_the_load(terms: dict[tuple[str, str], dict[str, float]], d: Deployment) -> bool:
    """Prometheus's sums are those of `d`'s ready replicas now, its mean prompt their traffic's."""
    t = terms.get(d.key, {})
    if set(t) != {*TERMS, REQUEST_RATE} or t[REQUEST_RATE] != 0:
        return False
    usage, running, waiting = d.totals()
    prompt = d.prompt_tokens or d.plan["context_tokens"]
    return (
        math.isclose(t["kvplan:deployment_kv_cache_usage:sum"], usage, rel_tol=1e-12, abs_tol=1e-12)
        and t["kvplan:deployment_requests_running:sum"] == running
        and t["kvplan:deployment_requests_waiting:sum"] == waiting
        and math.isclose(t["kvplan:deployment_mean_prompt_tokens"], prompt, rel_tol=1e-9)
    )


def settled(fleet: Fleet, seconds: float = 30) -> dict[tuple[str, str], dict[str, float]]:
    """Prometheus's terms once they show every deployment's current load and its count has not
    changed for SETTLE_SECONDS (so the count was evaluated from that load); AssertionError after
    `seconds`."""
    deadline = time.monotonic() + seconds
    since, counts = 0.0, None
    while True:
        terms = recorded_terms(fleet.prometheus)
        now = time.monotonic()
        if all(shows_the_load(terms, d) for d in fleet.deployments):
            seen = {d.key: terms[d.key][DESIRED] for d in fleet.deployments}
            if seen != counts:
                since, counts = now, seen
            elif now - since >= SETTLE_SECONDS:
                return terms
        else:
            counts = None
        if now > deadline:
            loads = {d.key: d.totals() for d in fleet.deployments}
            raise AssertionError(f"Prometheus did not settle on {loads}: {terms}\n{fleet.prometheus.log()}")
        time.sleep(0.2)


def kvplan_answer(fleet: Fleet, d: Deployment, terms: dict[str, float]) -> dict[str, Any]:
    """kvplan's answer for the ready replicas' /metrics and the mean prompt Prometheus computed
    (none without prompt traffic: kvplan counts context_tokens, as the rule does)."""
    body: dict[str, Any] = {"metrics": [httpx.get(r.url).text for r in d.ready()]}
    if d.prompt_tokens is not None:
        body["mean_prompt_tokens"] = terms["kvplan:deployment_mean_prompt_tokens"]
    answer = httpx.post(f"{fleet.kvplan.url}/v1/deployments/{d.namespace}/{d.name}/replicas", json=body)
    assert answer.status_code == 200, answer.text
    return dict(answer.json())


def prometheus_and_kvplan_agree(fleet: Fleet, state: str) -> None:
    """Every deployment's terms and count, Prometheus's against kvplan's, for the state now."""
    terms = settled(fleet)
    for d in fleet.deployments:
        answer = kvplan_answer(fleet, d, terms[d.key])
        differ = {
            term: (value, answer[name])
            for term, name in TERMS.items()
            if not math.isclose(value := terms[d.key][term], answer[name], rel_tol=1e-9, abs_tol=1e-12)
        }
        assert differ == {}, f"{state}, {d.namespace}/{d.name}: (Prometheus, kvplan) {differ}"
        assert terms[d.key][DESIRED] == answer["desired_replicas"]
        fleet.answers[f"{state} {d.name}"] = answer


# The tests ----------------------------------------------------------------------------------------


def test_prometheus_counts_the_replicas_kvplan_counts_idle_busy_queued_with_a_replica_down_and_back(fleet):
    big, small = fleet.big, fleet.small
    capacity = big.plan["kv_cache_capacity_tokens"]
    # Queued: 3 × 0.9 of a replica's KV, and a queue of half a replica's tokens on each: 5.25
    # replicas at 0.8, above max_replicas (5). With one replica down: 3.5, so 4.
    waiting = round(capacity / 2 / PROMPT_TOKENS)

    prometheus_and_kvplan_agree(fleet, "idle")

    for i, r in enumerate(big.replicas):  # 2.25 replicas of KV, and 2 prompts of context_tokens
        r.set_load(0.6, running=24, waiting=2 if i == 0 else 0)
    small.replicas[0].set_load(0.3, running=60, waiting=10)  # 70 requests of 51.2 a replica
    prometheus_and_kvplan_agree(fleet, "busy")

    big.prompt_tokens = PROMPT_TOKENS
    for r in big.replicas:
        r.add_prompts(30, PROMPT_TOKENS)
        r.set_load(0.9, running=40, waiting=waiting)
    prometheus_and_kvplan_agree(fleet, "queued")

    big.replicas[2].stop()
    prometheus_and_kvplan_agree(fleet, "a replica down")

    big.replicas[2].start()
    prometheus_and_kvplan_agree(fleet, "the replica back")

    counts = {
        s: fleet.answers[f"{s} {big.name}"]["desired_replicas"]
        for s in ("idle", "busy", "queued", "a replica down")
    }
    assert len(set(counts.values())) == 4, counts
    assert counts["idle"] == big.plan["min_replicas"]
    queued = fleet.answers[f"queued {big.name}"]
    assert (queued["desired_replicas"], queued["clamped_by"]) == (big.plan["max_replicas"], "max_replicas")
    assert fleet.answers[f"busy {small.name}"]["binding"] == "requests"
    assert fleet.answers[f"the replica back {big.name}"]["desired_replicas"] == counts["queued"]


def test_the_blocks_alert_names_the_engine_whose_num_gpu_blocks_is_not_the_plans(fleet):
    alert = next(
        r for g in fleet.groups for r in g["rules"] if r.get("alert") == "KvplanEngineBlocksDifferFromPlan"
    )
    planned, block_size = fleet.big.plan["num_gpu_blocks"], fleet.big.plan["block_size_tokens"]
    odd = fleet.big.replicas[1]  # two engines: engine 1 allocates 96 blocks fewer than planned
    odd.set_blocks(planned - 96, block_size, engine="1")
    try:
        deadline = time.monotonic() + 15
        while not (found := fleet.prometheus.query(alert["expr"])) and time.monotonic() < deadline:
            time.sleep(0.2)
    finally:
        odd.set_blocks(planned, block_size, engine="1")
    assert [s["metric"] for s in found] == [
        {
            "namespace": fleet.big.namespace,
            "deployment": fleet.big.name,
            "instance": odd.address,
            "engine": "1",
            "num_gpu_blocks": str(planned - 96),
        }
    ]
