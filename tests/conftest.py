from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

# Tests never need the network: a Hub id reaches no Hub unless a test points the service at the
# loopback one (tests/hub/fakehub.py), which turns offline mode off for itself.
os.environ["HF_HUB_OFFLINE"] = "1"

from kvplan import compiled
from kvplan.core.budget import Budget, BudgetInput, compute_budget
from kvplan.core.engine.profiles import get_profile
from kvplan.hub import reset_default_hub
from kvplan.presets import Registry, load_registry
from tests.hub.fakehub import FakeHub, isolate_hf_client, serve_hub
from tests.hub.repos import ALL_REPOS
from tests.live import Server, start_server


@pytest.fixture(scope="session")
def registry() -> Registry:
    return load_registry(extra_dir="")


@pytest.fixture(scope="session")
def budget(registry: Registry):
    """budget("llama-3-70b", gpu="pool-160gib", ...) → the core's answer, on the seed's
    weights-only budget unless the test passes non_kv_bytes=None (the memory model's estimate)."""

    def run(
        model: str, gpu: str | None = None, engine: str | None = None, explain: bool = False, **kw: Any
    ) -> Budget:
        geo = registry.model(model).geometry
        kw.setdefault("non_kv_bytes", 0)
        if gpu is not None:
            g = registry.gpu(gpu)
            kw.setdefault("gpu_memory_bytes", g.memory_bytes)
            kw.setdefault("gpu_name", g.name)
        return compute_budget(BudgetInput(geometry=geo, profile=get_profile(engine), **kw), explain=explain)

    return run


@pytest.fixture(scope="session")
def server() -> Iterator[Server]:
    """One real `kvplan serve` process shared by the server, browser and contract tests, planning
    the test fleet's deployments."""
    from tests.autoscale.conftest import FLEET

    s = start_server(env={"KVPLAN_DEPLOYMENTS": str(FLEET)})
    yield s
    s.stop()


@pytest.fixture(scope="module")
def fake_hub() -> Iterator[FakeHub]:
    """A Hub-compatible server on loopback with the fixture repos (tests/hub/repos.py)."""
    with serve_hub(ALL_REPOS) as hub:
        yield hub


@pytest.fixture
def hub(fake_hub: FakeHub, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[FakeHub]:
    """The service's Hub client pointed at the loopback Hub, with an empty cache."""
    isolate_hf_client(monkeypatch, tmp_path / "hub", endpoint=fake_hub.url)
    monkeypatch.setenv("HF_HOME", str(tmp_path))
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hub"))
    monkeypatch.setenv("KVPLAN_HUB_TIMEOUT_SECONDS", "1")
    reset_default_hub()
    fake_hub.reset()
    yield fake_hub
    reset_default_hub()


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """White-box tests of the simulator (marked `source`) subclass or patch what the compiled
    modules hold natively, so they run on the Python source: make test runs them a second time
    with KVPLAN_COMPILED=0 (tests/sim/test_compiled.py checks the two simulators agree)."""
    if not compiled.active():
        return
    skip = pytest.mark.skip(reason="white-box: runs on the Python source (KVPLAN_COMPILED=0; make test does)")
    for item in items:
        if item.get_closest_marker("source"):
            item.add_marker(skip)


def run_python(code: str, python: str = sys.executable, **env: str) -> str:
    """What `python -c code` prints, run from the repository's root with this environment but
    for kvplan's settings (KVPLAN_COMPILED and the like), and `env` on top."""
    base = {k: v for k, v in os.environ.items() if not k.startswith("KVPLAN_")}
    root = Path(__file__).resolve().parents[1]
    out = subprocess.run([python, "-c", code], env={**base, **env}, cwd=root, capture_output=True, text=True)
    assert out.returncode == 0, out.stderr[-2000:]
    return out.stdout.strip()


def corpus_answers(python: str, **env: str) -> dict[str, Any]:
    """tests/sim/compiled_corpus.py's answers as `python` gives them, in a process of its own
    (`compiled`: whether it ran the compiled simulator)."""
    code = "import runpy; runpy.run_module('tests.sim.compiled_corpus', run_name='__main__')"
    return json.loads(run_python(code, python, **env).splitlines()[-1])  # type: ignore[no-any-return]


@pytest.fixture(scope="session")
def python_source_corpus() -> dict[str, str]:
    """The corpus's answers from the simulator's Python source: what every compiled build must give."""
    got = corpus_answers(sys.executable, KVPLAN_COMPILED="0")
    assert got["compiled"] is False
    return got["answers"]  # type: ignore[no-any-return]
