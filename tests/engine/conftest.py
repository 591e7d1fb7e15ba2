from __future__ import annotations

from collections.abc import Iterator

import pytest
from litestar.testing import TestClient

from kvplan.api.app import create_app
from kvplan.presets import Registry


@pytest.fixture(scope="module")
def client(registry: Registry) -> Iterator[TestClient]:
    with TestClient(create_app(registry=registry)) as c:
        yield c
