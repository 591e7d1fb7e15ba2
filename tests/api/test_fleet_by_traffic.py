"""/v1/fleet sized for a request rate under latency targets: each layout's sustainable rate,
the replicas it needs, the cheapest mix; a concurrency target answers as before."""

from __future__ import annotations

import math

from litestar.testing import TestClient

TRAFFIC = {
    "count": 200,
    "prompt": {"kind": "lognormal", "mean": 1200, "sigma": 0.5},
    "output": {"kind": "lognormal", "mean": 200, "sigma": 0.5},
}
FLEET = {
    "model": "llama-3.1-8b",
    "workload": {"context_tokens": 4096},
    "fleet": [
        {"gpu": "h100-sxm-80gb", "count": 16, "cost_per_hour": 2.5},
        {"gpu": "l40s-48gb", "count": 16, "cost_per_hour": 0.9},
    ],
    "layouts": [{"tensor_parallel_size": 1}, {"tensor_parallel_size": 2}],
}


def test_a_rate_target_sizes_each_layout_by_its_sustainable_rate(client: TestClient) -> None:
    body = {**FLEET, "target_rate": 20, "slo": {"ttft_p90_ms": 800, "tpot_p99_ms": 50}, "traffic": TRAFFIC}
    r = client.post("/v1/fleet", json=body)
    assert r.status_code == 200, r.text
    t = r.json()["traffic"]
    assert t["target_rate_per_s"] == 20
    # Every GPU type and layout is answered (8B fits one L40S and one H100), each searched.
    assert {(x["gpu"], x["layout"]) for x in t["layouts"]} == {
        (g, f"TP{tp}") for g in ("h100-sxm-80gb", "l40s-48gb") for tp in (1, 2)
    }
    assert all(x["max_rate_per_s"] > 0 for x in t["layouts"])
    for x in t["layouts"]:
        if x["max_rate_per_s"] > 0:
            assert x["replicas_needed"] == math.ceil(20 / x["max_rate_per_s"])
            assert x["gpus_needed"] == x["replicas_needed"] * x["gpus_per_replica"]
        assert x["binding"]["constraint"] in (
            "kv_capacity",
            "max_num_seqs",
            "max_num_batched_tokens",
            "compute",
        )
    mix = t["cheapest_mix"]
    assert mix["rate_per_s"] >= 20
    assert mix["cost_per_hour"] == sum(p["cost_per_hour"] for p in mix["parts"])


def test_traffic_too_short_to_load_a_replica_sizes_no_layout_past_the_rates_it_tried(
    client: TestClient,
) -> None:
    """Ten requests meet every target at any rate: the search's ceiling is no replica's limit, so
    a million a second is not sized as ceiling-many replicas (the deployments file refuses it too)."""
    short = {**TRAFFIC, "count": 10}
    body = {**FLEET, "target_rate": 1e6, "slo": {"ttft_p90_ms": 5000}, "traffic": short}
    t = client.post("/v1/fleet", json=body).json()["traffic"]
    assert t["layouts"] and all("replicas_needed" not in x for x in t["layouts"]), t["layouts"]
    assert all("does not load one replica up to 1e+06/s" in x["reason"] for x in t["layouts"])
    assert "cheapest_mix" not in t


def test_a_concurrency_target_answers_without_traffic(client: TestClient) -> None:
    r = client.post("/v1/fleet", json={**FLEET, "target_concurrency": 100})
    assert r.status_code == 200 and "traffic" not in r.json()


def test_a_rate_target_needs_targets_and_a_shape(client: TestClient) -> None:
    r = client.post("/v1/fleet", json={**FLEET, "target_rate": 20, "traffic": TRAFFIC})
    assert r.status_code == 400 and r.json()["field"] == "slo"
    r = client.post("/v1/fleet", json={**FLEET, "slo": {"ttft_p90_ms": 500}, "traffic": TRAFFIC})
    assert r.status_code == 400 and r.json()["field"] == "target_rate"


def test_both_targets_at_once_are_refused(client: TestClient) -> None:
    body = {
        **FLEET,
        "target_rate": 5,
        "target_concurrency": 10,
        "slo": {"ttft_p90_ms": 500},
        "traffic": TRAFFIC,
    }
    r = client.post("/v1/fleet", json=body)
    assert r.status_code == 400 and r.json()["field"] == "target_rate"


def test_a_fleet_search_past_its_work_bound_is_refused_before_it_runs(client: TestClient) -> None:
    huge = {**TRAFFIC, "count": 100_000}
    body = {**FLEET, "target_rate": 5, "slo": {"ttft_p90_ms": 500}, "traffic": huge}
    r = client.post("/v1/fleet", json=body)
    assert r.status_code == 400 and r.json()["field"] == "traffic.count"


def test_a_fleet_of_a_million_requests_is_refused_from_their_count_before_any_is_generated(
    client: TestClient, monkeypatch
) -> None:
    """12 GPU types × 16 layouts of a million requests spent 50 s generating them, a layout at a time."""
    from kvplan.services import capacity

    def generated(*args):
        raise AssertionError("the workload was generated")

    monkeypatch.setattr(capacity, "planned_once", generated)
    body = {
        **FLEET,
        "target_rate": 10,
        "slo": {"ttft_p90_ms": 500},
        "traffic": {**TRAFFIC, "count": 1_000_000},
    }
    r = client.post("/v1/fleet", json=body)
    assert r.status_code == 400 and r.json()["field"] == "traffic.count", r.text
    assert "4 layouts" in r.json()["detail"] and "give fewer requests" in r.json()["detail"]


def test_a_slower_tokenizer_lowers_each_layouts_sustainable_rate(client: TestClient) -> None:
    """The fleet's searches run with the request's tokenizer rate, as /v1/capacity's do; without
    target_rate there is no search to time, and the rate is refused, not ignored."""
    body = {**FLEET, "target_rate": 20, "slo": {"ttft_p90_ms": 800, "tpot_p99_ms": 50}, "traffic": TRAFFIC}
    prior, slow = (
        client.post("/v1/fleet", json={**body, **extra}) for extra in ({}, {"tokenize_us_per_token": 300})
    )
    assert prior.status_code == slow.status_code == 200, slow.text
    rates = {
        name: {(x["gpu"], x["layout"]): x["max_rate_per_s"] for x in r.json()["traffic"]["layouts"]}
        for name, r in (("prior", prior), ("slow", slow))
    }
    assert all(rates["slow"][k] < rates["prior"][k] for k in rates["prior"])
    r = client.post("/v1/fleet", json={**FLEET, "tokenize_us_per_token": 2})
    assert r.status_code == 400 and r.json()["field"] == "tokenize_us_per_token"
