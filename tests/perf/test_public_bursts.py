"""docs/real-bench-comparison.md's table of GPUStack's public bursts is what kvplan answers for them
(tests/perf/public_bursts.py): a change to the step-time model that moves them shows here."""

from __future__ import annotations

from pathlib import Path

from litestar.testing import TestClient

from kvplan.api.app import create_app
from tests.perf.public_bursts import rows

DOC = Path(__file__).parents[2] / "docs" / "real-bench-comparison.md"


def test_the_documents_table_of_public_bursts_is_what_kvplan_answers() -> None:
    with TestClient(create_app()) as client:
        expected = rows(client)
    lines = DOC.read_text().splitlines()
    assert [line for line in lines if line in expected] == expected, "python -m tests.perf.public_bursts"
