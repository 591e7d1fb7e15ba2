"""Default answers subtract what vLLM subtracts besides the weights (the engine profile's estimate,
calibrated on real start-up logs), say so, and carry a band; given figures still win, and
`non_kv_bytes: 0` is the seed's weights-only budget."""

from __future__ import annotations

import pytest

GIB = 1024**3
LLAMA_H100 = {"model": "llama-3.1-8b", "gpu": "h100-sxm-80gb", "gpu_memory_utilization": 0.9}


def budget(client, **kw):  # type: ignore[no-untyped-def]
    r = client.post("/v1/budget", json=kw)
    assert r.status_code == 200, r.text
    return r.json()


def codes(answer) -> set[str]:  # type: ignore[no-untyped-def]
    return {w["code"] for w in answer["warnings"]}


def test_llama_3_1_8b_on_one_h100_at_0_9_on_vllm_0_11_leaves_the_51_4_gib_vllm_printed(client):
    b = budget(client, **LLAMA_H100, engine="0.11.0")
    assert round(b["available_kv_bytes"] / GIB, 1) == 51.4
    assert b["engine"] == "vllm@0.10"
    assert b["gpu_memory_bytes"] == 81089 * 2**20  # what vLLM sees of an H100: 79.19 GiB
    assert b["memory"]["non_kv_source"] == "estimated" and "non_kv_estimated" in codes(b)


def test_non_kv_bytes_0_answers_exactly_the_weights_only_figure(client):
    b = budget(client, **LLAMA_H100, engine="0.11.0", non_kv_bytes=0)
    assert b["available_kv_bytes"] == -(-85520809984 * 9 // 10) - 2 * 8030261248  # 56.73 GiB
    assert b["memory"]["non_kv_source"] == "given" and "non_kv_estimated" not in codes(b)
    assert "band" not in b


def test_given_figures_win_over_the_estimate(client):
    b = budget(client, **LLAMA_H100, non_kv_bytes=3 * GIB, cudagraph_bytes=GIB)
    assert (b["non_kv_bytes"], b["cudagraph_bytes"]) == (3 * GIB, GIB)
    assert b["available_kv_bytes"] == b["requested_bytes"] - b["weights_bytes_per_gpu"] - 4 * GIB


def test_the_band_brackets_the_answer_and_says_what_each_end_holds(client):
    b = budget(client, **LLAMA_H100, engine="0.19.0", context_tokens=8192)
    band, c = b["band"], b["concurrency"]
    assert band["available_kv_low_bytes"] <= b["available_kv_bytes"] <= band["available_kv_high_bytes"]
    assert band["concurrency_low"] <= c["guaranteed"] <= band["concurrency_high"]
    assert b["engine"] == "vllm@0.19"


def test_the_estimate_is_explained_term_by_term_in_the_ledger(client):
    b = client.post("/v1/budget?explain=true", json=LLAMA_H100).json()
    steps = {s["name"]: s for s in b["ledger"]}
    m = b["memory"]
    assert steps["activation_bytes"]["value"] == m["activation_bytes"]
    assert "gpu_model_runner.py" in steps["activation_bytes"]["source"]
    assert steps["non_torch_bytes"]["value"] == m["non_torch_bytes"]
    assert b["non_kv_bytes"] == m["activation_bytes"] + m["non_torch_bytes"]
    assert "mem_get_info" in steps["requested_bytes"]["inputs"]["total_memory_from"]


@pytest.mark.parametrize(("engine", "subtracted"), [("vllm@e740bad", True), ("0.19.0", False)])
def test_cuda_graphs_come_off_where_the_profile_subtracts_them_and_enforce_eager_removes_them(
    client, engine, subtracted
):
    graphs = budget(client, **LLAMA_H100, engine=engine)
    eager = budget(client, **LLAMA_H100, engine=engine, enforce_eager=True)
    assert graphs["memory"]["cudagraph_subtracted"] is subtracted
    assert eager["memory"]["cudagraph_bytes"] == eager["cudagraph_bytes"] == 0
    gained = eager["available_kv_bytes"] - graphs["available_kv_bytes"]
    assert gained == (graphs["memory"]["cudagraph_bytes"] if subtracted else 0)


def test_tensor_parallel_adds_the_all_reduce_buffers(client):
    one = budget(client, model="llama-3.1-70b", gpu="h100-sxm-80gb", tensor_parallel_size=1)
    four = budget(client, model="llama-3.1-70b", gpu="h100-sxm-80gb", tensor_parallel_size=4)
    assert four["memory"]["non_torch_bytes"] > one["memory"]["non_torch_bytes"]


def test_an_inline_geometry_cannot_be_estimated_and_says_so(client):
    geometry = {"num_layers": 32, "num_attention_heads": 32, "num_kv_heads": 8, "head_dim": 128}
    b = budget(client, model={"geometry": geometry}, gpu="h100-sxm-80gb", weights_bytes=16 * GIB)
    assert b["non_kv_bytes"] == 0 and b["memory"]["non_kv_source"] == "not estimated"
    assert "non_kv_not_estimated" in codes(b)


def test_fleet_sweep_and_simulate_use_the_same_estimate_as_budget(client):
    b = budget(client, **LLAMA_H100, context_tokens=8192)
    fleet = client.post(
        "/v1/fleet",
        json={
            "model": "llama-3.1-8b",
            "gpu_memory_utilization": 0.9,
            "workload": {"context_tokens": 8192},
            "fleet": [{"gpu": "h100-sxm-80gb", "count": 1}],
        },
    ).json()
    tp1 = fleet["gpu_types"][0]["layouts"][0]
    assert tp1["concurrency_per_replica"] == b["concurrency"]["guaranteed"]
    sweep = client.get(
        "/v1/sweep",
        params={**LLAMA_H100, "vary": "context_tokens", "values": "8192"},
    ).json()
    assert sweep["points"][0]["available_kv_bytes"] == b["available_kv_bytes"]
    one = {"requests": [{"prompt_tokens": 100, "output_tokens": 10}]}
    sim = client.post("/v1/simulate", json={**LLAMA_H100, "workload": one}).json()
    assert sim["num_blocks"] == b["num_blocks"]


def test_a_version_outside_the_modelled_ones_is_a_400_naming_the_profiles(client):
    r = client.post("/v1/budget", json={**LLAMA_H100, "engine": "0.3.3"})
    assert r.status_code == 400 and r.json()["field"] == "engine"
    assert "vllm@0.19" in r.json()["detail"]


@pytest.mark.parametrize(
    ("quantization", "vllm_weights_gib", "vllm_kv_gib"),
    [
        (None, 14.99, 58.11),  # M060: vLLM 0.19, H100, utilization 0.95
        ("fp8", 8.49, 64.61),  # M061: --quantization fp8 (online, dynamic)
        ("gptq", 5.38, 67.71),  # M098: a w4a16 group-128 checkpoint
    ],
)
def test_llama_3_1_8b_as_loaded_by_vllm_0_19_is_within_a_tenth_of_a_gib_of_its_logs(
    client, quantization, vllm_weights_gib, vllm_kv_gib
):
    body = {**LLAMA_H100, "gpu_memory_utilization": 0.95, "engine": "0.19.0"}
    b = budget(client, **body, **({"quantization": quantization} if quantization else {}))
    assert abs(b["weights_bytes_per_gpu"] / GIB - vllm_weights_gib) < 0.1
    assert abs(b["available_kv_bytes"] / GIB - vllm_kv_gib) < 0.1


def test_quantization_cannot_contradict_what_the_config_states(client):
    r = client.post("/v1/budget", json={"model": "deepseek-v3", "gpu": "h200-141gb", "quantization": "awq"})
    assert r.status_code == 400 and r.json()["field"] == "quantization"


# Issue 16's text and JSON findings that touch the budget.


def test_a_model_too_large_for_one_gpu_says_so_and_names_the_tp_sizes_that_fit(client):
    text = " ".join(client.get("/v1/budget?model=llama-3-70b&gpu=h100-sxm-80gb&format=text").text.split())
    assert "the weights do not fit" in text
    assert "warnings ! The weights" in text and "Tensor-parallel sizes that fit: 2, 4, 8" in text
    assert "Set max_model_len ≤ 0" not in text


def test_the_pooled_trap_is_flagged_only_where_pooling_would_mislead(client):
    b = budget(client, model="deepseek-v3", gpu="pool-141gib", weights_bytes=625 * GIB, context_tokens=32768,
               tensor_parallel_size=8, non_kv_bytes=0)  # fmt: skip
    assert "pooled_not_deployable" in codes(b)  # seed B: 24 a card, 192 pooled
    same = budget(client, model="llama-3.1-8b", gpu="h100-sxm-80gb", tensor_parallel_size=2,
                  context_tokens=131072, non_kv_bytes=0)  # fmt: skip
    assert same["pooled"]["concurrency"] == same["concurrency"]["guaranteed"] == 8
    assert "pooled_not_deployable" not in codes(same)


def test_resolve_takes_a_model_in_the_shape_the_other_endpoints_do(client):
    config = {"model_type": "llama", "num_hidden_layers": 32, "num_attention_heads": 32,
              "num_key_value_heads": 8, "hidden_size": 4096, "intermediate_size": 14336,
              "vocab_size": 128256, "max_position_embeddings": 131072}  # fmt: skip
    r = client.post("/v1/models/resolve", json={"hf_config": config})
    assert r.status_code == 200, r.text
    assert r.json()["layer_counts"] == {"full_attention": 32}


def test_get_fleet_needs_no_count_one_node_by_default(client):
    r = client.get(
        "/v1/fleet", params={"model": "llama-3-70b", "gpu": "h100-sxm-80gb", "context_tokens": 8192}
    )
    assert r.status_code == 200, r.text
    assert r.json()["gpu_types"][0]["count"] == 8
