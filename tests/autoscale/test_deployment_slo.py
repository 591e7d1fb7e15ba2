"""A deployment with latency targets: its plan searches the rate one replica sustains under them
(as POST /v1/capacity does for the same inputs), publishes it, and the replica rule counts the
observed request rate against it as a third term; a deployment whose targets cannot be planned
is a failure naming the field."""

from __future__ import annotations

import contextlib
import math
import tomllib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from litestar.testing import TestClient

from kvplan.api.app import create_app
from kvplan.api.settings import Settings
from tests.autoscale.conftest import FLEET
from tests.autoscale.test_deployments_api import series

NAME = ("chat", "assistant")
REPLICAS = "/v1/deployments/chat/assistant/replicas"
SCALING = ("namespace", "name", "target_utilization", "min_replicas", "max_replicas", "traffic")


def the_entry() -> dict[str, Any]:
    entries: list[dict[str, Any]] = tomllib.loads(FLEET.read_text())["deployment"]
    return next(d for d in entries if (d["namespace"], d["name"]) == NAME)


def idle(n: int) -> list[dict[str, float]]:
    return [{"kv_cache_usage_perc": 0.05, "num_requests_running": 2, "num_requests_waiting": 0}] * n


def test_the_published_rate_is_what_capacity_answers_for_the_same_inputs(fleet_client):
    entry = the_entry()
    body = {k: v for k, v in entry.items() if k not in SCALING} | {"workload": entry["traffic"]}
    body.pop("context_tokens")
    capacity = fleet_client.post("/v1/capacity", json=body)
    assert capacity.status_code == 200, capacity.text
    rate = capacity.json()["max_rate_per_s"]
    assert rate > 0
    published = series(fleet_client.get("/metrics").text)
    assert published["max_rate_per_s", *NAME] == rate
    assert not any(k[0] == "max_rate_per_s" and k[1:] != NAME for k in published)  # only with slo
    one = fleet_client.get("/v1/deployments/chat/assistant").json()
    assert one["series"]["max_rate_per_s"] == rate
    assert one["capacity"]["max_rate_per_s"] == rate and one["capacity"]["binding"]["constraint"]
    assert {k: v for k, v in one["inputs"]["slo"].items() if v is not None} == entry["slo"]
    text = fleet_client.get("/v1/deployments/chat/assistant?format=text").text
    assert "ttft_p90_ms ≤ 400, tpot_p99_ms ≤ 40" in text and f"{rate:.4g} requests/s a replica" in text
    other = fleet_client.get("/v1/deployments/serving/llama-8b-h100").json()
    assert "capacity" not in other and "max_rate_per_s" not in other["series"]


def test_an_observed_rate_past_the_replicas_sustained_rate_sets_the_count(fleet_client):
    rate = fleet_client.get("/v1/deployments/chat/assistant").json()["series"]["max_rate_per_s"]
    observed = 2.5 * 0.8 * rate  # 2.5 replicas' worth at target utilization 0.8: 3
    r = fleet_client.post(REPLICAS, json={"replicas": idle(2), "request_rate_per_s": observed})
    assert r.status_code == 200, r.text
    a = r.json()
    assert a["binding"] == "rate" and a["desired_replicas"] == 3
    assert a["replicas_for_rate"] == pytest.approx(2.5) and a["max_rate_per_s"] == rate
    assert a["replicas_for_rate"] > max(a["replicas_for_tokens"], a["replicas_for_requests"])
    assert [s["name"] for s in a["ledger"]][-3:] == [
        "replicas_for_rate",
        "unclamped_replicas",
        "desired_replicas",
    ]
    text = fleet_client.post(
        f"{REPLICAS}?format=text", json={"replicas": idle(2), "request_rate_per_s": observed}
    )
    assert "replicas for rate" in text.text and "← binds" in text.text.split("replicas for rate")[1]


def test_a_low_rate_leaves_the_kv_and_request_terms_to_count(fleet_client):
    busy = [{"kv_cache_usage_perc": 0.9, "num_requests_running": 60, "num_requests_waiting": 4}] * 3
    a = fleet_client.post(REPLICAS, json={"replicas": busy, "request_rate_per_s": 0.01}).json()
    assert a["binding"] == "tokens" and a["desired_replicas"] == math.ceil(a["replicas_for_tokens"] - 1e-9)


def test_without_the_observed_rate_the_count_says_it_left_the_term_out(fleet_client):
    a = fleet_client.post(REPLICAS, json={"replicas": idle(2)}).json()
    assert a["replicas_for_rate"] is None and a["binding"] != "rate"
    assert [x["code"] for x in a["warnings"]] == ["request_rate_not_given"]
    plain = fleet_client.post(
        "/v1/deployments/serving/llama-8b-h100/replicas", json={"replicas": idle(2)}
    ).json()
    assert plain["warnings"] == [] and plain["max_rate_per_s"] is None


def test_a_negative_rate_is_a_400_naming_it(fleet_client):
    r = fleet_client.post(REPLICAS, json={"replicas": idle(1), "request_rate_per_s": -1})
    assert r.status_code == 400 and r.json()["field"] == "request_rate_per_s"


ENTRY = (
    '[[deployment]]\nnamespace = "s"\nname = "{name}"\nmodel = "llama-3.1-8b"\ngpu = "h100-sxm-80gb"\n'
    "max_replicas = 2\n"
)
TRAFFIC = (
    "[deployment.traffic]\ncount = 100\n"
    'prompt = { kind = "fixed", value = 1000 }\noutput = { kind = "fixed", value = 100 }\n'
)


@contextlib.contextmanager
def served(tmp_path: Path, registry: Any, text: str) -> Iterator[TestClient]:
    """The service planning a deployments file of `text`."""
    path = tmp_path / "d.toml"
    path.write_text(text)
    with TestClient(create_app(Settings(deployments=str(path)), registry=registry)) as client:
        yield client


def listing(tmp_path: Path, registry: Any, text: str) -> dict[str, Any]:
    """GET /v1/deployments for a deployments file of `text`."""
    with served(tmp_path, registry, text) as client:
        answer: dict[str, Any] = client.get("/v1/deployments").json()
        return answer


@pytest.mark.parametrize(
    ("tables", "field", "words"),
    [
        ("[deployment.slo]\nttft_p90_ms = 500\n", "traffic", "traffic's shape"),
        (TRAFFIC, "slo", "latency targets"),
        ("[deployment.slo]\nttft_p90_ms = 0.001\n" + TRAFFIC, "slo", "no rate meets every target"),
        ("[deployment.slo]\nttft_p90_ms = 500\n" + TRAFFIC.replace("count = 100", "count = 0"),
         "traffic.count", ">= 1"),
        ("tokenize_us_per_token = 2.0\n", "tokenize_us_per_token", "give slo and traffic"),
    ],
)  # fmt: skip
def test_targets_that_cannot_be_planned_fail_the_entry_by_name(tmp_path, registry, tables, field, words):
    answer = listing(tmp_path, registry, ENTRY.format(name="bad") + tables + ENTRY.format(name="good"))
    assert [d["deployment"] for d in answer["deployments"]] == ["good"]
    [failure] = answer["failures"]
    assert failure["deployment"] == "s/bad" and failure["field"].endswith(field), failure
    assert words in failure["reason"], failure


VARIED = (
    "[deployment.slo]\nttft_p90_ms = 800\ntpot_p99_ms = 60\n" + TRAFFIC.replace("count = 100", "count = 200")
    + "[deployment.vary]\nmax_num_seqs = [8, 256]\nmax_num_batched_tokens = [2048, 8192]\n"
)  # fmt: skip


def test_with_vary_the_plan_takes_the_settings_that_sustain_the_most_and_vllm_args_use_them(
    tmp_path, registry
):
    with served(tmp_path, registry, ENTRY.format(name="tuned") + VARIED) as client:
        one = client.get("/v1/deployments/s/tuned").json()
        sweep = one["sweep"]
        assert len(sweep["variants"]) == 4 and sweep["best"] == sweep["variants"][0]
        rates = [v["rate_per_gpu_per_s"] for v in sweep["variants"]]
        assert rates == sorted(rates, reverse=True) and rates[0] > rates[-1]
        best = sweep["best"]["settings"]
        assert {k: one["inputs"][k] for k in best} == best
        assert one["series"]["max_rate_per_s"] == sweep["best"]["max_rate_per_s"]
        assert one["series"]["max_num_seqs"] == best["max_num_seqs"]
        args = client.get("/v1/deployments/s/tuned/manifests?kind=vllm-args").text
        assert f"--max-num-seqs={best['max_num_seqs']}" in args
        assert f"--max-num-batched-tokens={best['max_num_batched_tokens']}" in args


def test_vary_without_targets_fails_the_entry_naming_vary(tmp_path, registry):
    text = ENTRY.format(name="bad") + "[deployment.vary]\nmax_num_seqs = [8, 256]\n"
    [failure] = listing(tmp_path, registry, text)["failures"]
    assert failure["field"] == "vary" and "slo and traffic" in failure["reason"]


def test_no_ready_replica_at_an_observed_rate_counts_the_rate_and_says_nothing_of_min_replicas(fleet_client):
    a = fleet_client.post(REPLICAS, json={"replicas": [], "request_rate_per_s": 40}).json()
    assert a["binding"] == "rate" and a["desired_replicas"] > 1 and a["warnings"] == []


def test_a_rate_given_for_a_deployment_without_targets_is_said_to_be_unused(fleet_client):
    url = "/v1/deployments/serving/llama-8b-h100/replicas"
    a = fleet_client.post(url, json={"replicas": idle(1), "request_rate_per_s": 40}).json()
    assert [x["code"] for x in a["warnings"]] == ["request_rate_unused"] and a["replicas_for_rate"] is None


def test_a_traffic_past_the_work_bound_fails_naming_the_entrys_own_field(tmp_path, registry):
    big = TRAFFIC.replace("count = 100", "count = 100000").replace("value = 100 }", "value = 4000 }")
    text = ENTRY.format(name="big") + "[deployment.slo]\nttft_p90_ms = 500\n" + big
    [failure] = listing(tmp_path, registry, text)["failures"]
    assert failure["field"] == "traffic.count", failure
    assert "search.max_points" not in failure["reason"] and "workload" not in failure["reason"]


def test_a_file_of_more_searched_deployments_than_the_limit_is_refused_whole(tmp_path, registry):
    from kvplan.core.limits import MAX_SLO_DEPLOYMENTS

    one = "[deployment.slo]\nttft_p90_ms = 500\n" + TRAFFIC
    text = "".join(ENTRY.format(name=f"d{i}") + one for i in range(MAX_SLO_DEPLOYMENTS + 1))
    answer = listing(tmp_path, registry, text)
    assert answer["deployments"] == [] and answer["failures"][0]["field"] == "slo"
    assert f"at most {MAX_SLO_DEPLOYMENTS}" in answer["failures"][0]["reason"]


def test_an_unchanged_entry_reuses_its_search_when_the_file_is_read_again(registry):
    from kvplan.services.deployments import parse, plan_all

    parsed = parse(FLEET.read_bytes())
    first = plan_all(registry, parsed, "a", None)
    calls = []
    again = plan_all(registry, parsed, "b", first, should_stop=lambda: calls.append(1) or False)
    assert again.plans[NAME].rate is first.plans[NAME].rate and calls == []


def test_traffic_too_short_to_load_a_replica_fails_the_entry_rather_than_publish_a_rate(tmp_path, registry):
    short = TRAFFIC.replace("count = 100", "count = 20").replace("value = 100 }", "value = 10 }")
    text = ENTRY.format(name="short") + "[deployment.slo]\nttft_p90_ms = 5000\n" + short
    [failure] = listing(tmp_path, registry, text)["failures"]
    assert failure["field"] == "traffic" and "does not load one replica" in failure["reason"], failure


def test_traffic_longer_than_max_model_len_is_refused_as_vllm_refuses_it(fleet_client):
    body = {
        "model": "llama-3.1-8b",
        "gpu": "h100-sxm-80gb",
        "max_model_len": 4096,
        "slo": {"ttft_p90_ms": 1000},
        "workload": {
            "count": 50,
            "prompt": {"kind": "fixed", "value": 8000},
            "output": {"kind": "fixed", "value": 10},
        },
    }
    r = fleet_client.post("/v1/capacity", json=body)
    assert r.status_code == 400 and r.json()["field"] == "workload.prompt"
    assert "50 of 50 requests" in r.json()["detail"] and "max_model_len (4,096)" in r.json()["detail"]
