"""POST /v1/plan: a `vllm serve` command answers the plan /v1/budget answers for what it says,
the fields sent beside it win, and each flag is shown as read."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.hub.repos import QWEN3_8B_BASE
from tests.oracle.cases import oracle_case

QWEN25_VL = "Qwen--Qwen2.5-VL-7B-Instruct.json"
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
    assert {f["option"]: f["effect"] for f in hybrid["command"]["flags"]}["--enable-prefix-caching"] == "plan"


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


def test_a_vision_models_tower_left_out_by_the_command_frees_its_weights(client):
    cfg = json.loads((Path(__file__).parents[1] / "core" / "data" / "hf-configs" / QWEN25_VL).read_text())
    sent = {"gpu": "h100-sxm-80gb", "model": {"hf_config": cfg}}
    base = "vllm serve Qwen/Qwen2.5-VL-7B-Instruct"
    full = client.post("/v1/plan", json={**sent, "command": base}).json()
    images_only_off = client.post(
        "/v1/plan", json={**sent, "command": base + " --limit-mm-per-prompt '{\"image\": 0}'"}
    )
    assert images_only_off.json()["weights_bytes"] == full["weights_bytes"]  # videos still need the tower
    for flags in ("--language-model-only", "--limit-mm-per-prompt.image 0 --limit-mm-per-prompt.video 0",
                  "--limit-mm-per-prompt '{\"image\": {\"count\": 0}, \"video\": 0}'"):  # fmt: skip
        text = client.post("/v1/plan", json={**sent, "command": f"{base} {flags}"}).json()
        assert text["weights_bytes"] < full["weights_bytes"] and text["num_blocks"] > full["num_blocks"], (
            flags
        )


def test_expert_parallel_over_data_parallel_ranks_plans_one_engine_and_totals_the_ranks(client):
    """Qwen3-30B-A3B's 128 experts over TP 2 × DP 4 = 8 ranks: 16 whole experts a GPU
    (vllm/model_executor/layers/fused_moe/expert_map_manager.py determine_expert_map); the dense
    part over TP only; each DP rank its own engine."""
    command = "vllm serve Qwen/Qwen3-30B-A3B -tp 2 -dp 4 --enable-expert-parallel"
    plan = client.post("/v1/plan?explain=true", json={"command": command, "gpu": "h100-sxm-80gb"}).json()
    read = {f["option"]: f for f in plan["command"]["flags"]}
    assert read["--data-parallel-size"]["field"] == "data_parallel_size"
    assert read["--enable-expert-parallel"]["effect"] == "plan"
    steps = {s["name"]: s for s in plan["ledger"]}
    expert = steps["expert_weights_bytes_per_gpu"]
    assert expert["inputs"]["experts_per_gpu"] == 16
    assert plan["weights_bytes_per_gpu"] == steps["dense_weights_bytes_per_gpu"]["value"] + expert["value"]
    dp = plan["data_parallel"]
    assert (dp["engines"], dp["gpus"]) == (4, 8)
    assert dp["concurrency"] == 4 * plan["concurrency"]["schedulable"]
    assert "flags_not_modelled" not in [w["code"] for w in plan["warnings"]]


def test_cpu_offload_gb_takes_its_bytes_off_each_gpus_weights(client):
    base = "vllm serve meta-llama/Llama-3.1-70B -tp 2"
    plain = client.post("/v1/plan", json={"command": base, "gpu": "h100-sxm-80gb"}).json()
    offloaded = client.post(
        "/v1/plan", json={"command": base + " --cpu-offload-gb 10", "gpu": "h100-sxm-80gb"}
    ).json()
    assert offloaded["weights_offloaded_bytes"] == 10 * 1024**3
    assert offloaded["weights_bytes_per_gpu"] == plain["weights_bytes_per_gpu"] - 10 * 1024**3
    assert offloaded["available_kv_bytes"] == plain["available_kv_bytes"] + 10 * 1024**3
    assert "weights_offloaded" in [w["code"] for w in offloaded["warnings"]]


def test_dtype_float32_doubles_the_weights_and_the_kv_cache(client):
    base = "vllm serve meta-llama/Llama-3.1-8B --max-model-len 8192"
    half = client.post("/v1/plan", json={"command": base, "gpu": "h100-sxm-80gb"}).json()
    full = client.post("/v1/plan", json={"command": base + " --dtype float32", "gpu": "h100-sxm-80gb"}).json()
    assert full["weights_bytes"] == 2 * half["weights_bytes"]
    assert full["per_token"]["bytes_per_token"] == 2 * half["per_token"]["bytes_per_token"]


@pytest.mark.parametrize(
    ("command", "field", "words"),
    [
        (
            "vllm serve meta-llama/Llama-3.1-8B --enable-expert-parallel",
            "enable_expert_parallel",
            "no experts",
        ),
        ("vllm serve google/gemma-3-27b-it --dtype half", "dtype", "float16"),
    ],
)
def test_combinations_vllm_refuses_are_a_400_naming_the_setting(client, command, field, words):
    r = client.post("/v1/plan", json={"command": command, "gpu": "h100-sxm-80gb"})
    assert r.status_code == 400, r.text
    assert r.json()["field"] == field and words in r.json()["detail"], r.json()


# The Mamba state's dtypes and prefix caching on a hybrid model: /v1/plan gives vLLM's own blocks
# (the oracle's layout- cases, tests/oracle/cases-vllm-0.33.0.json) for the command's flags.
QWEN3_NEXT = "vllm serve qwen3-next-80b-a3b --max-model-len 32768 --kv-cache-memory-bytes 42949672960"
V033 = {"engine": "vllm@0.33"}


def test_mamba_ssm_cache_dtype_float32_doubles_the_state_and_raises_the_block_as_vllm_does(client):
    case = oracle_case("layout-qwen3-next-32k-ssm-fp32")["vllm"]
    plan = client.post(
        "/v1/plan", json={"command": QWEN3_NEXT + " --mamba-ssm-cache-dtype float32", **V033}
    ).json()
    assert (plan["num_blocks"], plan["bytes_per_block"], plan["blocks_per_request"]) == (
        case["num_blocks"], case["bytes_per_block"], case["blocks_per_request"])  # fmt: skip
    assert {g["block_size"] for g in plan["groups"]} == {1056}  # 544 with the bf16 default
    read = {f["option"]: f for f in plan["command"]["flags"]}["--mamba-ssm-cache-dtype"]
    assert (read["effect"], read["field"], read["value"]) == ("plan", "mamba_ssm_cache_dtype", "float32")


def test_no_enable_prefix_caching_keeps_one_mamba_state_a_request_as_vllm_does(client):
    case = oracle_case("layout-qwen3-next-32k-no-prefix-caching")["vllm"]
    plan = client.post(
        "/v1/plan",
        params={"explain": "true"},
        json={"command": QWEN3_NEXT + " --no-enable-prefix-caching", **V033},
    ).json()
    assert (plan["num_blocks"], plan["blocks_per_request"]) == (
        case["num_blocks"],
        case["blocks_per_request"],
    )
    mamba = [g for g in plan["groups"] if g["kind"] == "mamba"]
    assert mamba and all((g["blocks_per_request"], g["block_size"]) == (1, 32768) for g in mamba)
    mode = next(s for s in plan["ledger"] if s["name"] == "mamba_cache_mode")
    assert mode["value"] == "none" and mode["inputs"]["enable_prefix_caching"] is False


def test_mamba_block_size_without_prefix_caching_is_a_400_as_vllm_refuses_it(client):
    r = client.post(
        "/v1/plan", json={"command": QWEN3_NEXT + " --disable-prefix-caching --mamba-block-size 64", **V033}
    )
    assert r.status_code == 400 and r.json()["field"] == "mamba_block_size", r.text


def test_compilation_config_capture_sizes_shrink_the_graph_estimate(client):
    """vLLM captures 4 sizes × (piecewise + full decode) = 8 graphs for [1, 2, 4, 8]
    (vllm/config/vllm.py _set_cudagraph_sizes, vllm/v1/cudagraph_dispatcher.py); the default at
    max_num_seqs 1024 is 102, on which the estimate was fitted."""
    sizes = "vllm serve llama-3.1-8b --compilation-config '{\"cudagraph_capture_sizes\":[1,2,4,8]}'"
    default = client.post(
        "/v1/plan", json={"command": "vllm serve llama-3.1-8b", "gpu": "h100-sxm-80gb", **V033}
    )
    small = client.post("/v1/plan", json={"command": sizes, "gpu": "h100-sxm-80gb", **V033}).json()
    default = default.json()
    assert (default["memory"]["cudagraphs_captured"], small["memory"]["cudagraphs_captured"]) == (102, 8)
    assert small["memory"]["cudagraph_capture_sizes"] == 4
    assert small["cudagraph_bytes"] == default["cudagraph_bytes"] * 8 // 102
    assert small["available_kv_bytes"] > default["available_kv_bytes"]
    read = {f["option"]: f for f in small["command"]["flags"]}["--compilation-config"]
    assert read["effect"] == "plan"


def test_optimization_level_0_captures_no_graphs(client):
    plan = client.post(
        "/v1/plan", json={"command": "vllm serve llama-3.1-8b -O0", "gpu": "h100-sxm-80gb", **V033}
    )
    plan = plan.json()
    assert plan["cudagraph_bytes"] == 0
    assert (plan["memory"]["cudagraph_mode"], plan["memory"]["cudagraphs_captured"]) == ("none", 0)


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


LAUGHS = "".join(f"- &a{i} [{', '.join([f'*a{i - 1}'] * 10) if i else 'x'}]\n" for i in range(12))


@pytest.mark.parametrize(
    ("field", "text"),
    [
        ("command", LAUGHS),  # 10^11 words behind 800 bytes
        (
            "config",
            "hf-overrides:\n"
            + "".join(f"  l{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 10) if i else 'x'}]\n" for i in range(9)),
        ),
        ("command", "args: [&s '" + "x" * 20_000 + "', " + ", ".join(["*s"] * 10_000) + "]"),
    ],
    ids=["command-laughs", "config-laughs", "long-string-repeated"],
)
def test_yaml_aliases_are_refused_before_they_are_expanded(client, field, text):
    """A YAML alias repeats a node without its text: read, a few hundred bytes held the event loop
    for seconds (days at ten aliases a line) and echoed 10^8 items."""
    body = {"command": "vllm serve meta-llama/Llama-3.1-8B", "gpu": "h100-sxm-80gb", field: text}
    r = client.post("/v1/plan", json=body)
    assert r.status_code == 400, r.text[:300]
    assert r.json()["field"] == field and "aliases (*name) expand it past 10,000 nodes" in r.json()["detail"]


def test_a_few_aliases_are_read_written_out_as_compose_files_and_helm_values_use_them(client):
    config = "max-model-len: &n 8192\nmax-num-batched-tokens: *n\n"
    plan = client.post("/v1/plan", json={"command": COMMAND, "gpu": "h100-sxm-80gb", "config": config}).json()
    assert plan["max_model_len"] == 32000  # the command's flag wins over the config's
    assert plan["max_num_batched_tokens"] == 8192  # *n: the anchor's value
    compose = (
        "x-vllm: &base\n  image: vllm/vllm-openai\n  command: [vllm, serve, meta-llama/Llama-3.1-8B,"
        " --max-model-len, '16384']\nservices:\n  llm:\n    <<: *base\n"
    )
    assert (
        client.post("/v1/plan", json={"command": compose, "gpu": "h100-sxm-80gb"}).json()["max_model_len"]
        == 16384
    )


@pytest.mark.parametrize("field", ["command", "config"])
def test_brackets_nested_two_thousand_deep_are_a_400_before_yaml_recurses_into_them(client, field):
    text = "args: " + "[" * 2000 + "]" * 2000 if field == "command" else "a: " + "[" * 2000 + "]" * 2000
    body = {"command": "vllm serve meta-llama/Llama-3.1-8B", "gpu": "h100-sxm-80gb", field: text}
    r = client.post("/v1/plan", json=body)
    assert r.status_code == 400 and r.json()["field"] == field and "nested 2000 deep" in r.json()["detail"]


def test_a_vllm_run_by_its_path_is_read_as_vllm(client):
    """production-stack's LMCache image runs /opt/venv/bin/vllm (found by a helper in its chart)."""
    manifest = (
        "command:\n- /opt/venv/bin/vllm\n- serve\n- meta-llama/Llama-3.1-8B\nargs: [--max-model-len, '16384']"
    )
    plan = client.post("/v1/plan", json={"command": manifest, "gpu": "h100-sxm-80gb"}).json()
    assert plan["max_model_len"] == 16384, plan


def test_a_config_file_may_name_the_model_and_the_command_line_wins(client):
    """vllm/utils/argparse_utils.py: --model from the config when the command names none."""
    config = "model: meta-llama/Llama-3.1-8B\nmax-model-len: 8192\n"
    plan = client.post("/v1/plan", json={"command": "vllm serve --config c.yaml", "gpu": "h100-sxm-80gb",
                                         "config": config}).json()  # fmt: skip
    assert plan["command"]["model"] == "meta-llama/Llama-3.1-8B" and plan["max_model_len"] == 8192
    both = client.post("/v1/plan", json={"command": "vllm serve Qwen/Qwen3-8B --config c.yaml",
                                         "gpu": "h100-sxm-80gb", "config": config}).json()  # fmt: skip
    assert both["command"]["model"] == "Qwen/Qwen3-8B"


def test_a_kubernetes_containers_env_reaches_the_command_it_runs(client):
    """A Deployment's container sets VLLM_USE_FLASHINFER_MOE_MXFP4_MXFP8 in `env:`; a value from a
    secret (valueFrom) is not the manifest's to say, and is left out."""
    manifest = (
        "spec:\n  template:\n    spec:\n      containers:\n      - name: vllm\n"
        "        image: vllm/vllm-openai:v0.11.0\n        env:\n"
        '        - name: VLLM_USE_FLASHINFER_MOE_MXFP4_MXFP8\n          value: "1"\n'
        "        - name: HF_TOKEN\n          valueFrom:\n            secretKeyRef: {name: hf, key: token}\n"
        '        args: ["openai/gpt-oss-120b", "--tensor-parallel-size", "2"]\n'
    )
    r = client.post("/v1/plan", json={"command": manifest, "gpu": "b200-180gb"})
    assert r.status_code == 200, r.text
    command = r.json()["command"]
    assert command["env"] == {"VLLM_USE_FLASHINFER_MOE_MXFP4_MXFP8": "1"}
    assert command["settings"] == {"tensor_parallel_size": 2, "flashinfer_moe_mxfp4_mxfp8": True}
