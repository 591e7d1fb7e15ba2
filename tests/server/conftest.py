"""The HTTP client for the live server (the `server` fixture is in tests/conftest.py)."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest

from tests.live import Server


@pytest.fixture(scope="session")
def http(server: Server) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=server.url, timeout=10) as c:
        yield c
