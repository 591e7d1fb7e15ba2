"""Models, GPUs, engines and config.json resolution."""

from __future__ import annotations

import json

from kvplan.presets.registry import BUILTIN_DIR
from tests.seed import A


def test_models_list_every_preset_with_per_token_bytes(client, registry):
    r = client.get("/v1/models").json()
    assert r["registry_version"] == registry.version
    by_id = {m["id"]: m for m in r["models"]}
    assert set(by_id) == set(registry.models)
    assert by_id["llama-3-70b"]["bytes_per_token"] == 327680
    assert by_id["deepseek-v3"]["attention"] == "MLA"


def test_model_detail_accepts_hf_repo_names_and_its_geometry_round_trips(client):
    detail = client.get("/v1/models/meta-llama/Meta-Llama-3-70B").json()
    assert detail["id"] == "llama-3-70b"
    assert detail["params"]["source"]
    assert detail["valid_tensor_parallel_sizes"][:4] == [1, 2, 4, 8]
    inline = client.post("/v1/budget", json={**A, "model": {"geometry": detail["geometry"]}})
    assert inline.status_code == 200, inline.text
    assert inline.json()["num_blocks"] == 880


def test_gpus_list_memory_in_bytes_and_its_source(client):
    gpus = {g["id"]: g for g in client.get("/v1/gpus").json()["gpus"]}
    assert gpus["pool-160gib"]["memory_bytes"] == 160 * 1024**3
    assert gpus["gb200-186gb"]["nominal"] is True
    assert "origin" not in gpus["h100-sxm-80gb"]
    assert client.get("/v1/gpus/h200-141gb").json()["name"] == "NVIDIA H200"


def test_engines_list_the_profiles_and_the_default(client):
    r = client.get("/v1/engines").json()
    assert r["default"] == "vllm@e740bad"
    rules = {e["id"]: e for e in r["engines"]}
    assert rules["vllm@0.10"]["default_gpu_memory_utilization"] == 0.90
    assert rules["vllm@0.33"]["default_block_size"] == 16


def test_resolve_turns_a_config_into_sendable_geometry(client):
    cfg = json.loads((BUILTIN_DIR / "models" / "gpt-oss-120b.json").read_text())["config"]
    r = client.post("/v1/models/resolve", json=cfg)
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["layer_counts"] == {"full_attention": 18, "sliding_attention": 18}
    assert body["bytes_per_token"] == 73728
    assert body["params"]["estimated"] is True
    again = client.post("/v1/per-token", json={"model": {"geometry": body["geometry"]}})
    assert again.json()["bytes_per_token"] == 73728


def test_lists_have_a_text_form(client):
    text = client.get("/v1/models?format=text").text
    assert "llama-3-70b" in text and "B/token" in text
    assert "pool-160gib" in client.get("/v1/gpus", headers={"Accept": "text/plain"}).text


def test_health_and_readiness(client, registry):
    assert client.get("/healthz").json() == {"status": "ok"}
    assert client.get("/readyz").json() == {"status": "ready", "registry_version": registry.version}


def test_interactive_docs_are_served_without_a_cdn(client):
    page = client.get("/schema")
    assert page.status_code == 200
    assert "cdn" not in page.text.lower() and "https://" not in page.text
    assert client.get("/schema/assets/swagger-ui-bundle.js").status_code == 200
    assert client.get("/schema/openapi.json").json()["info"]["title"] == "kvplan"
