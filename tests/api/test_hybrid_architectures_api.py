"""Hybrid and chunked architectures through the API: a real config.json, its resolved inline
geometry and the oracle's figures agree; configs kvplan cannot read are refused by field."""

from __future__ import annotations

import json

import pytest

from tests.oracle.cases import budget_request, oracle_case
from tests.oracle.generate import load_config


def refused(client, cfg: dict) -> dict:
    """The 400 a budget of this config on an H100 is refused with (its field and detail)."""
    r = client.post("/v1/budget", json={"model": {"hf_config": cfg}, "gpu": "h100-sxm-80gb"})
    assert r.status_code == 400, r.text
    return r.json()


@pytest.mark.parametrize(
    "name",
    [
        "jamba-mini-32k",
        "qwen3-next-8k-tp4",
        "granite-h-small-32k-tp4",
        "scout-32k-40gib",
        "kimi-linear-shaped-32k-tp4-fp8",
        "ring-2.5-shaped-32k-tp4-fp8",
        "zamba2-shaped-4k-tp2-fp8",
        "minimax-m3-defaults-512k-tp4-fp8-block128",
        "minimax-m3-shaped-64k-block256",
        "inkling-shaped-128k-tp4-fp8",
        "inkling-defaults-2k-block64",
        "muse-spark-shaped-256k-tp8-fp8",
        "dots3-note-uneven-shaped-256k-tp2-block192",
        "hy-v4-sparse-shared-shaped-128k-tp4-fp8-block128",
        "hy-v4-mixed-shaped-64k-block64",
        "step5-shaped-64k",
        "step5-shaped-256k-tp8-fp8-block32",
        "step5-dense-sliding-64k",
        "qwen4-exp-defaults-8k-tp16",
        "qwen4-exp-qsa-shaped-128k-tp4-fp8",
        "qwen4-exp-qsa-vl-shaped-32k-tp2-fp8",
        "qwen4-exp-qsa-ple-shaped-64k-tp8-fp8",
    ],
)
def test_a_config_and_its_resolved_geometry_plan_as_vllm_does(client, name):
    case = oracle_case(name)
    cfg = load_config(case["config"])
    from_config = client.post("/v1/budget", json=budget_request({"hf_config": cfg}, case))
    assert from_config.status_code == 200, from_config.text
    geometry = client.post("/v1/models/resolve", json=cfg).json()["geometry"]
    from_geometry = client.post("/v1/budget", json=budget_request({"geometry": geometry}, case))
    assert from_geometry.status_code == 200, from_geometry.text
    for body in (from_config.json(), from_geometry.json()):
        assert body["num_blocks"] == case["vllm"]["num_blocks"]
        assert body["blocks_per_request"] == case["vllm"]["blocks_per_request"]
        assert body["bytes_per_block"] == case["vllm"]["bytes_per_block"]


def test_resolve_names_each_layer_kind_of_a_hybrid(client):
    cfg = load_config("ibm-granite--granite-4.0-h-small.json")
    body = client.post("/v1/models/resolve", json=cfg).json()
    assert body["layer_counts"] == {"full_attention": 4, "mamba": 36}
    mamba = body["geometry"]["mamba"]
    assert (mamba["mixer"], mamba["num_heads"], mamba["head_dim"], mamba["state_size"]) == (
        "mamba2",
        128,
        64,
        128,
    )
    assert mamba["checkpoint_blocks"] == 1


def test_inline_geometry_describes_a_mamba_state_by_its_dims(client):
    geometry = {
        "num_layers": 4,
        "num_attention_heads": 8,
        "num_kv_heads": 8,
        "head_dim": 128,
        "layer_types": ["mamba", "mamba", "mamba", "full_attention"],
        "mamba": {"mixer": "mamba1", "conv_kernel": 4, "intermediate_size": 8192, "state_size": 16},
        "max_position_embeddings": 8192,
    }
    ask = {"model": {"geometry": geometry}, "kv_cache_memory_bytes": 1 << 30, "engine": "vllm@0.33"}
    r = client.post("/v1/budget", json=ask)
    assert r.status_code == 200, r.text
    # state 8192 × (3 + 16) × 2 B = 311,296 B; attention 4 KiB a token: 16 × cdiv(…, 16 × 4 KiB) = 80
    assert {g["kind"]: g["block_size"] for g in r.json()["groups"]} == {"mamba": 80, "full_attention": 80}
    # The block is raised in multiples of the requested block, not of 16: 64 × cdiv(…, 256 KiB) = 128
    r = client.post("/v1/budget", json={**ask, "block_size": 64})
    assert {g["block_size"] for g in r.json()["groups"]} == {128}


@pytest.mark.parametrize(
    ("mamba", "field"),
    [
        ({"mixer": "mamba2", "conv_kernel": 4, "intermediate_size": 8192, "state_size": 128}, "num_heads"),
        ({"mixer": "gated_delta_net", "conv_kernel": 4}, "num_k_heads"),
        ({"mixer": "linear_attention", "conv_kernel": 1, "num_heads": 8}, "head_dim"),
        ({"mixer": "mamba1", "conv_kernel": 4, "intermediate_size": 8192, "state_size": 16, "x": 1}, "x"),
    ],
)
def test_an_incomplete_mamba_state_is_a_400_naming_the_field(client, mamba, field):
    geometry = {
        "num_layers": 2,
        "num_attention_heads": 8,
        "head_dim": 128,
        "layer_types": ["mamba", "full_attention"],
        "mamba": mamba,
    }
    r = client.post("/v1/budget", json={"model": {"geometry": geometry}, "kv_cache_memory_bytes": 1 << 30})
    assert r.status_code == 400, r.text
    assert field in r.json()["field"]


@pytest.mark.parametrize(
    "cfg",
    [
        # Bamba: a Mamba2 hybrid vLLM 0.33 no longer serves
        {"model_type": "bamba", "num_hidden_layers": 4, "num_attention_heads": 8, "hidden_size": 512},
        # an unknown family with recurrent-state keys: never read as all attention
        {
            "model_type": "newhybrid",
            "num_hidden_layers": 4,
            "num_attention_heads": 8,
            "hidden_size": 512,
            "mamba_d_state": 16,
        },
    ],
)
def test_a_hybrid_kvplan_cannot_read_is_refused_not_read_as_attention(client, cfg):
    refusal = refused(client, cfg)
    assert refusal["field"].endswith("model_type")
    assert cfg["model_type"] in refusal["detail"]


def test_kimi_linear_keeps_kda_layers_beside_mla_with_a_float32_state(client):
    cfg = load_config("synthetic--kimi-linear-48b-shaped.json")
    body = client.post("/v1/models/resolve", json=cfg).json()
    assert body["layer_counts"] == {"mla": 7, "mamba": 20}
    mamba = body["geometry"]["mamba"]
    assert (mamba["num_v_heads"], mamba["head_v_dim"], mamba["ssm_dtype"]) == (32, 128, "float32")
    assert mamba["checkpoint_blocks"] == 0


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"linear_attn_config": None}, "linear_attn_config"),
        ({"linear_attn_config": {"kda_layers": [1], "num_heads": 32, "head_dim": 128,
                                 "short_conv_kernel_size": 4, "use_full_rank_gate": True,
                                 "gate_lower_bound": 1.0}},
         "linear_attn_config.gate_lower_bound"),
        ({"linear_attn_config": {"kda_layers": "1,2", "num_heads": 32}}, "linear_attn_config.kda_layers"),
        ({"linear_attn_config": {"kda_layers": [1], "num_heads": 0, "head_dim": 128,
                                 "short_conv_kernel_size": 4}}, "linear_attn_config.num_heads"),
    ],
)  # fmt: skip
def test_a_kimi_linear_config_kvplan_cannot_read_is_a_400_naming_the_field(client, change, field):
    cfg = {**load_config("synthetic--kimi-linear-48b-shaped.json"), **change}
    assert refused(client, cfg)["field"].endswith(field)


def test_bailing_linear_keeps_one_state_of_qk_rope_head_dim_squared_a_head(client):
    """BailingHybridConfig sets head_dim to qk_rope_head_dim (64), whatever config.json says (128)."""
    cfg = load_config("synthetic--ring-2.5-1t-shaped.json")
    body = client.post("/v1/models/resolve", json=cfg).json()
    assert body["layer_counts"] == {"mla": 10, "mamba": 70}
    mamba = body["geometry"]["mamba"]
    assert (mamba["mixer"], mamba["num_heads"], mamba["head_dim"]) == ("linear_attention", 64, 64)
    ask = {"model": {"hf_config": cfg}, "kv_cache_memory_bytes": 20 << 30, "engine": "vllm@0.33",
           "max_model_len": 32768, "tensor_parallel_size": 4}  # fmt: skip
    r = client.post("/v1/budget?explain=true", json=ask)
    assert r.status_code == 200, r.text
    step = next(s for s in r.json()["ledger"] if s["name"] == "mamba_state_bytes_per_layer")
    assert step["value"] == 16 * 64 * 64 * 2 and step["inputs"]["state_shape"] == "16×64×64"


def test_bailing_v3_keeps_kda_layers_and_makes_the_layers_past_the_last_group_mla(client):
    body = client.post("/v1/models/resolve", json=load_config("synthetic--bailing-v3-shaped.json")).json()
    assert body["layer_counts"] == {"mla": 10, "mamba": 35}  # 45 layers: 7 group ends, 3 past the last
    mamba = body["geometry"]["mamba"]
    assert (mamba["mixer"], mamba["num_v_heads"], mamba["head_v_dim"], mamba["ssm_dtype"]) == (
        "gated_delta_net",
        32,
        64,
        "float32",
    )


def test_a_bailing_hybrid_of_another_architecture_is_refused_naming_it(client):
    cfg = {
        **load_config("synthetic--bailing-hybrid-defaults.json"),
        "architectures": ["BailingMoeV3VLForConditionalGeneration"],
    }
    assert refused(client, cfg)["field"].endswith("architectures")


def test_zamba2_gives_each_hybrid_layer_its_own_kv_beside_its_mamba_layer(client):
    body = client.post("/v1/models/resolve", json=load_config("synthetic--zamba2-2.7b-shaped.json")).json()
    assert body["layer_counts"] == {"full_attention": 9, "mamba": 54}
    g = body["geometry"]
    assert (g["num_decoder_layers"], g["num_kv_heads"], g["head_dim"]) == (54, 32, 160)
    assert (g["mamba"]["num_heads"], g["mamba"]["head_dim"], g["mamba"]["checkpoint_blocks"]) == (80, 64, 1)


def test_a_zamba2_layer_kind_kvplan_does_not_know_is_a_400_naming_layers_block_type(client):
    cfg = {**load_config("synthetic--zamba2-defaults.json"), "layers_block_type": ["mamba", "moe"]}
    assert refused(client, cfg)["field"].endswith("layers_block_type")


def test_falcon_h1_keeps_an_attention_and_a_mamba_layer_in_each_decoder_layer(client):
    body = client.post("/v1/models/resolve", json=load_config("tiiuae--Falcon-H1-7B-Instruct.json")).json()
    assert body["layer_counts"] == {"full_attention": 44, "mamba": 44}
    assert body["geometry"]["num_decoder_layers"] == 44


def test_falcon_7b_has_one_kv_head_and_a_2048_token_limit(client):
    cfg = json.loads(json.dumps(load_config("tiiuae--falcon-7b.json")))
    body = client.post("/v1/models/resolve", json=cfg).json()
    assert body["geometry"]["num_kv_heads"] == 1
    assert body["geometry"]["max_position_embeddings"] == 2048


def test_the_text_answer_names_each_hybrid_group_and_what_it_charges(client):
    text = client.get(
        "/v1/budget?model=qwen3-next-80b-a3b&gpu=h200-141gb&engine=vllm@0.33"
        "&tensor_parallel_size=2&context_tokens=32768&format=text"
    ).text
    assert "block 544 tokens (raised from 16 to unify pages)" in " ".join(text.split())  # wrapped at 100
    assert "3 × mamba" in text and "36 layers in 3 groups of 12 slots · 2 blocks each per request" in text
    assert "12 layers in 1 group of 12 slots · 61 blocks each per request" in text


def test_kimi_k3_plans_its_kda_groups_with_three_state_blocks_and_says_why(client):
    """Kimi-K3's full-rank-gate KDA prefills with FlashKDA on an H100 and keeps a prefill
    checkpoint: 2 state blocks a request + 1 (vllm/models/kimi_k3/nvidia/kda.py)."""
    cfg = load_config("synthetic--kimi-k3-shaped.json")
    body = client.post("/v1/models/resolve", json=cfg).json()
    assert body["layer_counts"] == {"mla": 16, "mamba": 48}
    assert body["geometry"]["mamba"]["checkpoint_blocks"] == 1
    ask = {"model": {"hf_config": cfg}, "kv_cache_memory_bytes": 40 << 30, "engine": "vllm@0.33",
           "max_model_len": 262144}  # fmt: skip
    r = client.post("/v1/budget?explain=true", json=ask)
    assert r.status_code == 200, r.text
    step = next(s for s in r.json()["ledger"] if s["name"].startswith("blocks_per_request[mamba"))
    assert step["value"] == 3 and "+ 1 prefill checkpoint" in step["formula"]


def test_glm5_next_packs_kda_states_sparse_mla_and_rings_as_vllm_does(client):
    """GLM-5-next (Glm5NextTextConfig's defaults) at 128K on 20 GiB: 4 KDA groups of 3 blocks, one
    MLA group of 29 blocks of 4,608 tokens, one ring group of 1 block; 52,343,808 B a block."""
    cfg = load_config("synthetic--glm-5-next-defaults.json")
    ask = {"model": {"hf_config": cfg}, "kv_cache_memory_bytes": 20 << 30, "engine": "vllm@0.33",
           "max_model_len": 131072}  # fmt: skip
    r = client.post("/v1/budget?explain=true", json=ask)
    assert r.status_code == 200, r.text
    ledger = {s["name"]: s for s in r.json()["ledger"]}
    assert ledger["bytes_per_block"]["value"] == 52_343_808
    assert ledger["packed_groups"]["value"] == 6
    assert ledger["blocks_per_request[circular_buffer × 1 groups]"]["value"] == 1
    assert ledger["blocks_per_request"]["value"] == 4 * 3 + 29 + 1


def test_glm5_next_resolved_geometry_sent_back_inline_plans_the_same(client):
    cfg = load_config("synthetic--glm-5-next-defaults.json")
    geometry = client.post("/v1/models/resolve", json=cfg).json()["geometry"]
    assert (geometry["index_kpool"], geometry["index_head_dim"], geometry["qk_rope_head_dim"]) == (16, 128, 0)
    ask = {"kv_cache_memory_bytes": 20 << 30, "engine": "vllm@0.33", "max_model_len": 131072}
    by_config = client.post("/v1/budget", json={**ask, "model": {"hf_config": cfg}}).json()
    inline = client.post("/v1/budget", json={**ask, "model": {"geometry": geometry}})
    assert inline.status_code == 200, inline.text
    keys = ("bytes_per_block", "num_blocks", "blocks_per_request", "groups")
    assert {k: inline.json()[k] for k in keys} == {k: by_config[k] for k in keys}


def test_glm5_next_text_answer_names_the_ring_group_and_what_it_charges(client):
    cfg = load_config("synthetic--glm-5-next-defaults.json")
    ask = {"model": {"hf_config": cfg}, "kv_cache_memory_bytes": 20 << 30, "engine": "vllm@0.33",
           "max_model_len": 131072}  # fmt: skip
    r = client.post("/v1/budget?format=text", json=ask)
    assert r.status_code == 200, r.text
    assert "1 × circular_buffer" in r.text and "(one ring," in r.text


@pytest.mark.parametrize(
    ("gpu", "state_blocks"),
    [("h100-sxm-80gb", 3), ("b200-180gb", 3), ("a100-80gb", 2), ("l40s-48gb", 2)],
)
def test_kimi_k3_keeps_flashkdas_checkpoint_only_on_the_gpus_flashkda_runs_on(client, gpu, state_blocks):
    """SM 9.x / 10.x / 12.x prefill with FlashKDA (a checkpoint block); SM 8.x with Triton (none)."""
    ask = {"model": {"hf_config": load_config("synthetic--kimi-k3-shaped.json")}, "gpu": gpu,
           "engine": "vllm@0.33", "max_model_len": 4096}  # fmt: skip
    r = client.post("/v1/budget", json=ask)
    assert r.status_code == 200, r.text
    assert {g["blocks_per_request"] for g in r.json()["groups"] if g["kind"] == "mamba"} == {state_blocks}


@pytest.mark.parametrize(("gpu", "status"), [("h200-141gb", 200), ("b200-180gb", 400), ("a100-80gb", 400)])
def test_glm_5_next_is_planned_on_hopper_and_refused_naming_the_gpu_elsewhere(client, gpu, status):
    """Its sparse kernels (and an fp8 cache on SM 10.x) follow the GPU; kvplan plans SM 9.x."""
    ask = {"model": {"hf_config": load_config("synthetic--glm-5-next-defaults.json")}, "gpu": gpu,
           "engine": "vllm@0.33", "max_model_len": 4096}  # fmt: skip
    r = client.post("/v1/budget", json=ask)
    assert r.status_code == status, r.text
    if status == 400:
        assert r.json()["field"] == "gpu" and "SM 9.x" in r.json()["detail"]


@pytest.mark.parametrize("name", ["dsv4-flash-shaped-64k-block256", "dsv4-defaults-256k-tp4-block256"])
def test_deepseek_v4_config_and_its_inline_compress_ratios_plan_as_vllm_does(client, name):
    """DeepSeek-V4's resolved geometry is its per-layer compress_ratios (0 for sliding-only layers)."""
    case = oracle_case(name)
    cfg = load_config(case["config"])
    geometry = client.post("/v1/models/resolve", json=cfg).json()["geometry"]
    assert len(geometry["compress_ratios"]) == geometry["num_layers"] == 43
    for model in ({"hf_config": cfg}, {"geometry": geometry}):
        r = client.post("/v1/budget", json=budget_request(model, case))
        assert r.status_code == 200, r.text
        body = r.json()
        assert (body["num_blocks"], body["blocks_per_request"], body["bytes_per_block"]) == (
            case["vllm"]["num_blocks"],
            case["vllm"]["blocks_per_request"],
            case["vllm"]["bytes_per_block"],
        )


@pytest.mark.parametrize(("field", "value"), [("kv_lora_rank", 512), ("num_kv_heads", 8)])
def test_an_inline_deepseek_v4_field_it_does_not_read_is_a_400_naming_it(client, field, value):
    """Its caches follow from compress_ratios: another field would be dropped without a word."""
    case = oracle_case("dsv4-flash-shaped-64k-block256")
    geometry = client.post("/v1/models/resolve", json=load_config(case["config"])).json()["geometry"]
    r = client.post("/v1/budget", json=budget_request({"geometry": geometry | {field: value}}, case))
    assert r.status_code == 400 and r.json()["field"] == f"model.geometry.{field}", r.text


def test_deepseek_v4_with_a_bf16_cache_is_refused_naming_the_dtype(client):
    case = oracle_case("dsv4-flash-shaped-64k-block256")
    req = budget_request({"hf_config": load_config(case["config"])}, case) | {"kv_cache_dtype": "bfloat16"}
    r = client.post("/v1/budget", json=req)
    assert r.status_code == 400 and r.json()["field"] == "kv_cache_dtype"


def test_deepseek_v41_on_an_h100_plans_as_vllm_does_from_its_config_and_inline_sources(client):
    """DeepSeek-V4.1's inline form adds kv_source_layer_ids / index_source_layer_ids; its layout is
    the SM90 one, so the request names an SM90 GPU (any other is refused naming gpu)."""
    case = oracle_case("dsv41-shaped-64k-h100-block64")
    cfg = load_config(case["config"])
    geometry = client.post("/v1/models/resolve", json=cfg).json()["geometry"]
    assert geometry["kv_source_layer_ids"] == [2, 8, 14, 20, 26, 32]
    for model in ({"hf_config": cfg}, {"geometry": geometry}):
        req = budget_request(model, case) | {"gpu": "h100-sxm-80gb"}
        body = client.post("/v1/budget", json=req).json()
        assert (body["num_blocks"], body["blocks_per_request"], body["bytes_per_block"]) == (
            case["vllm"]["num_blocks"],
            case["vllm"]["blocks_per_request"],
            case["vllm"]["bytes_per_block"],
        ), body
    r = client.post("/v1/budget", json=budget_request({"hf_config": cfg}, case) | {"gpu": "b200-180gb"})
    assert r.status_code == 400 and r.json()["field"] == "gpu"
