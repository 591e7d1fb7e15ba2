"""docs/real-bench-comparison.md's tables of public runs are what kvplan answers for them: Musgrave's
closed loops (tests/perf/public_sweep.py), GPUStack's bursts (tests/perf/public_bursts.py) and
single-prompt prefills (tests/perf/public_prefills.py). A change to the step-time model that moves
them shows here."""

from __future__ import annotations

from pathlib import Path

import pytest
from litestar.testing import TestClient

from kvplan.api.app import create_app
from tests.perf import public_bursts, public_prefills, public_sweep

DOC = Path(__file__).parents[2] / "docs" / "real-bench-comparison.md"
TABLES = {
    "public_sweep": public_sweep.rows,
    "public_bursts": public_bursts.rows,
    "public_prefills": public_prefills.rows,
}


@pytest.mark.parametrize("table", TABLES)
def test_the_documents_table_of_public_runs_is_what_kvplan_answers(table: str) -> None:
    with TestClient(create_app()) as client:
        expected = TABLES[table](client)
    lines = DOC.read_text().splitlines()
    assert [line for line in lines if line in expected] == expected, f"python -m tests.perf.{table}"
