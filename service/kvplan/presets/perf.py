"""Reads the step-time model's fitted tables once (the shell side of core/perf/coeffs.py)."""

from __future__ import annotations

from functools import cache
from pathlib import Path

from kvplan.core.perf.coeffs import Coefficients, decode_coefficients

PERF_DIR = Path(__file__).parent / "data" / "perf"
AIC_TABLES = "aic-0.12.0.json"


@cache
def load_coefficients(name: str = AIC_TABLES) -> Coefficients:
    """The fitted tables of presets/data/perf/<name> (PROVENANCE.md says how they were made)."""
    return decode_coefficients((PERF_DIR / name).read_bytes())
