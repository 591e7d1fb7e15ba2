from __future__ import annotations

import logging
from collections.abc import Iterator
from pathlib import Path

import pytest
from litestar.testing import TestClient

from kvplan.api.app import create_app
from kvplan.api.settings import Settings
from kvplan.hub import reset_default_hub
from kvplan.presets import Registry
from tests.hub.fakehub import FakeHub, isolate_hf_client, serve_hub
from tests.hub.repos import ALL_REPOS

logging.getLogger("httpx").setLevel(logging.WARNING)


# The fleet of deployments the session's service plans (KVPLAN_DEPLOYMENTS).
FLEET = Path(__file__).parents[1] / "autoscale" / "data" / "deployments.toml"


@pytest.fixture(scope="session")
def client(registry: Registry) -> Iterator[TestClient]:
    with TestClient(create_app(Settings(deployments=str(FLEET)), registry=registry)) as c:
        yield c


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
