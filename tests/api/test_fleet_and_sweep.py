"""/v1/fleet and /v1/sweep through the API."""

from __future__ import annotations

import csv
import io

from tests.seed import B

SEED_B = {  # group B as a fleet: 8 of its cards, one TP=8 replica
    "model": B["model"],
    "workload": {"context_tokens": B["context_tokens"]},
    "weights_bytes": B["weights_bytes"],
    "fleet": [{"gpu": B["gpu"], "count": 8}],
    "layouts": [{"tensor_parallel_size": B["tensor_parallel_size"]}],
    "non_kv_bytes": B["non_kv_bytes"],
}


def test_fleet_answers_the_seed_row_with_labels(client, registry):
    r = client.post("/v1/fleet", json=SEED_B)
    assert r.status_code == 200, r.text
    body = r.json()
    tp8 = body["gpu_types"][0]["layouts"][0]
    assert (tp8["concurrency_per_replica"], tp8["pooled_concurrency"]) == (24, 192)
    assert body["registry_version"] == registry.version and body["engine"] == "vllm@e740bad"


def test_fleet_get_for_one_gpu_type(client):
    r = client.get(
        "/v1/fleet",
        params={"model": "llama-3-70b", "gpu": "h100-sxm-80gb", "count": 8, "context_tokens": 8192},
    )
    assert r.status_code == 200, r.text
    assert r.json()["gpu_types"][0]["best"]["name"] == "TP8"
    text = client.get(
        "/v1/fleet",
        params={
            "model": "llama-3-70b",
            "gpu": "h100-sxm-80gb",
            "count": 8,
            "context_tokens": 8192,
            "format": "text",
        },
    ).text
    assert "best: TP8" in text and "leave no KV budget" in text


def test_bad_fleets_get_4xx_naming_the_field(client):
    def bad(fleet, status=400):
        r = client.post("/v1/fleet", json={**SEED_B, "layouts": None, "fleet": fleet})
        assert r.status_code == status, r.text
        return r.json()

    assert bad([{"gpu": "pool-141gib", "count": 0}])["field"] == "fleet[0].count"
    assert bad([{"gpu": "h101", "count": 8}], 404)["field"] == "fleet[0].gpu"
    assert bad([])["field"] == "fleet"
    assert bad([{"gpu": "pool-141gib", "count": 1}] * 5000)["field"] == "fleet"
    r = client.post(
        "/v1/fleet", json={**SEED_B, "fleet": [{"gpu": "pool-141gib", "count": 8, "gpus_per_node": 4}]}
    )
    assert r.status_code == 400 and r.json()["field"] == "fleet[0].gpus_per_node"
    r = client.post("/v1/fleet", json={**SEED_B, "workload": {}})
    assert r.status_code == 400 and r.json()["field"] == "workload"


def test_sweep_over_context_is_monotone_and_comes_as_csv(client):
    params = {
        "model": "llama-3-70b",
        "gpu": "h100-sxm-80gb",
        "tensor_parallel_size": 4,
        "vary": "context_tokens",
        "values": "1024,4096,8192",
    }
    points = client.get("/v1/sweep", params=params).json()["points"]
    assert [p["value"] for p in points] == [1024, 4096, 8192]
    assert points[0]["guaranteed"] >= points[1]["guaranteed"] >= points[2]["guaranteed"]
    r = client.get("/v1/sweep", params={**params, "format": "csv"})
    assert r.headers["content-type"].startswith("text/csv")
    rows = list(csv.DictReader(io.StringIO(r.text)))
    assert [int(x["guaranteed"]) for x in rows] == [p["guaranteed"] for p in points]


def test_sweep_over_tp_dtype_and_utilization(client):
    base = {"model": "llama-3-70b", "gpu": "h100-sxm-80gb", "tensor_parallel_size": 4, "context_tokens": 8192}
    tp = client.get("/v1/sweep", params={**base, "vary": "tensor_parallel_size"}).json()["points"]
    assert [p["value"] for p in tp] == [1, 2, 4, 8]
    dt = client.get("/v1/sweep", params={**base, "vary": "kv_cache_dtype"}).json()["points"]
    assert dt[1]["value"] == "fp8" and dt[1]["guaranteed"] > dt[0]["guaranteed"]
    ut = client.get("/v1/sweep", params={**base, "vary": "gpu_memory_utilization"}).json()["points"]
    assert [p["guaranteed"] for p in ut] == sorted(p["guaranteed"] for p in ut)


def test_sweep_rejects_bad_axes_and_values(client):
    base = {"model": "llama-3-70b", "gpu": "h100-sxm-80gb", "tensor_parallel_size": 4}
    assert client.get("/v1/sweep", params={**base, "vary": "colour"}).json()["field"] == "vary"
    r = client.get("/v1/sweep", params={**base, "vary": "tensor_parallel_size", "values": "1,3"})
    assert r.status_code == 400 and r.json()["field"] == "values[1]"
    r = client.get("/v1/sweep", params={**base, "vary": "gpu_memory_utilization", "values": "0.5,nan"})
    assert r.status_code == 400
