"""The reconciliation of the real logs (docs/reconcile.md) is current, and kvplan reproduces the
capacity vLLM printed, exactly or within the log's rounding, for nine figures in ten."""

from __future__ import annotations

from kvplan.core.logs.reconcile import DIFFERS
from tests.reconcile.report import CAPACITY, REPORT, reconciled, report


def test_the_reconcile_report_is_current():
    assert REPORT.read_text() == report(), "run: python -m tests.reconcile.report"


def test_the_capacity_vllm_printed_is_reproduced_for_nine_figures_in_ten():
    rows = [row for _, _, r in reconciled() for row in r.rows if row.figure in CAPACITY]
    assert len(rows) >= 80
    assert sum(row.verdict != DIFFERS for row in rows) / len(rows) >= 0.9
