"""A deployment may name a Hub model, as `vllm serve` does: the plan reads it from the Hub (a
loopback Hub-compatible server here) and its series name the commit; a Hub that cannot be asked
fails that deployment by name, not the others."""

from __future__ import annotations

from pathlib import Path

from litestar.testing import TestClient

from kvplan.api.app import create_app
from kvplan.api.settings import Settings
from kvplan.presets import Registry
from tests.autoscale.test_deployments_api import series
from tests.hub.fakehub import FakeHub

HUB_AND_PRESET = """
[[deployment]]
namespace = "serving"
name = "qwen3-8b-base"
model = "Qwen/Qwen3-8B-Base"
gpu = "l40s-48gb"
context_tokens = 4096
max_replicas = 4

[[deployment]]
namespace = "serving"
name = "llama"
model = "llama-3.1-8b"
gpu = "h100-sxm-80gb"
max_replicas = 4
"""


def test_a_hub_model_is_planned_from_its_commit(hub: FakeHub, registry: Registry, tmp_path: Path):
    path = tmp_path / "deployments.toml"
    path.write_text(HUB_AND_PRESET)
    with TestClient(create_app(Settings(deployments=str(path)), registry=registry)) as client:
        one = client.get("/v1/deployments/serving/qwen3-8b-base").json()
        assert one["model_name"] == "Qwen/Qwen3-8B-Base"
        sha = one["budget"]["hub"]["sha"]
        budget = client.post("/v1/budget", json={"model": "Qwen/Qwen3-8B-Base", "gpu": "l40s-48gb",
                                                 "context_tokens": 4096}).json()  # fmt: skip
        assert budget["hub"]["sha"] == sha
        assert (
            series(client.get("/metrics").text)["num_gpu_blocks", "serving", "qwen3-8b-base"]
            == budget["num_blocks"]
        )
        info = [
            line for line in client.get("/metrics").text.splitlines() if "kvplan_deployment_info{" in line
        ]
        assert any(f'model_revision="{sha}"' in line and "qwen3-8b-base" in line for line in info)
        vllm = client.get("/v1/deployments/serving/qwen3-8b-base/manifests?kind=vllm-args").text
        assert "- Qwen/Qwen3-8B-Base\n" in vllm


def test_an_unknown_hub_model_fails_its_deployment_by_name_only(hub: FakeHub, registry: Registry, tmp_path):
    path = tmp_path / "deployments.toml"
    path.write_text(HUB_AND_PRESET.replace("Qwen/Qwen3-8B-Base", "Qwen/No-Such-Model"))
    with TestClient(create_app(Settings(deployments=str(path)), registry=registry)) as client:
        listing = client.get("/v1/deployments").json()
        assert [d["deployment"] for d in listing["deployments"]] == ["llama"]
        (failure,) = listing["failures"]
        assert failure["deployment"] == "serving/qwen3-8b-base" and failure["field"] == "model"
