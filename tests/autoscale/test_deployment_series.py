"""The block size a deployment's series publish is the one its engines report in
vllm:cache_config_info: a hybrid of attention and Mamba layers runs with the attention block vLLM
raised (Platform._align_hybrid_block_size), not the one asked for."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from litestar.testing import TestClient

from kvplan.api.app import create_app
from kvplan.api.settings import Settings
from kvplan.presets import Registry
from kvplan.services.deployments import read
from tests.metrics import sample

FLEET = Path(__file__).parent / "data" / "deployments.toml"
HYBRID = {"namespace": "research", "deployment": "granite-4-h-small"}


@pytest.fixture(scope="module")
def metrics(registry: Registry) -> Iterator[str]:
    with TestClient(create_app(Settings(deployments=str(FLEET)), registry=registry)) as c:
        yield c.get("/metrics").text


def test_a_hybrids_series_publish_the_block_its_engines_run_with(registry, metrics):
    b = read(registry, FLEET.read_bytes()).plans[("research", "granite-4-h-small")].budget
    attention = next(g for g in b.groups if g.kind == "full_attention").block_size
    assert attention > b.block_size
    assert sample(metrics, "kvplan_deployment_block_size_tokens", **HYBRID) == attention
    config = dict(num_gpu_blocks=str(b.num_blocks), block_size=str(attention))
    assert sample(metrics, "kvplan_deployment_cache_config_info", **HYBRID, **config) == 1
