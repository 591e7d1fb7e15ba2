"""GET answers are cacheable (ETag, 304); repeated scenarios are answered without running the core
again, errors and failures are never kept; the batch endpoint answers each scenario in order.

The answer cache is observed from outside, through /metrics: the route times every run of the core
in kvplan_core_compute_seconds{endpoint="budget"}, so its count says how often the core ran."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import httpx
import pytest
from litestar.testing import TestClient

from kvplan.api.app import create_app
from kvplan.presets import Registry
from kvplan.schemas import MAX_BATCH
from tests.metrics import sample, unasked
from tests.seed import A, C


def core_runs(client: TestClient) -> float:
    return sample(client.get("/metrics").text, "kvplan_core_compute_seconds_count", endpoint="budget")


def answers(client: TestClient, outcome: str) -> float:
    return sample(
        client.get("/metrics").text, "kvplan_calculations_total", endpoint="budget", outcome=outcome
    )


def asker(client: TestClient, method: str) -> Callable[..., httpx.Response]:
    if method == "POST":
        return lambda scenario, **kw: client.post("/v1/budget", json=scenario, **kw)
    return lambda scenario, **kw: client.get("/v1/budget", params=scenario, **kw)


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


@pytest.mark.parametrize("method", ["POST", "GET"])
def test_a_repeated_scenario_is_answered_without_running_the_core_again(client, method):
    ask = asker(client, method)
    scenario = unasked(A)
    runs = core_runs(client)
    first = ask(scenario)
    assert first.status_code == 200, first.text
    assert first.json()["num_blocks"] == 880
    assert core_runs(client) == runs + 1  # a new scenario is computed
    again = ask(scenario)
    assert again.content == first.content
    assert core_runs(client) == runs + 1  # the same one is not computed again
    assert ask(unasked(A)).status_code == 200
    assert core_runs(client) == runs + 2  # a different one is


@pytest.mark.parametrize("method", ["POST", "GET"])
def test_the_cache_keeps_explained_and_plain_answers_apart(client, method):
    ask = asker(client, method)
    scenario = unasked(A)
    plain = ask(scenario).json()
    runs = core_runs(client)
    explained = (
        client.post("/v1/budget?explain=true", json=scenario)
        if method == "POST"
        else client.get("/v1/budget", params={**scenario, "explain": "true"})
    ).json()
    assert "ledger" not in plain
    assert {s["name"]: s["value"] for s in explained["ledger"]}["num_blocks"] == 880
    assert core_runs(client) == runs + 1


@pytest.mark.parametrize("method", ["POST", "GET"])
def test_every_answer_is_counted_with_its_warnings_even_from_the_cache(client, method):
    ask = asker(client, method)
    scenario = unasked(C)  # group C: budget_insufficient
    runs, ok = core_runs(client), answers(client, "ok")
    warned = sample(client.get("/metrics").text, "kvplan_warnings_total", code="budget_insufficient")
    for _ in range(3):
        r = ask(scenario)
        assert r.status_code == 200 and "budget_insufficient" in [w["code"] for w in r.json()["warnings"]]
    text = client.get("/metrics").text
    assert core_runs(client) == runs + 1
    assert sample(text, "kvplan_calculations_total", endpoint="budget", outcome="ok") == ok + 3
    assert sample(text, "kvplan_warnings_total", code="budget_insufficient") == warned + 3


@pytest.mark.parametrize("method", ["POST", "GET"])
def test_bad_input_is_answered_afresh_every_time(client, method):
    ask = asker(client, method)
    bad = {**unasked(A), "tensor_parallel_size": 3}
    invalid = answers(client, "invalid")
    for i in range(3):
        r = ask(bad, headers={"X-Request-ID": f"bad-{method}-{i}"})
        assert r.status_code == 400, r.text
        assert r.json()["field"] == "tensor_parallel_size"
        assert r.json()["request_id"] == f"bad-{method}-{i}"  # this request's problem, not a kept one
    assert answers(client, "invalid") == invalid + 3


class FlakyRegistry(Registry):
    """The real presets, but GPU lookups fail while `failing` is set: a fault inside the answer."""

    failing = False

    def gpu(self, name: str, field: str = "gpu"):  # type: ignore[override]
        if self.failing:
            raise RuntimeError("injected fault")
        return super().gpu(name, field)


@pytest.fixture
def flaky(registry: Registry) -> Iterator[tuple[FlakyRegistry, TestClient]]:
    reg = FlakyRegistry(dict(registry.models), dict(registry.gpus), f"{registry.version}+flaky")
    with TestClient(create_app(registry=reg)) as c:
        yield reg, c


@pytest.mark.parametrize("method", ["POST", "GET"])
def test_a_failed_answer_is_not_kept_the_next_ask_computes_it(flaky, method):
    reg, client = flaky
    ask = asker(client, method)
    scenario = unasked(A)
    reg.failing = True
    assert ask(scenario).status_code == 500
    reg.failing = False
    runs = core_runs(client)
    r = ask(scenario)
    assert r.status_code == 200, r.text
    assert r.json()["num_blocks"] == 880
    assert core_runs(client) == runs + 1
    assert ask(scenario).content == r.content
    assert core_runs(client) == runs + 1  # the good answer is kept


def test_batch_answers_each_scenario_in_order(client):
    scenarios = [
        A,
        C,
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


def test_batch_computes_a_repeated_scenario_once(client):
    scenario = unasked(A)
    runs = core_runs(client)
    first = client.post("/v1/budget/batch", json={"scenarios": [scenario, scenario]}).json()["results"]
    assert core_runs(client) == runs + 1
    assert first[0]["result"] == first[1]["result"]
    assert first[0]["result"]["num_blocks"] == 880


def test_batch_keeps_an_answer_from_the_scenarios_second_batch(client):
    """A doorkeeper: a scenario seen in one batch only (a sweep, a one-off study) is not kept, so
    it evicts nothing; one an autoscaler repeats is kept from its second batch."""
    scenario = unasked(A)
    runs = core_runs(client)
    batch = {"scenarios": [scenario]}
    results = [client.post("/v1/budget/batch", json=batch).json()["results"] for _ in range(3)]
    assert core_runs(client) == runs + 2
    assert results[0] == results[1] == results[2]


def test_batch_limits_are_enforced(client):
    assert client.post("/v1/budget/batch", json={"scenarios": []}).status_code == 400
    too_many = client.post("/v1/budget/batch", json={"scenarios": [{"model": "x"}] * (MAX_BATCH + 1)})
    assert too_many.status_code == 400
    assert too_many.json()["field"] == "scenarios"
