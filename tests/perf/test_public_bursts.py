"""docs/real-bench-comparison.md's tables of public runs are what kvplan answers for them: GPUStack's
bursts (tests/perf/public_bursts.py) and single-prompt prefills (tests/perf/public_prefills.py). A
change to the step-time model that moves them shows here."""

from __future__ import annotations

from pathlib import Path

from litestar.testing import TestClient

from kvplan.api.app import create_app
from tests.perf.public_bursts import rows
from tests.perf.public_prefills import rows as prefill_rows

DOC = Path(__file__).parents[2] / "docs" / "real-bench-comparison.md"


def test_the_documents_table_of_public_bursts_is_what_kvplan_answers() -> None:
    with TestClient(create_app()) as client:
        expected = rows(client)
    lines = DOC.read_text().splitlines()
    assert [line for line in lines if line in expected] == expected, "python -m tests.perf.public_bursts"


def test_the_documents_table_of_public_prefills_is_what_kvplan_answers() -> None:
    with TestClient(create_app()) as client:
        expected = prefill_rows(client)
    lines = DOC.read_text().splitlines()
    assert [line for line in lines if line in expected] == expected, "python -m tests.perf.public_prefills"
