"""Reads the step-time model's fitted tables once (the shell side of core/perf/coeffs.py)."""

from __future__ import annotations

from functools import cache
from pathlib import Path

import msgspec

from kvplan.core.perf.coeffs import Coefficients, decode_coefficients

PERF_DIR = Path(__file__).parent / "data" / "perf"
AIC_TABLES = "aic-0.12.0.json"


@cache
def load_coefficients(name: str = AIC_TABLES) -> Coefficients:
    """The fitted tables of presets/data/perf/<name> (PROVENANCE.md says how they were made)."""
    return decode_coefficients((PERF_DIR / name).read_bytes())


VALIDATION = "validation.json"


class GpuValidation(msgspec.Struct, frozen=True):
    """One GPU's closed-loop runs against silicon_sample.csv (tests/perf/validate_silicon.py)."""

    rows: int
    tpot_median_abs_pct: float
    ttft_median_abs_pct: float
    # The median signed error, (model − measured) ÷ measured: negative, kvplan's times are the
    # shorter. None in a summary written before it was kept.
    tpot_median_signed_pct: float | None = None
    ttft_median_signed_pct: float | None = None


class Validation(msgspec.Struct, frozen=True):
    source: str
    gpus: dict[str, GpuValidation]

    def summary(self, system: str) -> str:
        v = self.gpus.get(system)
        if v is None:
            return (
                f"no measured runs on this GPU in {self.source}: the step-time model is unvalidated here "
                "(docs/validation-steptime.md lists the GPUs that have them)"
            )
        said = (
            f"on {v.rows:,} measured closed-loop runs on this GPU ({self.source}; each simulated under "
            "the engine profile of the vLLM it ran, 0.10–0.18), the median absolute "
            f"error was {v.tpot_median_abs_pct:.1f} % for mean TPOT and {v.ttft_median_abs_pct:.1f} % "
            "for mean TTFT"
        )
        if v.tpot_median_signed_pct is not None and v.ttft_median_signed_pct is not None:
            said += (
                f"; the median signed error (kvplan − measured) {v.tpot_median_signed_pct:+.1f} % for TPOT "
                f"and {v.ttft_median_signed_pct:+.1f} % for TTFT{_lean(v.ttft_median_signed_pct)}"
            )
        return f"{said} (docs/validation-steptime.md)"


def _lean(ttft_signed_pct: float) -> str:
    """What a median signed TTFT error tells the reader of a timed answer; within 5 %, a lean too
    small beside the absolute error to act on, nothing."""
    if ttft_signed_pct <= -5:
        return ": kvplan's TTFT is the shorter in most runs, so expect the real one higher"
    if ttft_signed_pct >= 5:
        return ": kvplan's TTFT is the longer in most runs, so expect the real one lower"
    return ""


@cache
def load_validation() -> Validation:
    """The step-time model's measured error per GPU (presets/data/perf/validation.json); empty
    until tests/perf/validate_silicon.py has written it."""
    path = PERF_DIR / VALIDATION
    if not path.exists():
        return Validation(source="silicon_sample.csv of AIConfigurator 0.12.0", gpus={})
    return msgspec.json.decode(path.read_bytes(), type=Validation)
