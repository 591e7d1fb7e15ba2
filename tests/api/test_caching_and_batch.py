"""GET answers are cacheable (ETag, 304); the batch endpoint answers each scenario in order."""

from __future__ import annotations

from kvplan.api.schemas import MAX_BATCH

A = {"model": "llama-3-70b", "gpu": "pool-160gib", "weights_bytes": 130 * 1024**3, "context_tokens": 8192}


def test_get_carries_etag_and_if_none_match_gets_304(client):
    r = client.get("/v1/budget", params=A)
    etag = r.headers["etag"]
    assert r.headers["cache-control"].startswith("public")
    again = client.get("/v1/budget", params=A, headers={"If-None-Match": etag})
    assert again.status_code == 304
    assert again.content == b""
    assert again.headers["etag"] == etag


def test_etag_follows_the_normalized_request(client):
    plain = client.get("/v1/budget", params=A).headers["etag"]
    explicit = client.get("/v1/budget", params={**A, "tensor_parallel_size": 1}).headers["etag"]
    other = client.get("/v1/budget", params={**A, "context_tokens": 4096}).headers["etag"]
    text = client.get("/v1/budget", params={**A, "format": "text"}).headers["etag"]
    assert plain == explicit
    assert len({plain, other, text}) == 3


def test_batch_answers_each_scenario_in_order(client):
    scenarios = [
        A,
        {**A, "context_tokens": 131072},
        {**A, "tensor_parallel_size": 3},
        {**A, "model": "nope"},
        {**A, "context_tokens": "x"},
    ]
    r = client.post("/v1/budget/batch", json={"scenarios": scenarios})
    assert r.status_code == 200, r.text
    results = r.json()["results"]
    assert [x["index"] for x in results] == [0, 1, 2, 3, 4]
    assert results[0]["result"]["concurrency"]["guaranteed"] == 6
    assert results[1]["result"]["concurrency"]["guaranteed"] == 0
    assert results[2]["error"]["field"] == "scenarios[2].tensor_parallel_size"
    assert results[3]["error"]["status"] == 404
    assert results[4]["error"]["field"] == "scenarios[4].context_tokens"


def test_batch_limits_are_enforced(client):
    assert client.post("/v1/budget/batch", json={"scenarios": []}).status_code == 400
    too_many = client.post("/v1/budget/batch", json={"scenarios": [{"model": "x"}] * (MAX_BATCH + 1)})
    assert too_many.status_code == 400
    assert too_many.json()["field"] == "scenarios"


def test_repeated_scenarios_get_identical_answers_and_errors_are_never_kept(client):
    first = client.post("/v1/budget", json=A).content
    assert client.post("/v1/budget", json=A).content == first
    bad = {**A, "tensor_parallel_size": 3}
    assert client.post("/v1/budget", json=bad).status_code == 400
    assert client.post("/v1/budget", json=bad).status_code == 400
