from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from litestar.testing import TestClient

from kvplan.api.app import create_app
from kvplan.api.settings import Settings
from kvplan.presets import Registry

DATA = Path(__file__).parent / "data"
FLEET = DATA / "deployments.toml"
SCRAPE = Path(__file__).parents[1] / "reconcile" / "data" / "metrics-0.33.txt"


@pytest.fixture(scope="module")
def fleet_client(registry: Registry) -> Iterator[TestClient]:
    """The service planning the test fleet (data/deployments.toml)."""
    with TestClient(create_app(Settings(deployments=str(FLEET)), registry=registry)) as c:
        yield c
