"""/v1/simulate through the API."""

from __future__ import annotations

from kvplan.api.openapi import SIMULATE_EXAMPLES
from kvplan.core.limits import MAX_NUM_BLOCKS
from tests.seed import A

SEED_STORY = list(SIMULATE_EXAMPLES.values())[1]


def test_a_pool_given_directly_simulates_the_seed_story(client):
    r = client.post("/v1/simulate", json=SEED_STORY)
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["completed"] == 2 and body["preemptions"] == 0
    assert body["cache_hit_blocks"] == 2  # the second request reuses the two shared prefix blocks
    assert body["pool"] == "given" and body["registry_version"].startswith("reg-")


def test_a_pool_from_the_budget_inputs(client):
    req = {
        **{k: v for k, v in A.items() if k != "context_tokens"},  # group A's pool
        "workload": {"requests": [{"prompt_tokens": 8000, "output_tokens": 192}] * 8},
    }
    body = client.post("/v1/simulate", json=req).json()
    assert body["usable_blocks"] == 879 and body["block_size"] == 64
    assert body["formula_concurrency"] == 6
    assert body["completed"] == 8 and body["peak_running"] <= 8


def test_text_answer_summarises_the_simulation(client):
    text = client.post("/v1/simulate?format=text", json=next(iter(SIMULATE_EXAMPLES.values()))).text
    assert "prefix cache hits" in text and "worst-case formula holds" in text


def test_bad_workloads_get_4xx(client):
    def status(workload, **kw):
        return client.post(
            "/v1/simulate", json={"num_blocks": 20, "block_size": 16, "workload": workload, **kw}
        )

    assert status({"requests": [{"prompt_tokens": -3, "output_tokens": 2}]}).status_code == 400
    never = status({"requests": [{"prompt_tokens": 5000, "output_tokens": 2}]})
    assert never.status_code == 400 and "can never run" in never.json()["detail"]
    huge = status(
        {
            "generator": {
                "count": 100000,
                "arrival_rate": 1,
                "prompt": {"value": 16000000},
                "output": {"value": 10},
            }
        },
        num_blocks=MAX_NUM_BLOCKS,  # the largest pool taken: the workload alone is too large
    )
    assert huge.status_code == 400 and huge.json()["field"] == "workload"
    assert status({}).status_code == 400
    assert (
        client.post(
            "/v1/simulate", json={"workload": {"requests": [{"prompt_tokens": 5, "output_tokens": 2}]}}
        ).json()["field"]
        == "model"
    )
    hybrid = client.post(
        "/v1/simulate",
        json={
            "model": "gemma-3-27b",
            "gpu": "h100-sxm-80gb",
            "workload": {"requests": [{"prompt_tokens": 5, "output_tokens": 2}]},
        },
    )
    assert hybrid.status_code == 400 and hybrid.json()["field"] == "model"
