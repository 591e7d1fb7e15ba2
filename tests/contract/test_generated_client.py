"""A client generated from openapi/openapi.json with openapi-python-client, as a user would,
works against the live service: no operation is skipped, and budget, a GPU and a model parse."""

from __future__ import annotations

import importlib
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).parents[2]


@pytest.fixture(scope="module")
def client_package(tmp_path_factory: pytest.TempPathFactory):  # type: ignore[no-untyped-def]
    out = tmp_path_factory.mktemp("generated")
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"}
    tool = str(Path(sys.executable).parent / "openapi-python-client")
    doc = str(ROOT / "openapi" / "openapi.json")
    run = subprocess.run(
        [tool, "generate", "--path", doc, "--meta", "none", "--output-path", str(out / "kvplan_client")],
        capture_output=True, text=True, timeout=240, env=env, cwd=out,
    )  # fmt: skip
    assert run.returncode == 0, run.stdout + run.stderr
    assert "WARNING parsing" not in run.stdout + run.stderr, run.stdout
    sys.path.insert(0, str(out))
    try:
        yield importlib.import_module("kvplan_client")
    finally:
        sys.path.remove(str(out))


def test_the_generated_client_plans_a_budget_and_reads_the_catalog(client_package, server):
    from kvplan_client.api.calculations import post_budget  # type: ignore[import-not-found]
    from kvplan_client.api.catalog import get_gpu, get_model  # type: ignore[import-not-found]
    from kvplan_client.models import BudgetRequest  # type: ignore[import-not-found]

    seed_a = {"model": "llama-3-70b", "gpu": "pool-160gib", "weights_bytes": 130 * 1024**3,
              "context_tokens": 8192, "non_kv_bytes": 0}  # fmt: skip
    with client_package.Client(base_url=server.url) as client:
        answer = post_budget.sync(client=client, body=BudgetRequest.from_dict(seed_a))
        assert answer.num_blocks == 880 and answer.concurrency.guaranteed == 6
        gpu = get_gpu.sync("h100-sxm-80gb", client=client)
        assert gpu.memory_bytes == 85520809984
        model = get_model.sync("llama-3.1-8b", client=client)
        assert model.bytes_per_token == 131072
