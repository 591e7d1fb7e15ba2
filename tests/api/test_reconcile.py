"""POST /v1/reconcile: a pasted log (and /metrics) in, the side-by-side out; every kind of bad
body a clear 4xx naming what was wrong."""

from __future__ import annotations

from pathlib import Path

import pytest

DATA = Path(__file__).parents[1] / "reconcile" / "data"
LOG = (DATA / "engine-0.33-tp2.log").read_text()
METRICS = (DATA / "metrics-0.33.txt").read_text()
OFFLINE = {"model": "llama-3.1-70b"}  # the log names a Hub id; tests plan it from the preset


def rows_of(body) -> dict:  # type: ignore[no-untyped-def]
    return {r["figure"]: r for r in body["rows"]}


def test_a_log_sent_as_curl_sends_it_answers_text_with_the_side_by_side(client):
    r = client.post(
        "/v1/reconcile?format=text",
        json={"log": LOG, "overrides": OFFLINE},
    )
    assert r.status_code == 200, r.text
    assert "gpu_kv_cache_tokens" in r.text and "exact" in r.text and "non_kv_bytes" in r.text


def test_the_kv_cache_size_and_concurrency_vllm_printed_are_reproduced(client):
    body = client.post("/v1/reconcile", json={"log": LOG, "overrides": OFFLINE}).json()
    rows = rows_of(body)
    assert rows["gpu_kv_cache_tokens"]["verdict"] == "exact" and rows["gpu_kv_cache_tokens"]["kvplan"] == 8448
    assert rows["max_concurrency"]["verdict"] == "exact"
    assert rows["requested_gib"]["verdict"] == "exact"
    assert body["engine"] == "vllm@0.33" and body["engine_source"] == "vLLM 0.33.0 (log)"
    assert body["observed_non_kv_bytes"] == round((72.85 - 65.72 - 1.29) * 1024**3)


def test_where_the_plan_parts_from_vllm_the_row_names_the_ledger_step(client):
    rows = rows_of(client.post("/v1/reconcile", json={"log": LOG, "overrides": OFFLINE}).json())
    assert rows["available_kv_gib"]["verdict"] == "differs"
    assert rows["available_kv_gib"]["step"] == "weights_bytes_per_gpu"  # the first term that differs


def test_a_metrics_scrape_reconciles_its_block_count_against_the_plan(client):
    sent = {"log": LOG, "metrics": METRICS, "overrides": OFFLINE}
    body = client.post("/v1/reconcile", json=sent).json()
    blocks = rows_of(body)["num_gpu_blocks"]
    assert (blocks["vllm"], blocks["kvplan"], blocks["verdict"]) == (528, 528, "exact")
    names = {f["name"]: f for f in body["figures"] if f["rank"] == "metrics"}
    assert names["num_requests_waiting"]["value"] == 7 and names["num_preemptions"]["value"] == 14


def test_what_ifs_answer_other_contexts_fp8_and_a_target(client):
    body = client.post(
        "/v1/reconcile", json={"log": LOG, "overrides": {**OFFLINE, "target_concurrency": 4}}
    ).json()
    questions = " | ".join(w["question"] for w in body["what_ifs"])
    assert "1,024 tokens" in questions and "fp8" in questions
    assert "gpu_memory_utilization" in questions and "tensor-parallel" in questions


def test_a_log_that_names_a_local_path_asks_for_the_model(client):
    log = b"vllm serve /models/llama --tensor-parallel-size 2\nAvailable KV cache memory: 2.0 GiB\n"
    r = client.post("/v1/reconcile", content=log, headers={"content-type": "text/plain"})
    assert r.status_code == 400 and r.json()["field"] == "overrides.model"


BAD = {
    "binary": (b"\x00\x01\x02GiB" * 100, "text/plain", "log"),
    "not UTF-8": (b"Available KV cache memory: \xff\xfe GiB", "text/plain", "log"),
    "no vLLM line": (b"hello\nworld\n", "text/plain", "log"),
    "empty": (b"   ", "text/plain", "log"),
}


@pytest.mark.parametrize(("body", "ctype", "field"), BAD.values(), ids=BAD.keys())
def test_a_body_that_is_not_a_vllm_log_is_a_400_naming_the_log(client, body, ctype, field):
    r = client.post("/v1/reconcile", content=body, headers={"content-type": ctype})
    assert r.status_code == 400, r.text
    assert r.json()["field"] == field


def test_metrics_that_are_not_the_exposition_format_are_a_400_naming_them(client):
    r = client.post("/v1/reconcile", json={"log": LOG, "metrics": "{not: metrics", "overrides": OFFLINE})
    assert r.status_code == 400 and r.json()["field"] == "metrics"


def test_a_body_over_the_limit_is_a_413(client):
    r = client.post("/v1/reconcile", content=b"x" * (13 << 20), headers={"content-type": "text/plain"})
    assert r.status_code == 413


def test_nothing_from_the_log_is_rendered_as_html(client):
    log = LOG.replace("meta-llama/Llama-3.1-70B-Instruct", "<script>alert(1)</script>")
    r = client.post("/v1/reconcile?format=text", json={"log": log, "overrides": OFFLINE})
    assert r.headers["content-type"].startswith("text/plain")
