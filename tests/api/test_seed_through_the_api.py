"""Every seed figure is reachable through /v1/per-token and /v1/budget, by GET and by POST."""

from __future__ import annotations

import pytest

from tests.seed import A_BLOCKS, GIB, TABLE_1, TABLE_2, A, B, C, blocks_of


def both(client, path, params):
    """The answer by POST (JSON body) and by GET (query parameters); they must agree."""
    post = client.post(path, json=params)
    get = client.get(path, params=params)
    assert post.status_code == get.status_code == 200, (post.text, get.text)
    assert post.json() == get.json()
    return post.json()


@pytest.mark.parametrize("row", TABLE_1, ids=[row.model for row in TABLE_1])
def test_seed_table_1_through_per_token(client, row):
    bf16 = both(
        client, "/v1/per-token", {"model": row.model, "kv_cache_dtype": "bfloat16", "context_tokens": 131072}
    )
    fp8 = both(client, "/v1/per-token", {"model": row.model, "kv_cache_dtype": "fp8"})
    assert bf16["bytes_per_token"] == row.bf16_kib * 1024
    assert fp8["bytes_per_token"] == row.fp8_kib * 1024
    assert bf16["kv_bytes_per_request"] == row.bf16_kib * 1024 * 131072
    assert round(bf16["kv_bytes_per_request"] / GIB, 3) == row.gib_128k
    assert f"{round(bf16['mha_equivalent_ratio'], 1):g}×" == row.ratio
    assert bf16["engine"] == "vllm@e740bad" and bf16["registry_version"].startswith("reg-")


def test_group_a_fills_880_blocks_and_holds_6(client):
    a = both(client, "/v1/budget", A)
    assert blocks_of(a) == A_BLOCKS
    assert a["concurrency"]["guaranteed"] == 6
    assert a["concurrency"]["budget_floor"] == 6
    assert a["concurrency"]["vllm_reported"] == 6.875
    assert a["kv_cache_size_tokens"] == 56320
    assert a["engine"] == "vllm@e740bad"
    assert "ledger" not in a


@pytest.mark.parametrize("row", TABLE_2)
def test_seed_table_2_through_budget(client, row):
    b = both(client, "/v1/budget", row.request)
    assert round(b["available_kv_bytes"] / GIB, 2) == row.budget_gib
    assert b["kv_bytes_per_request"] / GIB == row.kv_gib
    assert b["concurrency"]["budget_floor"] == row.concurrency == b["concurrency"]["guaranteed"]


def test_group_b_holds_24_per_card_and_flags_the_pooled_192(client):
    b = both(client, "/v1/budget", B)
    assert b["concurrency"]["guaranteed"] == 24 == b["concurrency"]["budget_floor"]
    assert b["pooled"]["concurrency"] == 192
    codes = [w["code"] for w in b["warnings"]]
    assert "pooled_not_deployable" in codes and "mla_replicated_under_tp" in codes


def test_group_c_holds_none_and_says_what_fits(client):
    c = both(client, "/v1/budget", C)
    assert c["concurrency"]["guaranteed"] == 0
    assert c["max_context_tokens"] == 56256
    assert "budget_insufficient" in [w["code"] for w in c["warnings"]]


def test_text_answer_for_group_a_shows_880_blocks_and_6(client):
    r = client.get("/v1/budget", params={**A, "format": "text"})
    assert r.status_code == 200
    assert r.headers["content-type"].startswith("text/plain")
    assert "880 (879 usable" in r.text
    assert "concurrency (guaranteed)  6 " in r.text
    assert "ledger" in r.text and "vllm/v1/worker/utils.py" in r.text


def test_accept_text_plain_gets_text(client):
    r = client.post("/v1/budget", json=C, headers={"Accept": "text/plain"})
    assert r.headers["content-type"].startswith("text/plain")
    warnings = r.text.split("\nwarnings\n", 1)[1]
    assert warnings.startswith("  ! No request of 131,072 tokens fits")
    assert "budget_insufficient" not in r.text  # the code stays in JSON


def test_explain_adds_the_ledger_to_json(client):
    r = client.post("/v1/budget?explain=true", json=A).json()
    steps = {s["name"]: s for s in r["ledger"]}
    assert steps["num_blocks"]["value"] == 880
    assert steps["requested_bytes"]["inputs"]["gpu_memory_utilization"] == 0.92


def test_get_accepts_inline_geometry_with_dotted_parameters(client):
    params = {  # group B with DeepSeek-V3's geometry sent inline
        **{k: v for k, v in B.items() if k != "model"},
        "model.geometry.num_layers": 61,
        "model.geometry.num_attention_heads": 128,
        "model.geometry.kv_lora_rank": 512,
        "model.geometry.qk_rope_head_dim": 64,
    }
    r = client.get("/v1/budget", params=params)
    assert r.status_code == 200, r.text
    assert r.json()["concurrency"]["guaranteed"] == 24


def test_a_config_json_can_be_sent_as_the_model(client, registry):
    import json

    from kvplan.presets.registry import BUILTIN_DIR

    cfg = json.loads((BUILTIN_DIR / "models" / "llama-3-70b.json").read_text())["config"]
    r = client.post("/v1/budget", json={**A, "model": {"hf_config": cfg}})
    assert r.status_code == 200, r.text
    assert r.json()["num_blocks"] == 880
