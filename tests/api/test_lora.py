"""LoRA's settings on the budget routes: the query string lists target modules like vLLM's
--lora-target-modules, and the text answer says how much of the weights are adapter slots."""

from __future__ import annotations

# The oracle case lora-llama-3.1-8b-targets-q-o: 2 slots of rank 32 on qkv_proj and o_proj.
TARGETED = 109_051_904


def test_target_modules_in_a_query_string_are_a_comma_separated_list(client):
    q = {"model": "llama-3.1-8b", "gpu": "h100-sxm-80gb", "enable_lora": "true", "max_loras": "2",
         "max_lora_rank": "32", "lora_target_modules": "q_proj,o_proj"}  # fmt: skip
    assert client.get("/v1/budget", params=q).json()["lora_bytes_per_gpu"] == TARGETED


def test_the_text_answer_names_the_lora_slots_within_the_weights(client):
    body = {"model": "llama-3.1-8b", "gpu": "h100-sxm-80gb", "enable_lora": True, "max_loras": 2,
            "max_lora_rank": 32, "lora_target_modules": ["q_proj", "o_proj"]}  # fmt: skip
    text = client.post("/v1/budget?format=text", json=body).text
    assert f"with {TARGETED:,} B" in text and "of LoRA" in text  # the line wraps after it


def test_a_rank_vllm_does_not_take_is_refused_naming_the_field(client):
    r = client.post("/v1/budget", json={"model": "llama-3.1-8b", "gpu": "h100-sxm-80gb", "max_lora_rank": 24})
    assert r.status_code == 400 and "max_lora_rank" in r.text


def test_the_tensor_parallel_sizes_advised_count_the_lora_slots(client):
    lora = {"enable_lora": True, "max_loras": 4, "max_lora_rank": 512}
    body = client.post("/v1/budget", json={"model": "llama-3-70b", "gpu": "h100-sxm-80gb", **lora}).json()
    advice = next(w["message"] for w in body["warnings"] if w["code"] == "weights_do_not_fit")
    assert "Tensor-parallel sizes that fit: 4, 8, 16" in advice
    at_tp2 = {"model": "llama-3-70b", "gpu": "h100-sxm-80gb", "tensor_parallel_size": 2, **lora}
    assert client.post("/v1/budget", json=at_tp2).json()["kv_memory_shortfall_bytes"] > 0  # TP 2 does not fit
