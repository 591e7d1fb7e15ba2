"""POST /v1/plan: a `vllm serve` command answers the plan /v1/budget answers for what it says,
the fields sent beside it win, and each flag is shown as read."""

from __future__ import annotations

import pytest

from tests.hub.repos import QWEN3_8B_BASE

COMMAND = "vllm serve meta-llama/Llama-3.1-8B --max-model-len 32k --kv-cache-dtype fp8 --max-num-seqs 128"
SAME = {"model": "llama-3.1-8b", "gpu": "h100-sxm-80gb", "max_model_len": 32000, "kv_cache_dtype": "fp8",
        "max_num_seqs": 128}  # fmt: skip


def test_a_command_plans_what_budget_plans_for_the_same_inputs(client):
    plan = client.post("/v1/plan", json={"command": COMMAND, "gpu": "h100-sxm-80gb"}).json()
    budget = client.post("/v1/budget", json=SAME).json()
    for key in ("num_blocks", "kv_cache_size_tokens", "available_kv_bytes", "concurrency", "max_model_len"):
        assert plan[key] == budget[key], key
    read = {f["option"]: f for f in plan["command"]["flags"]}
    assert read["--max-model-len"]["value"] == 32000 and read["--max-model-len"]["field"] == "max_model_len"
    assert plan["command"]["model"] == "meta-llama/Llama-3.1-8B"


def test_a_field_beside_the_command_wins(client):
    plan = client.post(
        "/v1/plan", json={"command": COMMAND, "gpu": "h100-sxm-80gb", "kv_cache_dtype": "auto"}
    ).json()
    budget = client.post("/v1/budget", json={**SAME, "kv_cache_dtype": "auto"}).json()
    assert plan["num_blocks"] == budget["num_blocks"]


def test_vllms_printed_args_plan_too(client):
    line = (
        "non-default args: {'model': 'meta-llama/Llama-3.1-8B', 'max_model_len': 32000, "
        "'kv_cache_dtype': 'fp8', 'max_num_seqs': 128}"
    )
    plan = client.post("/v1/plan", json={"command": line, "gpu": "h100-sxm-80gb"}).json()
    assert plan["num_blocks"] == client.post("/v1/budget", json=SAME).json()["num_blocks"]


def test_flags_kvplan_does_not_model_are_named_in_a_warning(client):
    command = COMMAND + " --enable-lora --specialize-active-lora"
    plan = client.post("/v1/plan", json={"command": command, "gpu": "h100-sxm-80gb"}).json()
    (said,) = [w for w in plan["warnings"] if w["code"] == "flags_not_modelled"]
    assert "--specialize-active-lora" in said["message"] and said["severity"] == "warning"
    assert "--enable-lora" not in said["message"]


def test_the_text_answer_shows_how_each_flag_was_read(client):
    r = client.post("/v1/plan?format=text", json={"command": COMMAND, "gpu": "h100-sxm-80gb"})
    assert r.headers["content-type"].startswith("text/plain")
    assert "read from the command (vllm serve)" in r.text and "--max-model-len" in r.text


def test_an_inline_config_beside_a_command_naming_a_hub_id_plans_offline(client):
    config = QWEN3_8B_BASE.config
    r = client.post(
        "/v1/plan",
        json={"command": "vllm serve Qwen/Qwen3-8B-Base -tp 2", "gpu": "h100-sxm-80gb",
              "model": {"hf_config": config}, "weights_bytes": 16_381_470_720},
    )  # fmt: skip
    assert r.status_code == 200, r.text
    assert r.json()["tensor_parallel_size"] == 2


@pytest.mark.parametrize(
    ("command", "field", "words"),
    [
        (
            "vllm serve llama-3.1-8b --tensor-paralel-size 2",
            "command",
            "did you mean --tensor-parallel-size?",
        ),
        ("vllm serve $(cat m) -tp 2", "command", "needs a shell"),
        ("vllm serve /data/models/Qwen2.5-32B-AWQ", "model", "local path"),
        ("vllm serve --max-model-len 4096", "model", "names no model"),
        ("vllm serve llama-3.1-8b -tp 3", "tensor_parallel_size", ""),
        ("vllm serve llama-3.1-8b --gpu-memory-utilization 1.5", "command", "gpu_memory_utilization"),
    ],
)
def test_a_command_kvplan_cannot_plan_is_a_400_naming_why(client, command, field, words):
    r = client.post("/v1/plan", json={"command": command, "gpu": "h100-sxm-80gb"})
    assert r.status_code == 400, r.text
    assert r.json()["field"] == field and words in r.json()["detail"], r.json()


def test_prefix_caching_changes_nothing_for_a_model_without_mamba_layers(client):
    plan = client.post(
        "/v1/plan", json={"command": COMMAND + " --enable-prefix-caching", "gpu": "h100-sxm-80gb"}
    ).json()
    read = {f["option"]: f for f in plan["command"]["flags"]}
    assert read["--enable-prefix-caching"]["effect"] == "none"
    assert "flags_not_modelled" not in [w["code"] for w in plan["warnings"]]
    hybrid = client.post(
        "/v1/plan",
        json={"command": "vllm serve granite-4.0-h-small --enable-prefix-caching", "gpu": "a100-80gb"},
    ).json()
    assert {f["option"]: f["effect"] for f in hybrid["command"]["flags"]}[
        "--enable-prefix-caching"
    ] == "memory"


def test_max_model_len_auto_fits_the_longest_length_as_vllm_does(client):
    """vLLM 0.33 fits --max-model-len auto (or -1) to the KV memory after profiling
    (vllm/v1/core/kv_cache_planning.py _auto_fit_max_model_len): the length budget's
    max_context_tokens gives for the model's own maximum."""
    full = client.post("/v1/budget", json={"model": "llama-3.1-70b", "gpu": "h100-sxm-80gb",
                                           "tensor_parallel_size": 2}).json()  # fmt: skip
    assert full["max_context_tokens"] < full["max_model_len"]  # the model's 131,072 do not fit
    for spelled in ("auto", "-1"):
        plan = client.post(
            "/v1/plan", json={"command": f"vllm serve llama-3.1-70b -tp 2 --max-model-len {spelled}",
                              "gpu": "h100-sxm-80gb"},
        ).json()  # fmt: skip
        assert plan["max_model_len"] == full["max_context_tokens"]
        (read,) = [f for f in plan["command"]["flags"] if f["option"] == "--max-model-len"]
        assert (read["value"], read["effect"], read["field"]) == (
            full["max_context_tokens"],
            "plan",
            "max_model_len",
        )
        assert "max_model_len_does_not_fit" not in [w["code"] for w in plan["warnings"]]


def test_max_model_len_auto_with_no_room_for_a_token_is_refused_as_vllm_refuses_it(client):
    r = client.post(
        "/v1/plan", json={"command": "vllm serve llama-3.1-70b --max-model-len auto", "gpu": "l4-24gb"}
    )
    assert r.status_code == 400 and "Cannot auto-fit max_model_len" in r.json()["detail"]


def test_lora_slots_come_off_the_kv_budget_as_vllm_counts_them_with_the_weights(client):
    """--enable-lora --max-loras 4 --max-lora-rank 64 on Llama-3.1-8B: 4 slots of rank 64 on every
    wrapped module (vllm/lora/layers/ create_lora_weights), 4 × the rank-16 oracle case
    lora-llama-3.1-8b-r16-x4 (369,426,432 B), made in load_model with the weights."""
    command = COMMAND + " --enable-lora --max-loras 4 --max-lora-rank 64"
    plan = client.post("/v1/plan?explain=true", json={"command": command, "gpu": "h100-sxm-80gb"}).json()
    plain = client.post("/v1/budget", json=SAME).json()
    assert plan["lora_bytes_per_gpu"] == 4 * 369_426_432
    assert plan["weights_bytes_per_gpu"] == plain["weights_bytes_per_gpu"] + 4 * 369_426_432
    assert plan["available_kv_bytes"] == plain["available_kv_bytes"] - 4 * 369_426_432
    read = {f["option"]: f for f in plan["command"]["flags"]}
    assert (read["--max-lora-rank"]["effect"], read["--max-lora-rank"]["field"]) == ("plan", "max_lora_rank")
    steps = {s["name"]: s for s in plan["ledger"]}
    assert steps["lora_bytes"]["value"] == 4 * 369_426_432 and "lora_slots[qkv]" in steps
    assert "flags_not_modelled" not in [w["code"] for w in plan["warnings"]]


def test_max_cpu_loras_below_max_loras_is_refused_as_vllm_refuses_it(client):
    r = client.post("/v1/plan", json={"command": COMMAND + " --enable-lora --max-loras 4 --max-cpu-loras 2",
                                      "gpu": "h100-sxm-80gb"})  # fmt: skip
    assert r.status_code == 400 and "--max-cpu-loras" in r.json()["detail"]


def test_lora_on_a_model_of_another_layout_says_its_slots_are_not_counted(client):
    plan = client.post(
        "/v1/plan", json={"command": "vllm serve deepseek-v2-lite --enable-lora", "gpu": "h100-sxm-80gb"}
    ).json()
    assert "lora_not_modelled" in [w["code"] for w in plan["warnings"]]
    assert plan.get("lora_bytes_per_gpu", 0) == 0
