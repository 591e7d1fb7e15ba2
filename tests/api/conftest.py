from __future__ import annotations

import logging
from collections.abc import Iterator

import pytest
from litestar.testing import TestClient

from kvplan.api.app import create_app
from kvplan.api.settings import Settings
from kvplan.presets import Registry
from tests.autoscale.conftest import FLEET  # the fleet the session's service plans

logging.getLogger("httpx").setLevel(logging.WARNING)


@pytest.fixture(scope="session")
def client(registry: Registry) -> Iterator[TestClient]:
    with TestClient(create_app(Settings(deployments=str(FLEET)), registry=registry)) as c:
        yield c
