from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterator
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
from tests.processes import CORPUS, Job, printed_json


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


def this_simulator() -> dict[str, str]:
    """The settings that give a fresh process the simulator this one runs: its compiled build, or
    the Python source."""
    return {
        "KVPLAN_COMPILED": "1" if compiled.active() else "0",
        "KVPLAN_COMPILED_DIR": str(compiled.BUILD_DIR),
    }


def source_corpus_job() -> Job:
    """tests/sim/compiled_corpus.py run on the simulator's Python source (seven seconds)."""
    return Job("source-corpus", lambda _: [sys.executable, "-c", CORPUS], KVPLAN_COMPILED="0")


def compiled_corpus_job() -> Job:
    """tests/sim/compiled_corpus.py run on the simulator this process runs (five seconds)."""
    return Job("compiled-corpus", lambda _: [sys.executable, "-c", CORPUS], **this_simulator())


def replay_job() -> Job:
    """tests/replay/compare.py: the recording replayed on the simulator this process runs (twenty seconds)."""
    return Job("replay", lambda _: [sys.executable, "-m", "tests.replay.compare"], **this_simulator())


def build_stage_job() -> Job:
    """The Dockerfile's build stage replayed, and the corpus on what it built (a minute and a half)."""
    return Job("build-stage", lambda d: [sys.executable, "-m", "tests.deploy.build_stage", str(d)])


# Slow subprocesses whose answers tests take as fixtures: started as soon as the session knows it
# will run a test that takes them, at idle CPU priority (tests/processes.py's Job), they run beside
# the tests before that one, on the CPU those leave, instead of adding their minutes to the suite's.
BACKGROUND: dict[str, Callable[[], Job]] = {
    "python_source_corpus": source_corpus_job,
    "compiled_corpus": compiled_corpus_job,
    "replayed_recording": replay_job,
    "image_build_stage": build_stage_job,
}
JOBS = pytest.StashKey[dict[str, Job]]()


def pytest_collection_finish(session: pytest.Session) -> None:
    """Start the background jobs of the fixtures the selected tests take (none for --collect-only)."""
    if session.config.option.collectonly:
        return
    wanted = {name for item in session.items for name in getattr(item, "fixturenames", ())}
    session.config.stash[JOBS] = {name: start() for name, start in BACKGROUND.items() if name in wanted}


def pytest_sessionfinish(session: pytest.Session) -> None:
    """Stop the jobs still running (the session ended before a test waited for them)."""
    for job in session.config.stash.get(JOBS, {}).values():
        job.stop()


def background(request: pytest.FixtureRequest, name: str) -> Job:
    """The session's job for the fixture `name`, started now if the session did not start it."""
    jobs = request.config.stash.setdefault(JOBS, {})
    if name not in jobs:
        jobs[name] = BACKGROUND[name]()
    return jobs[name]


@pytest.fixture(scope="session")
def python_source_corpus(request: pytest.FixtureRequest) -> dict[str, str]:
    """The corpus's answers from the simulator's Python source: what every compiled build must give."""
    got = printed_json(background(request, "python_source_corpus").output())
    assert got["compiled"] is False
    return got["answers"]  # type: ignore[no-any-return]


@pytest.fixture(scope="session")
def compiled_corpus(request: pytest.FixtureRequest) -> dict[str, Any]:
    """The corpus's answers from the simulator this process runs, in a process of its own
    (`compiled`: whether it ran the compiled simulator)."""
    return printed_json(background(request, "compiled_corpus").output())


@pytest.fixture(scope="session")
def replayed_recording(request: pytest.FixtureRequest) -> dict[str, Any]:
    """tests/replay/recording.jsonl.gz replayed (tests/replay/compare.py): how many requests it
    holds, and the report of those answered differently (empty when none)."""
    return printed_json(background(request, "replayed_recording").output())


@pytest.fixture(scope="session")
def image_build_stage(request: pytest.FixtureRequest) -> dict[str, Any]:
    """The Dockerfile's build stage replayed (tests/deploy/build_stage.py): its venv and the
    corpus's answers from the venv's interpreter, or why the replay was skipped."""
    return printed_json(background(request, "image_build_stage").output())
