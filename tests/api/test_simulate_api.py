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


TIMED = {
    "model": "llama-3.1-8b",
    "gpu": "h100-sxm-80gb",
    "goodput": {"ttft_ms": 150, "tpot_ms": 8},
    "workload": {
        "generator": {
            "count": 120,
            "concurrency": 16,
            "prompt": {"kind": "fixed", "value": 1024},
            "output": {"kind": "fixed", "value": 128},
        }
    },
}


def test_a_timed_text_answer_reads_in_a_terminal_with_the_models_error_under_the_latency(client):
    answer = client.post("/v1/simulate", json=TIMED).json()
    lines = client.post("/v1/simulate?format=text", json=TIMED).text.splitlines()
    assert all(len(line) <= 100 for line in lines[1:]), [line for line in lines[1:] if len(line) > 100]
    table = lines.index(next(line for line in lines if line.lstrip().startswith("latency per request")))
    assert lines[table].split()[-4:] == ["mean", "p50", "p90", "p99"]
    names = [line[2:26].strip() for line in lines[table + 1 : table + 6]]
    assert names == ["queued before first step", "time to first token", "time per output token",
                     "inter-token latency", "end-to-end latency"]  # fmt: skip
    ttft = answer["latency"]["ttft_ms"]
    assert lines[table + 2][26:].split() == [
        part for p in ("mean", "p50", "p90", "p99") for part in (f"{ttft[p]:,.1f}", "ms")
    ]
    # The model's measured error right under the figures it qualifies; the exact ones said apart.
    assert lines[table + 6].lstrip().startswith("model's error")
    assert answer["timing"]["validation"].split()[:6] == lines[table + 6].split()[2:8]
    assert (
        lines[table - 1].startswith("modelled: ") and "exact: vLLM 0.33's scheduler, step for step" in lines
    )
    text = " ".join(" ".join(lines).split())
    assert "Exact as vLLM 0.33 runs it" in text and "Modelled: each step's duration" in text
    assert "Exact: exact" not in text and "Modelled: modelled" not in text
    assert "peak 16 (sent and not yet finished)" in text
    g = answer["goodput"]
    assert f"{g['requests_met']:,} of 120" in text and "met TTFT ≤ 150.0 ms, TPOT ≤ 8.00 ms" in text


def test_a_long_wait_reads_in_seconds_a_short_one_in_milliseconds():
    from kvplan.render import _duration

    assert [_duration(ms) for ms in (7.564, 141.28, 9_999.9, 2_195_412.9)] == [
        "7.56 ms", "141.3 ms", "9,999.9 ms", "2,195.4 s"]  # fmt: skip
