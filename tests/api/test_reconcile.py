"""POST /v1/reconcile: a pasted log (and /metrics) in, the side-by-side out; every kind of bad
body a clear 4xx naming what was wrong."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

DATA = Path(__file__).parents[1] / "reconcile" / "data"
LOG = (DATA / "engine-0.33-tp2.log").read_text()
METRICS = (DATA / "metrics-0.33.txt").read_text()
OFFLINE = {"model": "llama-3.1-70b"}  # the log names a Hub id; tests plan it from the preset


def rows_of(body) -> dict:  # type: ignore[no-untyped-def]
    return {r["figure"]: r for r in body["rows"]}


def metrics_refusal(client, metrics: str) -> tuple[int, str | None]:
    """The status and the field named when the test log is reconciled beside this scrape."""
    r = client.post("/v1/reconcile", json={"log": LOG, "metrics": metrics, "overrides": OFFLINE})
    return r.status_code, r.json().get("field")


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
    assert "requested_gib" not in rows  # the GPU's size was read from it: no check in comparing it
    memory = next(u for u in body["inputs"] if u["name"] == "gpu_memory_bytes")
    assert "requested ÷ utilization" in memory["source"]
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


def test_a_log_that_names_an_unknown_local_path_answers_what_it_read_and_asks_for_the_model(client):
    log = b"vllm serve /models/llama --tensor-parallel-size 2\nAvailable KV cache memory: 2.0 GiB\n"
    r = client.post("/v1/reconcile", content=log, headers={"content-type": "text/plain"})
    body = client.post("/v1/reconcile", json={"log": log.decode()}).json()
    assert r.status_code == 200 and body["plan"] is None
    assert "overrides.model" in body["not_planned"] and "/models/llama" in body["not_planned"]
    assert any(f["name"] == "available_kv_gib" for f in body["figures"])


def test_a_local_path_named_like_a_preset_plans_that_preset_and_says_it_inferred_it(client):
    log = LOG.replace(
        "'model': 'meta-llama/Llama-3.1-70B-Instruct'", "'model': '/data/models/Llama-3.1-70B-Instruct/'"
    )
    body = client.post("/v1/reconcile", json={"log": log}).json()
    model = next(u for u in body["inputs"] if u["name"] == "model")
    assert model["value"] == "llama-3.1-70b" and model["source"].startswith("inferred")
    assert body["plan"] is not None and body["not_planned"] is None


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
    assert metrics_refusal(client, "{not: metrics") == (400, "metrics")


def test_a_body_over_the_limit_is_a_413(client):
    r = client.post("/v1/reconcile", content=b"x" * (13 << 20), headers={"content-type": "text/plain"})
    assert r.status_code == 413


def test_nothing_from_the_log_is_rendered_as_html(client):
    log = LOG.replace("meta-llama/Llama-3.1-70B-Instruct", "<script>alert(1)</script>")
    r = client.post("/v1/reconcile?format=text", json={"log": log, "overrides": OFFLINE})
    assert r.headers["content-type"].startswith("text/plain")


# What an adversarial review found, each now a clear answer.


@pytest.mark.parametrize("bad", ['num_gpu_blocks="inf"', 'num_gpu_blocks="1e400"'])
def test_metrics_with_infinite_counts_are_a_400_naming_them(client, bad):
    metrics = METRICS.replace('num_gpu_blocks="528"', bad)
    assert metrics_refusal(client, metrics) == (400, "metrics")
    running = METRICS.replace(
        '"meta-llama/Llama-3.1-70B-Instruct"} 2.0', '"meta-llama/Llama-3.1-70B-Instruct"} +Inf'
    )
    assert metrics_refusal(client, running) == (400, "metrics")


def test_a_metrics_line_with_thousands_of_labels_is_refused_before_parsing(client):
    labels = ",".join(f'l{i}="x"' for i in range(5000))
    metrics = f"vllm:num_requests_running{{{labels}}} 1\n"
    assert metrics_refusal(client, metrics) == (400, "metrics")


def test_a_line_of_repeated_flags_does_not_inflate_the_answer(client):
    log = "vllm serve llama-3.1-8b " + "--dtype a " * 1600 + "\nAvailable KV cache memory: 5 GiB\n"
    body = log * 40
    r = client.post("/v1/reconcile", content=body.encode(), headers={"content-type": "text/plain"})
    assert r.status_code == 200, r.text
    assert len(r.content) < 400_000 and r.json()["figures"]


def test_rank_zero_is_read_before_other_workers(client):
    log = ("(VllmWorker rank=1 pid=8) INFO Model loading took 9.10 GiB and 3 s\n"
           "(VllmWorker rank=0 pid=7) INFO Model loading took 14.96 GiB and 3 s\n"
           "Requested memory: 0.9 (util), 71.27 GiB\nAvailable KV cache memory: 52.10 GiB\n")  # fmt: skip
    r = client.post(
        "/v1/reconcile", json={"log": log, "overrides": {"model": "llama-3.1-8b", "tensor_parallel_size": 1}}
    )
    weights = rows_of(r.json())["weights_gib"]
    assert (weights["vllm"], weights["verdict"]) == (14.96, "exact")


def test_vllm_serve_with_a_model_flag_reads_the_model_not_the_flag(client):
    log = "vllm serve --model llama-3.1-8b --max-model-len 8192\nAvailable KV cache memory: 5 GiB\n"
    r = client.post("/v1/reconcile", content=log.encode(), headers={"content-type": "text/plain"})
    assert r.status_code == 200 and r.json()["model"] == "llama-3.1-8b"


def test_engine_arguments_followed_by_another_brace_on_the_line_are_still_read(client):
    log = "non-default args: {'model': 'llama-3.1-8b', 'max_model_len': 4096} and later {'a': 1}\n"
    log += "Available KV cache memory: 5 GiB\n"
    body = client.post("/v1/reconcile", content=log.encode(), headers={"content-type": "text/plain"}).json()
    assert body["model"] == "llama-3.1-8b"
    assert {u["name"]: u["value"] for u in body["inputs"]}["max_model_len"] == 4096


def test_a_figure_out_of_range_is_said_beside_what_was_read_not_refused(client):
    log = LOG.replace(
        "Available KV cache memory: 1.29 GiB", "Available KV cache memory: 999999999999999999999 GiB"
    )
    r = client.post("/v1/reconcile", json={"log": log, "overrides": OFFLINE})
    assert r.status_code == 200 and "figure of the log" in r.json()["not_planned"]
    assert r.json()["figures"]


def test_a_text_log_over_the_limit_is_a_413(client):
    r = client.post("/v1/reconcile", content=b"Available KV cache memory: 1 GiB\n" * 300_000,
                    headers={"content-type": "text/plain"})  # fmt: skip
    assert r.status_code == 413


def test_contradictory_figures_give_no_overhead_and_say_why(client):
    log = "Requested memory: 0.9 (util), 10.00 GiB\nModel loading took 14.99 GiB\n"
    log += "Available KV cache memory: 5 GiB\n"
    body = client.post("/v1/reconcile", json={"log": log, "overrides": {"model": "llama-3.1-8b"}}).json()
    assert body["observed_non_kv_bytes"] is None and "contradict" in body["observed_non_kv_note"]


@pytest.mark.parametrize(
    ("overrides", "field"),
    [({"model": ""}, "overrides.model"), ({**OFFLINE, "context_tokens": 10**9}, "overrides.context_tokens")],
)
def test_overrides_that_make_no_sense_are_a_400_naming_them(client, overrides, field):
    r = client.post("/v1/reconcile", json={"log": LOG, "overrides": overrides})
    assert r.status_code == 400 and r.json()["field"] == field


def test_answers_are_never_content_sniffed(client):
    r = client.post("/v1/reconcile?format=text", json={"log": LOG, "overrides": OFFLINE})
    assert r.headers["x-content-type-options"] == "nosniff"


def test_a_log_whose_hub_model_cannot_be_fetched_plans_the_preset_of_its_name_and_says_so(client):
    r = client.post("/v1/reconcile", content=LOG.encode(), headers={"content-type": "text/plain"})
    body = client.post("/v1/reconcile", json={"log": LOG}).json()
    assert r.status_code == 200
    model = next(u for u in body["inputs"] if u["name"] == "model")
    assert model["value"] == "llama-3.1-70b" and "the Hub" in model["source"]


def test_a_log_whose_hub_model_cannot_be_fetched_nor_matched_says_which_field_plans_it(client):
    body = client.post("/v1/reconcile", json={"log": LOG.replace("Llama-3.1-70B", "Lama-9-70B")}).json()
    assert body["plan"] is None and "overrides.hf_config" in body["not_planned"]


def test_a_json_request_with_a_bad_override_is_a_400_whatever_its_content_type(client):
    body = json.dumps({"log": LOG, "overrides": {"modell": "x"}}).encode()
    r = client.post("/v1/reconcile", content=body, headers={"content-type": "text/plain"})
    assert r.status_code == 400 and "modell" in r.text


def test_metrics_labels_cannot_hide_behind_unicode_line_separators(client):
    labels = "\u2028".join(f'l{i}="x"' for i in range(3000))
    metrics = f"vllm:num_requests_running{{{labels}}} 1\n"
    assert metrics_refusal(client, metrics) == (400, "metrics")


def test_an_unknown_gpu_override_is_named_as_the_override(client):
    r = client.post("/v1/reconcile", json={"log": LOG, "overrides": {**OFFLINE, "gpu": "nope"}})
    assert r.status_code == 404 and r.json()["field"] == "overrides.gpu"


def test_a_quantization_the_checkpoint_already_states_is_shown_ignored(client):
    log = "non-default args: {'model': 'gpt-oss-20b', 'quantization': 'fp8'}\n"
    log += "Available KV cache memory: 5 GiB\n"
    body = client.post("/v1/reconcile", json={"log": log, "overrides": {"gpu": "h100-sxm-80gb"}}).json()
    used = {u["name"]: u["source"] for u in body["inputs"]}
    assert "ignored: the checkpoint states its own" in used["quantization"]


def test_the_weights_the_log_printed_are_the_plans_and_kvplans_own_are_beside_them(client):
    body = client.post("/v1/reconcile", json={"log": LOG, "overrides": OFFLINE}).json()
    used = {u["name"]: u for u in body["inputs"]}
    assert used["weights_bytes"]["source"].startswith("log line 4: 65.72 GiB a GPU × 2 GPUs")
    assert body["plan"]["weights_bytes_per_gpu"] == round(65.72 * 1024**3)
    weights = rows_of(body)["weights_gib"]
    assert weights["note"] == "kvplan's own weights; the plan uses the log's"


def test_the_log_is_checked_against_itself(client):
    body = client.post("/v1/reconcile", json={"log": LOG, "overrides": OFFLINE}).json()
    checks = {c["name"]: c for c in body["checks"]}
    assert checks["available_kv_gib"]["verdict"] in ("exact", "within rounding")
    assert checks["available_kv_gib"]["formula"].startswith("requested − weights")


# vLLM 0.6.3's line formats (vllm/engine/llm_engine.py, vllm/worker/worker.py, gpu_executor.py).
V0_LOG = (DATA / "v0-0.6.3-llama-3-8b.log").read_text()


def test_a_v0_log_is_judged_by_the_v0_engines_rules_to_the_block(client):
    body = client.post("/v1/reconcile", json={"log": V0_LOG}).json()
    assert body["engine"] == "vllm@v0"
    rows = rows_of(body)
    assert rows["num_gpu_blocks"]["verdict"] == "exact" and rows["num_gpu_blocks"]["kvplan"] == 27873
    assert rows["max_concurrency"]["verdict"] == "exact"


def test_a_v0_logs_non_kv_memory_is_not_judged_by_a_model_no_v0_log_fitted(client):
    rows = rows_of(client.post("/v1/reconcile", json={"log": V0_LOG}).json())
    assert rows["non_torch_gib"]["verdict"] == "not modelled for this engine"
    assert rows["available_kv_gib"]["verdict"] == "not modelled for this engine"


def _fixture(name: str) -> str:
    return (DATA / name).read_text()


def test_a_failed_start_up_is_the_answers_first_line_and_says_whether_kvplan_predicts_it(client):
    sent = {"log": _fixture("v1-0.33-failed-negative-kv.log"),
            "overrides": {"model": "llama-3.1-70b", "gpu": "h100-sxm-80gb"}}  # fmt: skip
    body = client.post("/v1/reconcile", json=sent).json()
    assert body["failure"]["kind"] == "negative_kv_memory"
    assert body["failure"]["kvplan_predicts"] is not None
    text = client.post(
        "/v1/reconcile?format=text", json={"log": _fixture("v1-0.33-failed-negative-kv.log")}
    ).text
    assert text.splitlines()[2].startswith("THE ENGINE DID NOT START")


def test_tensor_parallelism_the_ranks_imply_is_planned_and_said_inferred(client):
    body = client.post("/v1/reconcile", json={"log": _fixture("v1-0.19-tp4-ranks-only.log")}).json()
    tp = next(u for u in body["inputs"] if u["name"] == "tensor_parallel_size")
    assert tp["value"] == 4 and tp["source"].startswith("inferred")


def test_a_log_that_prints_no_version_is_judged_by_the_release_its_source_lines_point_to(client):
    log = "\n".join(line for line in LOG.splitlines() if "version" not in line and "LLM engine" not in line)
    body = client.post("/v1/reconcile", json={"log": log, "overrides": OFFLINE}).json()
    assert body["engine"] != "vllm@e740bad" and "inferred" in body["engine_source"]


def test_the_logs_weights_are_not_used_where_a_gpu_holds_more_than_the_models_share(client):
    # With LoRA slots loaded beside them, "Model loading took" is not the model ÷ TP: kvplan weighs it.
    log = LOG.replace(
        "'gpu_memory_utilization': 0.92}", "'gpu_memory_utilization': 0.92, 'enable_lora': True}"
    )
    body = client.post("/v1/reconcile", json={"log": log, "overrides": OFFLINE}).json()
    assert "weights_bytes" not in {u["name"] for u in body["inputs"]}
    assert body["plan"]["lora_bytes_per_gpu"] > 0


def test_the_dtype_the_log_prints_is_the_engines_served_dtype_not_its_weights(client):
    body = client.post("/v1/reconcile", json={"log": _fixture("v1-0.33-failed-negative-kv.log"),
                                              "overrides": {"model": "llama-3.1-70b"}}).json()  # fmt: skip
    used = {u["name"]: u["value"] for u in body["inputs"]}
    assert used.get("dtype") == "bfloat16" and "weight_dtype" not in used


def test_engine_arguments_the_parser_refuses_are_said_not_silently_dropped(client):
    line = ("INFO [utils.py:233] non-default args: {'model': 'meta-llama/Llama-3.1-8B-Instruct', "
            "'tensor_parallel_size': 4, 'speculative_config': {'model': 'meta-llama/Llama-3.2-1B', "
            "'num_speculative_tokens': 5, 'draft_tensor_parallel_size': 1}}\n")  # fmt: skip
    body = client.post("/v1/reconcile", json={"log": line + "Available KV cache memory: 20.00 GiB\n",
                                              "overrides": {"model": "llama-3.1-8b"}}).json()  # fmt: skip
    said = next(u for u in body["inputs"] if u["name"] == "engine flags")
    assert "draft_tensor_parallel_size" in said["source"]
    assert next(u for u in body["inputs"] if u["name"] == "tensor_parallel_size")["value"] == 4


def test_a_gpt_oss_log_that_ran_marlin_is_planned_with_marlins_padding(client):
    """vLLM issue #23278's lines (0.10.1, H100): Marlin's FP4 warning names the experts' kernel, so
    the plan pads them as Marlin does, and the weights come within 0.1 GiB of the 65.97 GiB printed
    (60.8 GiB as the checkpoint holds them)."""
    log = (DATA / "v1-0.10.1-gpt-oss-marlin.log").read_text()
    body = client.post("/v1/reconcile", json={"log": log, "overrides": {"gpu": "h100-sxm-80gb"}}).json()
    used = {u["name"]: u for u in body["inputs"]}
    assert used["moe_backend"]["value"] == "marlin" and used["moe_backend"]["source"] == "log line 7"
    weights = rows_of(body)["weights_gib"]
    assert weights["vllm"] == 65.9651 and abs(weights["kvplan"] - 65.9651) < 0.1


def test_marlins_fp4_warning_is_no_moe_kernel_for_a_model_without_mxfp4_experts(client):
    log = LOG + (
        "WARNING 08-20 18:04:08 [marlin_utils_fp4.py:196] Your GPU does not have native support for FP4 "
        "computation but FP4 quantization is being used. Weight-only FP4 compression will be used "
        "leveraging the Marlin kernel.\n"
    )
    body = client.post("/v1/reconcile", json={"log": log, "overrides": OFFLINE}).json()
    (u,) = [u for u in body["inputs"] if u["name"] == "moe_backend"]
    assert "ignored" in u["source"]
    assert rows_of(body)["gpu_kv_cache_tokens"]["kvplan"] == 8448


MARLIN_LOG = (DATA / "v1-0.10.1-gpt-oss-marlin.log").read_bytes()
TEXT = {"content-type": "text/plain"}


def test_a_text_log_is_given_the_gpu_it_does_not_print_as_a_query_parameter(client):
    """#23278's lines print no GPU: sent as text, the answer asks for one; ?gpu= gives it, as a JSON
    body's overrides do, and the plan comes out the same."""
    bare = client.post("/v1/reconcile", content=MARLIN_LOG, headers=TEXT).json()
    assert bare["plan"] is None and "overrides.gpu" in bare["not_planned"]
    text = client.post("/v1/reconcile?format=text", content=MARLIN_LOG, headers=TEXT).text
    assert "?<name>= beside a text log" in text
    given = client.post("/v1/reconcile?gpu=h100-sxm-80gb", content=MARLIN_LOG, headers=TEXT).json()
    as_json = {"log": MARLIN_LOG.decode(), "overrides": {"gpu": "h100-sxm-80gb"}}
    assert given == client.post("/v1/reconcile", json=as_json).json()
    assert given["plan"] is not None and abs(rows_of(given)["weights_gib"]["kvplan"] - 65.9651) < 0.1


def test_query_overrides_add_to_a_json_bodys_and_two_values_for_one_field_are_refused(client):
    sent = {"log": MARLIN_LOG.decode(), "overrides": {"gpu": "a100-80gb"}}
    added = client.post("/v1/reconcile?tensor_parallel_size=2", json=sent).json()
    used = {u["name"]: u["value"] for u in added["inputs"]}
    assert used["tensor_parallel_size"] == 2 and used["gpu"] == "a100-80gb" and added["plan"] is not None
    r = client.post("/v1/reconcile?gpu=h100-sxm-80gb", json=sent)
    assert r.status_code == 400 and r.json()["field"] == "overrides.gpu"
    assert '"h100-sxm-80gb" in the query and "a100-80gb" in the body' in r.json()["detail"]
    inline = {"log": MARLIN_LOG.decode(), "overrides": {"hf_config": {"model_type": "gpt_oss"}}}
    r = client.post("/v1/reconcile?model=gpt-oss-120b", json=inline)
    assert r.status_code == 400 and r.json()["field"] == "overrides.model"


@pytest.mark.parametrize(
    ("query", "field", "said"),
    [
        ("gpuu=h100-sxm-80gb", "gpuu", "did you mean gpu"),
        ("tensor_parallel_size=two", "tensor_parallel_size", "must be an integer"),
        ("hf_config=x", "hf_config", "JSON body"),
        ("model.hf_config.num_hidden_layers=2", "hf_config", "JSON body"),
        ("kv_cache_dtype=FP8", "kv_cache_dtype", "did you mean fp8"),
    ],
)
def test_a_bad_query_override_is_a_400_naming_it(client, query, field, said):
    r = client.post(f"/v1/reconcile?{query}", content=MARLIN_LOG, headers=TEXT)
    assert r.status_code == 400 and r.json()["field"] == field and said in r.json()["detail"], r.text
