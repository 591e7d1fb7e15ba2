"""Models named by their Hugging Face Hub id, read from a Hub-compatible server on loopback
(tests/hub/fakehub.py) with the real huggingface_hub client: KV figures, the checkpoint's own
weights, the commit, and every way the Hub can fail."""

from __future__ import annotations

from pathlib import Path

import pytest

from kvplan.hub import reset_default_hub
from tests.hub import repos
from tests.hub.fakehub import NO_PROXIES, TOKEN

H100 = {"gpu": "h100-sxm-80gb"}


def budget(client, model: str, **kw):  # type: ignore[no-untyped-def]
    return client.post("/v1/budget", json={"model": model, **H100, **kw})


def test_a_hub_id_plans_like_its_preset_and_names_the_commit(client, hub):
    ours = budget(client, "Qwen/Qwen3-8B-Base", kv_cache_memory_bytes=20 << 30)
    assert ours.status_code == 200, ours.text
    preset = budget(client, "qwen3-8b", kv_cache_memory_bytes=20 << 30).json()
    body = ours.json()
    for figure in ("bytes_per_block", "num_blocks", "blocks_per_request", "kv_cache_size_tokens"):
        assert body[figure] == preset[figure], figure
    assert body["per_token"]["bytes_per_token"] == preset["per_token"]["bytes_per_token"]
    assert body["model"] == f"Qwen/Qwen3-8B-Base@{repos.QWEN3_8B_BASE.sha}"
    assert body["hub"] == {
        "repo_id": "Qwen/Qwen3-8B-Base",
        "revision": "main",
        "sha": repos.QWEN3_8B_BASE.sha,
        "from_cache": False,
    }


def test_the_weights_are_the_served_tensors_bytes(client, hub):
    body = client.post("/v1/budget?explain=true", json={"model": "Qwen/Qwen3-8B-Base", **H100}).json()
    assert body["weights_bytes"] == repos.expected_total_bytes(repos.QWEN3_8B_BASE)
    step = next(s for s in body["ledger"] if s["name"] == "weights_bytes")
    assert "safetensors headers of Qwen/Qwen3-8B-Base" in step["formula"]


def test_a_pinned_commit_resolves_and_is_named(client, hub):
    body = budget(client, f"Qwen/Qwen3-8B-Base@{repos.QWEN3_8B_BASE.sha}").json()
    assert body["hub"]["sha"] == repos.QWEN3_8B_BASE.sha
    assert body["hub"]["revision"] == repos.QWEN3_8B_BASE.sha


@pytest.mark.parametrize(
    "repo",
    [repos.FP8_DYNAMIC, repos.W4A16, repos.AWQ, repos.GPT_OSS, repos.QWEN25_VL],
    ids=lambda r: r.repo_id,
)
def test_each_quantization_loads_exactly_its_stored_bytes(client, hub, repo):
    # pinned: openai/gpt-oss-20b is also a preset alias, which answers offline without a revision
    body = budget(client, f"{repo.repo_id}@{repo.sha}").json()
    assert body["weights_bytes"] == repos.expected_total_bytes(repo), body


@pytest.mark.parametrize(("repo", "ratio"), [(repos.FP8_DYNAMIC, 1.7), (repos.W4A16, 2.5)])
def test_quantized_checkpoints_load_far_less_than_parameters_times_bf16(client, hub, repo, ratio):
    loaded = budget(client, repo.repo_id).json()["weights_bytes"]
    as_bf16 = budget(client, repo.repo_id, weight_dtype="bfloat16").json()["weights_bytes"]
    assert as_bf16 / loaded > ratio


def test_a_hub_id_that_is_a_preset_alias_answers_offline_from_the_preset(client, hub):
    body = budget(client, "Qwen/Qwen3-8B").json()
    assert body["model"] == "qwen3-8b"
    assert hub.count() == 0


def test_gated_without_a_token_is_a_403_saying_so_and_the_token_unlocks_it(client, hub, monkeypatch):
    r = budget(client, repos.GATED.repo_id)
    assert r.status_code == 403
    assert r.json()["field"] == "model" and "gated" in r.json()["detail"]
    assert TOKEN not in r.text
    monkeypatch.setenv("HF_TOKEN", TOKEN)
    reset_default_hub()
    ok = budget(client, repos.GATED.repo_id)
    assert ok.status_code == 200, ok.text
    assert TOKEN not in ok.text


def test_an_unknown_repo_is_a_404_naming_it(client, hub):
    r = budget(client, repos.UNKNOWN_REPO_ID)
    assert r.status_code == 404
    assert repos.UNKNOWN_REPO_ID in r.json()["detail"]


def test_an_unknown_revision_is_a_404(client, hub):
    r = budget(client, "Qwen/Qwen3-8B-Base@no-such-branch")
    assert r.status_code == 404
    assert "no-such-branch" in r.json()["detail"]


def test_a_malformed_id_is_a_400_before_any_request(client, hub):
    r = budget(client, "org/name/extra")
    assert r.status_code == 400 and r.json()["field"] == "model"
    assert hub.count() == 0


def test_offline_with_a_cached_copy_answers_from_it_marked(client, hub, monkeypatch):
    assert budget(client, "Qwen/Qwen3-8B-Base").status_code == 200
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    reset_default_hub()
    hub.reset()
    r = budget(client, "Qwen/Qwen3-8B-Base")
    assert r.status_code == 200, r.text
    assert r.json()["hub"]["from_cache"] is True
    assert hub.count() == 0


def test_offline_without_a_cached_copy_is_a_503_with_retry_after(client, hub, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    reset_default_hub()
    r = budget(client, "Qwen/Qwen3-8B-Base")
    assert r.status_code == 503
    assert r.headers["retry-after"] == "30"
    assert hub.count() == 0


def test_a_hub_slower_than_the_timeout_is_a_503(client, hub):
    r = budget(client, repos.SLOW.repo_id)
    assert r.status_code == 503
    assert "did not answer" in r.json()["detail"]


@pytest.mark.parametrize("repo", [repos.OVERSIZED_CONFIG, repos.OVERSIZED_HEADER], ids=lambda r: r.repo_id)
def test_a_repo_beyond_the_size_cap_is_a_422(client, hub, repo):
    r = budget(client, repo.repo_id)
    assert r.status_code == 422, r.text
    assert r.json()["field"] == "model"


def test_a_repeated_question_fetches_once(client, hub):
    for _ in range(3):
        assert budget(client, "Qwen/Qwen3-8B-Base").status_code == 200
    assert hub.count("Qwen/Qwen3-8B-Base", "model_info") == 1


def test_every_endpoint_takes_a_hub_id(client, hub):
    model = "Qwen/Qwen3-8B-Base"
    assert client.post("/v1/per-token", json={"model": model}).status_code == 200
    assert client.get(f"/v1/budget?model={model}&gpu=h100-sxm-80gb").status_code == 200
    assert client.get(f"/v1/per-token?model={model}").status_code == 200
    batch = client.post("/v1/budget/batch", json={"scenarios": [{"model": model, **H100}]}).json()
    assert "result" in batch["results"][0], batch
    fleet = client.post(
        "/v1/fleet",
        json={
            "model": model,
            "workload": {"context_tokens": 8192},
            "fleet": [{"gpu": "h100-sxm-80gb", "count": 8}],
        },
    )
    assert fleet.status_code == 200, fleet.text
    sweep = client.get(f"/v1/sweep?model={model}&gpu=h100-sxm-80gb&vary=context_tokens&values=4096,8192")
    assert sweep.status_code == 200, sweep.text
    one = {"requests": [{"prompt_tokens": 100, "output_tokens": 10}]}
    sim = client.post("/v1/simulate", json={"model": model, **H100, "workload": one})
    assert sim.status_code == 200, sim.text
    detail = client.get(f"/v1/models/{model}").json()
    assert detail["hub"]["sha"] == repos.QWEN3_8B_BASE.sha
    assert detail["loaded_weights"]["total_bytes"] == repos.expected_total_bytes(repos.QWEN3_8B_BASE)


def test_the_readme_table_shows_the_served_checkpoints_weights(client, hub):
    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text()
    for repo in (repos.QWEN3_8B_BASE, repos.FP8_DYNAMIC, repos.W4A16):
        row = next(line for line in readme.splitlines() if line.startswith(f"| {repo.repo_id} "))
        loaded = budget(client, repo.repo_id).json()["weights_bytes"]
        as_bf16 = budget(client, repo.repo_id, weight_dtype="bfloat16").json()["weights_bytes"]
        assert f"| {loaded:,} B | {as_bf16:,} B |" in row, row


@pytest.mark.parametrize("tp", [1, 8, 16])
def test_a_gpu_holds_its_shard_plus_the_replicated_norms_and_kv_heads(client, hub, tp):
    """Qwen3-8B has 8 KV heads: at TP 16 each K/V projection is split 8 ways, not 16 (vLLM's
    QKVParallelLinear replicates heads); norms are whole on every rank."""
    from kvplan.core.model.weights import SAFETENSORS_DTYPE_BYTES

    norms = kv = total = 0
    for name, (dtype, shape) in repos.QWEN3_8B_BASE.tensors.items():
        n = SAFETENSORS_DTYPE_BYTES[dtype]
        for d in shape:
            n *= d
        total += n
        if name.endswith("norm.weight"):
            norms += n
        elif ".k_proj." in name or ".v_proj." in name:
            kv += n
    expected = -(-(total - norms - kv) // tp) + norms + -(-kv // min(tp, 8))
    body = budget(client, "Qwen/Qwen3-8B-Base", tensor_parallel_size=tp).json()
    assert body["weights_bytes_per_gpu"] == expected
    assert norms > 0 and kv > 0


def test_the_cli_takes_a_hub_id(fake_hub, tmp_path):
    import os
    import subprocess
    import sys

    env = {**os.environ, **NO_PROXIES, "HF_ENDPOINT": fake_hub.url, "HF_HOME": str(tmp_path),
           "HF_HUB_CACHE": str(tmp_path / "hub"), "HF_TOKEN": "", "HF_HUB_DISABLE_IMPLICIT_TOKEN": "1",
           "HF_HUB_OFFLINE": "0"}  # fmt: skip
    run = subprocess.run(
        [sys.executable, "-m", "kvplan", "budget", "model=Qwen/Qwen3-8B-Base", "gpu=h100-sxm-80gb"],
        env=env, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert run.returncode == 0, run.stderr
    assert f"Qwen/Qwen3-8B-Base@{repos.QWEN3_8B_BASE.sha}" in run.stdout


def test_resolve_takes_a_hub_id_as_a_json_string(client, hub):
    body = client.post("/v1/models/resolve", json="Qwen/Qwen3-8B-Base").json()
    assert body["layer_counts"] == {"full_attention": 36}
    assert client.post("/v1/models/resolve", json="not an id").status_code == 400
