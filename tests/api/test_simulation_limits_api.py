"""/v1/simulate refuses work over its limits with a 400 naming the field, answers what it
accepts in bounded time, and stops (503) past its deadline or when the client goes away."""

from __future__ import annotations

import json
import time

import anyio
import pytest

from kvplan.api import offload
from kvplan.core.limits import (
    MAX_ARRIVAL_RATE,
    MAX_ARRIVAL_STEP,
    MAX_NUM_BLOCKS,
    MAX_SIMULATED_STEPS,
    MAX_TOTAL_TOKENS,
)

# Accepted, and about 1 s of work on these machines: 14M blocks of 1 token.
LONG = {
    "num_blocks": 200_000,
    "block_size": 1,
    "workload": {
        "generator": {
            "count": 10_000,
            "arrival_rate": 0.1,
            "prompt": {"value": 1000},
            "output": {"value": 400},
        }
    },
}


def post(client, body, within=1.0):
    t0 = time.perf_counter()
    r = client.post("/v1/simulate", json=body)
    assert time.perf_counter() - t0 < within
    return r


def requests(*items):
    return {"requests": [{"prompt_tokens": p, "output_tokens": o} for p, o in items]}


@pytest.mark.parametrize(
    ("budget", "prompt", "count"),
    [(1, 16_000_000, 2), (8, 16_000_000, 11), (16, 16_000_000, 21), (24, 16_000_000, 31)],
)
def test_a_tiny_token_budget_with_huge_prompts_is_a_400_naming_max_num_batched_tokens(
    client, budget, prompt, count
):
    r = post(
        client,
        {
            "num_blocks": MAX_NUM_BLOCKS,
            "block_size": 16,
            "max_num_seqs": budget,
            "max_num_batched_tokens": budget,
            "workload": requests(*[(prompt, 10)] * count),
        },
    )
    assert r.status_code == 400 and r.json()["field"] == "max_num_batched_tokens"
    assert f"limit is {MAX_SIMULATED_STEPS:,}" in r.json()["detail"]


def test_a_tiny_token_budget_with_a_short_prompt_is_answered(client):
    r = post(
        client,
        {
            "num_blocks": 100,
            "block_size": 16,
            "max_num_seqs": 1,
            "max_num_batched_tokens": 1,
            "workload": requests((1000, 10)),
        },
    )
    assert r.status_code == 200 and r.json()["steps"] == 1009


@pytest.mark.parametrize(
    ("count", "turns", "user_tokens"),
    [(1000, 64, 1000), (1, 64, 1 << 20), (50_000, 16, 500), (2000, 40, 2000)],
)
def test_many_conversation_turns_with_long_user_tokens_are_a_400_counting_the_history(
    client, count, turns, user_tokens
):
    r = post(
        client,
        {
            "num_blocks": MAX_NUM_BLOCKS,
            "block_size": 64,
            "workload": {
                "generator": {
                    "count": count,
                    "arrival_rate": 1,
                    "prompt": {"kind": "fixed", "value": 1000},
                    "output": {"kind": "fixed", "value": 100},
                    "conversations": {"share": 1, "turns": turns, "user_tokens": user_tokens},
                }
            },
        },
    )
    body = r.json()
    assert r.status_code == 400 and body["field"] == "workload"
    assert "every conversation turn with its history" in body["detail"]
    assert f"{MAX_TOTAL_TOKENS:,} tokens" in body["detail"]


@pytest.mark.parametrize("num_blocks", [MAX_NUM_BLOCKS + 1, 20_000_000, 2**31, 2**63])
def test_a_huge_num_blocks_is_a_400_naming_num_blocks(client, num_blocks):
    r = post(client, {"num_blocks": num_blocks, "block_size": 16, "workload": requests((10, 5))})
    assert r.status_code == 400 and r.json()["field"] == "num_blocks"
    assert f"{MAX_NUM_BLOCKS}" in r.json()["detail"]


def test_a_budget_that_makes_a_pool_above_the_limit_is_a_400_naming_num_blocks(client):
    r = post(
        client,
        {
            "model": "llama-3-70b",
            "gpu_memory_bytes": 1 << 50,
            "weights_bytes": 0,
            "workload": requests((10, 5)),
        },
    )
    assert r.status_code == 400 and r.json()["field"] == "num_blocks"
    assert f"{MAX_NUM_BLOCKS:,}" in r.json()["detail"]


def test_the_largest_pool_is_answered_at_once(client):
    r = post(
        client, {"num_blocks": MAX_NUM_BLOCKS, "block_size": 16, "workload": requests((100, 5))}, within=0.5
    )
    assert r.status_code == 200 and r.json()["usable_blocks"] == MAX_NUM_BLOCKS - 1


def generator(rate, count=10):
    return {
        "num_blocks": 1000,
        "block_size": 16,
        "workload": {
            "generator": {
                "count": count,
                "arrival_rate": rate,
                "prompt": {"value": 10},
                "output": {"value": 5},
            }
        },
    }


@pytest.mark.parametrize("rate", [5e-324, 1e-310, 1e-300, 1e-20, 1e-12])
def test_denormal_and_tiny_arrival_rates_are_a_400_naming_the_rate(client, rate):
    r = post(client, generator(rate))
    assert r.status_code == 400 and r.json()["field"] == "workload.generator.arrival_rate"
    assert f"{MAX_ARRIVAL_STEP:,}" in r.json()["detail"]


@pytest.mark.parametrize("rate", [0, -1, MAX_ARRIVAL_RATE * 10, 1e308])
def test_zero_negative_and_huge_arrival_rates_are_a_400_naming_the_rate(client, rate):
    r = post(client, generator(rate))
    assert r.status_code == 400 and r.json()["field"] == "workload.generator.arrival_rate"


def test_a_tiny_arrival_rate_within_the_limit_is_answered_with_arrivals_far_apart(client):
    body = post(client, generator(1e-9, count=2)).json()
    assert body["completed"] == 2 and 10**7 < body["steps"] <= MAX_ARRIVAL_STEP


def test_the_largest_arrival_rate_is_answered_with_every_request_at_step_zero(client):
    body = post(client, generator(MAX_ARRIVAL_RATE, count=200)).json()
    assert body["completed"] == 200 and body["series"][0]["step"] == 0 and body["peak_running"] > 1


def test_lengths_without_a_kind_are_fixed_as_before(client):
    tagged = generator(0.5)
    untagged = json.loads(json.dumps(tagged))
    tagged["workload"]["generator"]["prompt"] = {"kind": "fixed", "value": 10}
    assert untagged["workload"]["generator"]["prompt"] == {"value": 10}
    a, b = post(client, tagged), post(client, untagged)
    assert a.status_code == b.status_code == 200 and a.json() == b.json()


@pytest.mark.parametrize(
    ("length", "field"),
    [
        ({"kind": "uniform", "low": 9, "high": 3}, "workload.generator.prompt"),
        ({"kind": "lognormal", "mean": 100}, "workload.generator.prompt.sigma"),
        ({"kind": "gamma", "value": 5}, "workload.generator.prompt.kind"),
        ({"value": 0}, "workload.generator.prompt.value"),
        ({"low": 1, "high": 3}, "workload.generator.prompt.low"),
    ],
)
def test_a_bad_length_is_a_400_naming_its_field(client, length, field):
    body = generator(1)
    body["workload"]["generator"]["prompt"] = length
    r = post(client, body)
    assert r.status_code == 400 and r.json()["field"] == field


def test_a_simulation_past_its_deadline_is_a_503_within_a_second(client, monkeypatch):
    monkeypatch.setattr(offload, "_pool", offload._Pool(2, 8, 0.2))
    r = post(client, LONG)
    assert r.status_code == 503 and r.headers["retry-after"] == "5"
    assert "longer than 0.2 s" in r.json()["detail"] and "stopped at simulated step" in r.json()["detail"]


def test_a_simulation_stops_when_the_client_goes_away(client):
    """Drive the app as a server would: the body, then the client's disconnect."""
    body = json.dumps(LONG).encode()
    scope = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": "POST",
        "scheme": "http",
        "path": "/v1/simulate",
        "raw_path": b"/v1/simulate",
        "root_path": "",
        "query_string": b"",
        "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())],
        "client": ("127.0.0.1", 50000),
        "server": ("testserver", 80),
    }
    incoming = [{"type": "http.request", "body": body, "more_body": False}]
    sent = []

    async def receive():
        return incoming.pop(0) if incoming else {"type": "http.disconnect"}

    async def send(message):
        sent.append(message)

    t0 = time.perf_counter()
    anyio.run(client.app, scope, receive, send)
    assert time.perf_counter() - t0 < 1.0
    assert sent[0]["type"] == "http.response.start" and sent[0]["status"] == 499
    assert b"closed the connection" in b"".join(m.get("body", b"") for m in sent[1:])
