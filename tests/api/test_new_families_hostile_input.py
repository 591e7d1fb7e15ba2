"""Hostile config.json values for the families vLLM 0.33 lays out with model code of its own
(DeepSeek-V4, Dots3, HY-V4, Muse Spark, Step5, ...): each is a 400 naming the field, never a 500."""

from __future__ import annotations

import copy
import time

import pytest

from tests.oracle.cases import budget_request, oracle_case
from tests.oracle.generate import load_config


def problem(r, status: int, field: str) -> dict:
    """A problem+json answer of this status naming the field, in its field and its detail."""
    assert r.status_code == status, r.text
    assert r.headers["content-type"].startswith("application/problem+json")
    body = r.json()
    assert body["field"] == field and field in body["detail"], body
    return body


def hostile(client, case_name: str, change, inside: str | None = None):
    case = oracle_case(case_name)
    cfg = copy.deepcopy(load_config(case["config"]))
    change(cfg[inside] if inside else cfg)
    return client.post("/v1/budget", json=budget_request({"hf_config": cfg}, case))


def named(r, field: str) -> dict:
    return problem(r, 400, f"model.hf_config.{field}")


def _set(key: str, value):
    return lambda cfg: cfg.__setitem__(key, value)


def _first(key: str, value):
    return lambda cfg: cfg[key].__setitem__(0, value)


@pytest.mark.parametrize("entry", [[4], {"a": 4}])
def test_a_compress_ratios_entry_that_is_a_list_or_an_object_is_a_400_naming_it(client, entry):
    r = hostile(client, "dsv4-flash-shaped-64k-block256", _first("compress_ratios", entry))
    named(r, "compress_ratios[0]")


@pytest.mark.parametrize("entry", [["full"], {"full": 1}])
def test_an_indexer_types_entry_that_is_not_a_string_is_a_400_naming_it(client, entry):
    r = hostile(client, "hy-v4-sparse-shaped-64k-block64", _first("indexer_types", entry))
    named(r, "indexer_types")


@pytest.mark.parametrize("entry", [["full_attention"], {"a": 1}])
def test_a_muse_spark_layer_types_entry_that_is_not_a_string_is_a_400_naming_it(client, entry):
    r = hostile(client, "muse-spark-shaped-32k", _first("layer_types", entry), inside="text_config")
    named(r, "layer_types")


@pytest.mark.parametrize("value", ["x", [16], {"a": 16}, -16])
def test_a_step5_sparse_indexer_num_heads_that_is_not_a_positive_int_is_a_400_naming_it(client, value):
    def change(cfg):
        cfg["sparse_config"]["sparse_indexer_num_heads"] = value

    r = hostile(client, "step5-shaped-64k", change)
    named(r, "sparse_config.sparse_indexer_num_heads")


@pytest.mark.parametrize("value", [["yarn"], {"a": 1}])
def test_a_rope_type_that_is_not_a_string_is_a_400_naming_it_under_the_key_sent(client, value):
    def change(cfg):
        cfg["rope_parameters"]["rope_type"] = value

    r = hostile(client, "dots3-note-shaped-32k-block64", change)
    named(r, "rope_parameters.rope_type")


@pytest.mark.parametrize("value", [1.5, True, 0, 4096])
def test_a_step5_apply_to_layer_types_that_is_not_a_list_is_a_400_naming_it(client, value):
    def change(cfg):
        cfg["sparse_config"]["apply_to_layer_types"] = value

    r = hostile(client, "step5-shaped-64k", change)
    named(r, "sparse_config.apply_to_layer_types")


def _v41_sources(n: int, ratio: int, sources: list[int]):
    def change(cfg):
        cfg["num_hidden_layers"] = n
        cfg["compress_ratios"] = [ratio] * n
        cfg["kv_source_layer_ids"] = cfg["index_source_layer_ids"] = sources

    return change


def timed_budget(client, change, within: float):
    case = oracle_case("dsv41-shaped-64k-h100-block64")
    cfg = copy.deepcopy(load_config(case["config"]))
    change(cfg.get("text_config", cfg))
    body = budget_request({"hf_config": cfg}, case) | {"gpu": "h100-sxm-80gb"}
    t0 = time.perf_counter()
    r = client.post("/v1/budget", json=body)
    assert time.perf_counter() - t0 < within, r.text[:200]
    return r


def test_deepseek_v41_source_lists_padded_with_ids_past_the_layers_are_read_in_linear_time(client):
    """Ids past the last layer are allowed (vLLM ignores them); 50,000 of them before the one that
    counts took 10 s when each compressed layer scanned the whole list."""
    r = timed_budget(client, _v41_sources(4096, 1, [4096] * 50_000 + [0]), within=1.0)
    assert r.status_code == 200, r.text


def test_deepseek_v41_with_every_layer_a_source_plans_in_linear_time(client):
    """4,096 layers, each a kv and index source: the stage check and the cache specs looked each
    layer up in the source tuples (16M steps, about a second)."""
    r = timed_budget(client, _v41_sources(4096, 2, list(range(4096))), within=0.5)
    assert r.status_code == 200, r.text


@pytest.mark.parametrize("key", ["head_dim", "num_heads", "short_conv_kernel_size"])
@pytest.mark.parametrize("value", ["x", 0])
def test_a_bad_glm5_next_linear_attn_config_entry_is_a_400_naming_it_not_the_key_it_overrides(
    client, key, value
):
    def change(cfg):
        cfg["linear_attn_config"][key] = value

    r = hostile(client, "glm-5-next-vl-shaped-128k", change, inside="text_config")
    named(r, f"linear_attn_config.{key}")


@pytest.mark.parametrize("value", ["x", ["full_attention"], [7] * 48])
def test_a_bad_step5_layer_types_with_mtp_is_a_400_naming_it_not_layer_types(client, value):
    r = hostile(client, "step5-shaped-64k", _set("layer_types_with_mtp", value))
    assert r.status_code == 400 and r.json()["field"].startswith("model.hf_config.layer_types_with_mtp"), (
        r.text
    )


def test_a_deepseek_v41_compressed_layer_without_an_index_source_below_it_is_a_400_naming_index_sources(
    client,
):
    def change(cfg):
        cfg["index_source_layer_ids"] = [cfg["num_hidden_layers"]]

    r = hostile(client, "dsv41-shaped-64k-h100-block64", change, inside="text_config")
    named(r, "index_source_layer_ids")


@pytest.mark.parametrize(
    "name", ["step5-shaped-64k", "dots3-note-shaped-32k-block64", "glm-5-next-vl-shaped-128k"]
)
def test_a_fleet_whose_weights_need_pipeline_stages_marks_those_layouts_infeasible(client, name):
    """The caller sent no pipeline_parallel_size: the fleet tries stages itself when the weights do
    not fit, and a staged layout kvplan does not model is one infeasible layout, not a 400."""
    case = oracle_case(name)
    i = case["inputs"]
    body = {
        "model": {"hf_config": load_config(case["config"])},
        "engine": "vllm@0.33",
        "block_size": i["block_size"],
        "weights_bytes": 600 * 2**30,
        "workload": {"context_tokens": 8192},
        "target_concurrency": 100,
        "fleet": [{"gpu": "h100-sxm-80gb", "count": 64}],
    }
    r = client.post("/v1/fleet", json=body)
    assert r.status_code == 200, r.text


@pytest.mark.parametrize(
    ("name", "key"),
    [
        ("qwen4-exp-defaults-8k-tp16", "linear_num_value_heads"),
        ("kimi-k3-shaped-256k", "num_attention_heads"),
    ],
)
def test_a_fleet_marks_a_tp_that_cannot_shard_a_recurrent_state_infeasible_and_answers(client, name, key):
    """6 heads shard on 1, 2 or 3 GPUs, not on 4 or 8: those layouts are infeasible, the fleet answers."""
    case = oracle_case(name)
    cfg = copy.deepcopy(load_config(case["config"]))
    cfg.get("text_config", cfg)[key] = 6
    body = {
        "model": {"hf_config": cfg},
        "engine": "vllm@0.33",
        "block_size": case["inputs"]["block_size"],
        "workload": {"context_tokens": 8192},
        "target_concurrency": 100,
        "fleet": [{"gpu": "h200-141gb", "count": 64}],
    }
    r = client.post("/v1/fleet", json=body)
    assert r.status_code == 200, r.text


def test_a_bad_rope_factor_is_a_400_named_under_the_key_sent(client):
    def change(cfg):
        cfg["rope_parameters"] = {"rope_type": "linear", "factor": "x"}

    named(hostile(client, "dots3-note-shaped-32k-block64", change), "rope_parameters.factor")


@pytest.mark.parametrize(
    ("name", "inside"),
    [("inkling-shaped-32k", None), ("step5-shaped-64k", None), ("qwen4-exp-qsa-shaped-32k", None)],
)
def test_layers_that_make_too_many_kv_cache_layers_are_a_400_naming_num_hidden_layers(client, name, inside):
    """3,000 decoder layers are within the limit, but each keeps two or three caches: the config
    has no num_layers key, so the refusal names the one it has."""

    def change(cfg):
        n = cfg["num_hidden_layers"]
        cfg["num_hidden_layers"] = 3000
        for key, value in list(cfg.items()):  # per-layer lists (an MTP entry past them kept)
            if isinstance(value, list) and len(value) in (n, n + 1):
                cfg[key] = (value[:n] * 3000)[:3000] + value[n:]

    r = hostile(client, name, change, inside=inside)
    body = named(r, "num_hidden_layers")
    assert "4096" in body["detail"], body


def test_a_kimi_k3_config_whose_every_layer_is_kda_resolves_to_a_geometry_that_plans_back(client):
    """No MLA layer left, but the config's kv_lora_rank is still in the geometry: the resolved
    inline form must not carry the MLA-less head dims (v_head_dim 0) the schema refuses."""
    case = oracle_case("kimi-k3-shaped-256k")
    cfg = copy.deepcopy(load_config(case["config"]))
    cfg["text_config"]["num_hidden_layers"] = 3
    from_config = client.post("/v1/budget", json=budget_request({"hf_config": cfg}, case))
    assert from_config.status_code == 200, from_config.text
    geometry = client.post("/v1/models/resolve", json=cfg).json()["geometry"]
    from_geometry = client.post("/v1/budget", json=budget_request({"geometry": geometry}, case))
    assert from_geometry.status_code == 200, from_geometry.text
    for key in ("num_blocks", "bytes_per_block", "blocks_per_request"):
        assert from_geometry.json()[key] == from_config.json()[key]


@pytest.mark.parametrize("name", ["falcon-mamba-shaped-8k", "mamba2-shaped-16k"])
def test_an_attention_free_model_resolves_to_a_geometry_that_plans_back(client, name):
    """Every layer Mamba: a resolved geometry without layer_types read back as full attention."""
    case = oracle_case(name)
    cfg = load_config(case["config"])
    geometry = client.post("/v1/models/resolve", json=cfg).json()["geometry"]
    from_geometry = client.post("/v1/budget", json=budget_request({"geometry": geometry}, case))
    assert from_geometry.status_code == 200, from_geometry.text
    assert from_geometry.json()["num_blocks"] == case["vllm"]["num_blocks"]
    assert from_geometry.json()["bytes_per_block"] == case["vllm"]["bytes_per_block"]


def test_a_qwen4_exp_ple_state_above_the_state_limit_is_a_400_naming_its_largest_factor(client):
    """hc_count 2^20 with a 256-token kernel makes a 3 TB short-conv state (the block raised to 18M
    tokens for it): refused as the inline form refuses it."""

    def change(cfg):
        cfg["hc_count"], cfg["ple_conv_kernel_size"] = 1 << 20, 256

    r = hostile(client, "qwen4-exp-ple-defaults-32k", change)
    body = named(r, "hc_count")
    assert "1099511627776" in body["detail"], body
