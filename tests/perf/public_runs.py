"""What the tables of public runs in docs/real-bench-comparison.md share: how a difference is written,
and a setup's name on its first row only (tests/perf/public_bursts.py, public_prefills.py,
public_sweep.py)."""

from __future__ import annotations


def pct(ours: float, theirs: float) -> str:
    """kvplan against theirs, in whole percent with a true minus sign ("0 %" when they agree)."""
    percent = round((ours - theirs) / theirs * 100)
    return "0 %" if percent == 0 else f"{percent:+d} %".replace("-", "−")


def first_cell(setup: str, shown: set[str]) -> str:
    """The table's first cell: the setup on its first row, blank on the rows after (adds it to shown)."""
    if setup in shown:
        return " "
    shown.add(setup)
    return f" {setup} "
