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
    command = COMMAND + " --enable-lora --max-loras 4"
    plan = client.post("/v1/plan", json={"command": command, "gpu": "h100-sxm-80gb"}).json()
    (said,) = [w for w in plan["warnings"] if w["code"] == "flags_not_modelled"]
    assert "--enable-lora" in said["message"] and said["severity"] == "warning"


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


MTP = (
    "vllm serve deepseek-ai/DeepSeek-V3 -tp 8"
    ' --speculative-config \'{"method": "mtp", "num_speculative_tokens": 1}\''
)


def test_a_speculative_config_is_planned_end_to_end(client):
    """DeepSeek-V3 with MTP: its one MTP layer joins the 61 MLA layers in the KV cache, and its
    weights load with the target's (vllm/v1/worker/gpu/model_runner.py load_model)."""
    plain = client.post("/v1/plan", json={"command": MTP.split(" --spec")[0], "gpu": "h200-141gb"}).json()
    plan = client.post("/v1/plan?explain=true", json={"command": MTP, "gpu": "h200-141gb"}).json()
    assert [(g["kind"], g["layers"]) for g in plain["groups"]] == [("mla", 61)]
    assert [(g["kind"], g["layers"]) for g in plan["groups"]] == [("mla", 62)]
    assert plan["weights_bytes"] > plain["weights_bytes"]
    assert plan["num_blocks"] < plain["num_blocks"]
    read = {f["option"]: f for f in plan["command"]["flags"]}
    assert read["--speculative-config"]["effect"] == "plan"
    budget = client.post(
        "/v1/budget",
        json={"model": "deepseek-v3", "gpu": "h200-141gb", "tensor_parallel_size": 8,
              "speculative_method": "mtp", "num_speculative_tokens": 1},
    ).json()  # fmt: skip
    assert plan["num_blocks"] == budget["num_blocks"]
    assert any(s["name"] == "speculative_decoding" for s in plan["ledger"])


@pytest.mark.parametrize(
    ("flags", "said"),
    [
        ('--speculative-config \'{"method": "eagle", "num_speculative_tokens": 3}\'', "needs a draft model"),
        ('--speculative-config \'{"method": "medusa2"}\'', "not one vLLM 0.33 takes"),
        ("--speculative-config '{\"num_speculative_tokens\": 2}'", "without speculative model"),
        ('--speculative-config \'{"method": "ngram", "colour": 1}\'', "not a key SpeculativeConfig takes"),
        ('--spec-method ngram --speculative-config \'{"method": "ngram"}\'', "mutually exclusive"),
    ],
)
def test_a_speculative_config_vllm_refuses_is_a_400_naming_the_flag(client, flags, said):
    r = client.post("/v1/plan", json={"command": f"{COMMAND} {flags}", "gpu": "h100-sxm-80gb"})
    assert r.status_code == 400, r.text
    assert said in r.json()["detail"] and ("--spec" in r.json()["detail"])


def test_a_draft_model_kvplan_cannot_read_offline_is_a_4xx_naming_the_field(client):
    flags = ' --speculative-config \'{"model": "nobody/EAGLE3-nothing", "num_speculative_tokens": 3}\''
    r = client.post("/v1/plan", json={"command": COMMAND + flags, "gpu": "h100-sxm-80gb"})
    assert 400 <= r.status_code < 500 and r.json()["field"] == "speculative_model"


def test_an_eagle3_head_sent_inline_is_planned_beside_the_command(client):
    """The draft's config.json as speculative_hf_config: its one Llama layer of the target's KV
    page joins the 32 (llama_eagle3.py LlamaModel)."""
    head = {"architectures": ["LlamaForCausalLMEagle3"], "model_type": "llama", "hidden_size": 4096,
            "intermediate_size": 14336, "num_attention_heads": 32, "num_key_value_heads": 8,
            "num_hidden_layers": 1, "vocab_size": 128256, "torch_dtype": "float16"}  # fmt: skip
    flags = """ --speculative-config '{"method": "eagle3", "model": "x/E3", "num_speculative_tokens": 3}'"""
    plan = client.post(
        "/v1/plan", json={"command": COMMAND + flags, "gpu": "h100-sxm-80gb", "speculative_hf_config": head}
    ).json()
    plain = client.post("/v1/plan", json={"command": COMMAND, "gpu": "h100-sxm-80gb"}).json()
    assert [(g["kind"], g["layers"]) for g in plan["groups"]] == [("full_attention", 33)]
    assert plan["weights_bytes"] > plain["weights_bytes"] and plan["num_blocks"] < plain["num_blocks"]
