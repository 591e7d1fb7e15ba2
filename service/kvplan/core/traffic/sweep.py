"""Settings that give the most sustainable rate per GPU: a capacity search for each combination of
the settings tried (max_num_seqs, max_num_batched_tokens, gpu_memory_utilization, tensor parallel
size), ranked by requests a second per GPU."""

from __future__ import annotations

from collections.abc import Sequence

import msgspec

from .binding import Binding
from .search import RateSearch

Setting = int | float


class Variant(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    settings: dict[str, Setting]
    gpus: int
    max_rate_per_s: float
    rate_per_gpu_per_s: float
    binding: Binding | None = None  # None: not searched (reason says why)
    reason: str = ""


class CapacitySweep(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    """Every combination searched, most requests/s per GPU first; `best` is the first."""

    variants: tuple[Variant, ...]
    best: Variant | None = None
    tolerance: float
    method: str


def rank(
    combos: Sequence[tuple[dict[str, Setting], int, RateSearch]],
    refused: Sequence[tuple[dict[str, Setting], int, str]],
    tolerance: float,
    method: str,
) -> CapacitySweep:
    """The searches of each combination (its settings, GPUs a replica, search), ranked, then the
    combinations that could not run, with why."""
    searched = [
        Variant(
            settings=settings,
            gpus=gpus,
            max_rate_per_s=s.max_rate_per_s,
            rate_per_gpu_per_s=s.max_rate_per_s / gpus,
            binding=s.binding,
            reason=s.reason,
        )
        for settings, gpus, s in combos
    ]
    variants = sorted(searched, key=lambda v: -v.rate_per_gpu_per_s) + [
        Variant(settings=settings, gpus=gpus, max_rate_per_s=0.0, rate_per_gpu_per_s=0.0, reason=why)
        for settings, gpus, why in refused
    ]
    best = variants[0] if variants and variants[0].max_rate_per_s > 0 else None
    return CapacitySweep(variants=tuple(variants), best=best, tolerance=tolerance, method=method)
