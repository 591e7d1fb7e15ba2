"""Reconciling what a vLLM engine printed with kvplan's plan for the same inputs: figure by
figure, vLLM's value and its line, kvplan's, a verdict, and where the two paths part.

Verdicts: `exact` (the same integer, or the same figure to the decimals printed), `within
rounding` (kvplan's figure lies in the range the log's rounding allows, e.g. the blocks of an
available memory printed to 0.01 GiB), `differs`."""

from __future__ import annotations

from typing import Any

import msgspec

from ..budget import Budget
from ..units import GiB
from .enginelog import EngineLog, Figure

EXACT = "exact"
WITHIN_ROUNDING = "within rounding"
DIFFERS = "differs"


class Row(msgspec.Struct, frozen=True, kw_only=True):
    figure: str
    vllm: float | int
    vllm_line: int
    vllm_text: str
    kvplan: float | int | None
    verdict: str
    unit: str
    # The ledger step where kvplan's path parts from vLLM's, when they differ.
    step: str | None = None
    note: str = ""
    # A memory figure's exact bytes behind `kvplan` (GiB, rounded to 4 places).
    kvplan_bytes: int | None = None

    @property
    def difference(self) -> float | None:
        """kvplan − vLLM, in the figure's unit."""
        return None if self.kvplan is None else round(self.kvplan - self.vllm, 4)


class Used(msgspec.Struct, frozen=True, kw_only=True):
    """An input of the plan and where it came from (`log` line N, `metrics`, `override`, `default`)."""

    name: str
    value: Any
    source: str


class WhatIf(msgspec.Struct, frozen=True, kw_only=True):
    question: str
    answer: str
    concurrency: int | None = None


class Reconciliation(msgspec.Struct, frozen=True, kw_only=True):
    engine: str
    engine_source: str
    model: str
    registry_version: str
    inputs: tuple[Used, ...]
    figures: tuple[Figure, ...]
    rows: tuple[Row, ...]
    reproduced_share: float
    observed_non_kv_bytes: int | None
    observed_non_kv_note: str
    plan: Budget | None  # kvplan's own plan for the same inputs (its memory model, not the log's)
    plan_from_log_memory: Budget | None  # the blocks and requests the log's available memory makes
    what_ifs: tuple[WhatIf, ...]
    lines: int
    vllm_lines: int


class Bounds(msgspec.Struct, frozen=True, kw_only=True):
    """kvplan's figures for the low and high ends of the printed available memory, and for the
    figure itself (the plan shown)."""

    low: Budget
    mid: Budget
    high: Budget


def gib_range(f: Figure) -> tuple[int, int]:
    """The bytes a printed GiB figure may stand for: [value − ½ ulp, value + ½ ulp]."""
    half = 0.5 * 10**-f.decimals
    return max(0, int((float(f.value) - half) * GiB)), int((float(f.value) + half) * GiB)


def _verdict_in(value: float | int, low: float | int, high: float | int, exact: bool) -> str:
    if exact:
        return EXACT
    return WITHIN_ROUNDING if min(low, high) <= value <= max(low, high) else DIFFERS


def _printed(f: Figure, kvplan: float) -> bool:
    """kvplan's figure rounds to what vLLM printed."""
    return round(kvplan, f.decimals) == round(float(f.value), f.decimals)


def capacity_rows(log: EngineLog, b: Bounds) -> list[Row]:
    """Blocks, KV cache size and concurrency from the available memory the log printed."""
    rows = []
    tokens = log.first("gpu_kv_cache_tokens")
    if tokens is not None:
        v = int(tokens.value)
        lo, mid, hi = (x.kv_cache_size_tokens for x in (b.low, b.mid, b.high))
        verdict = _verdict_in(v, lo, hi, v == mid)
        rows.append(Row(
            figure="gpu_kv_cache_tokens", vllm=v, vllm_line=tokens.line, vllm_text=tokens.text, kvplan=mid,
            unit="tokens", verdict=verdict, step=None if verdict != DIFFERS else "kv_cache_size_tokens",
        ))  # fmt: skip
    blocks = log.first("num_gpu_blocks")
    if blocks is not None:
        v = int(blocks.value)
        verdict = _verdict_in(v, b.low.num_blocks, b.high.num_blocks, v == b.mid.num_blocks)
        rows.append(Row(
            figure="num_gpu_blocks", vllm=v, vllm_line=blocks.line, vllm_text=blocks.text,
            kvplan=b.mid.num_blocks, unit="blocks", verdict=verdict,
            step=None if verdict != DIFFERS else "num_blocks",
        ))  # fmt: skip
    conc = log.first("max_concurrency")
    if conc is not None:
        c = float(conc.value)
        c_lo, c_hi = b.low.concurrency.vllm_reported, b.high.concurrency.vllm_reported
        c_mid = b.mid.concurrency.vllm_reported
        exact = _printed(conc, c_mid)
        verdict = (
            EXACT if exact else _verdict_in(c, round(c_lo, conc.decimals), round(c_hi, conc.decimals), False)
        )
        rows.append(Row(
            figure="max_concurrency", vllm=c, vllm_line=conc.line, vllm_text=conc.text,
            kvplan=round(c_mid, 4), unit="×", verdict=verdict,
            step=None if verdict != DIFFERS else "vllm_reported",
        ))  # fmt: skip
    return rows


def memory_row(
    name: str, f: Figure | None, kvplan_bytes: int | None, step: str, note: str = ""
) -> Row | None:
    """A memory figure (GiB as printed) against kvplan's bytes."""
    if f is None or kvplan_bytes is None:
        return None
    kv = kvplan_bytes / GiB
    low, high = gib_range(f)
    if _printed(f, kv):
        verdict = EXACT
    elif low <= kvplan_bytes <= high:
        verdict = WITHIN_ROUNDING
    else:
        verdict = DIFFERS
    return Row(figure=name, vllm=float(f.value), vllm_line=f.line, vllm_text=f.text, kvplan=round(kv, 4),
               kvplan_bytes=kvplan_bytes, unit="GiB", verdict=verdict,
               step=None if verdict != DIFFERS else step, note=note)  # fmt: skip


def share_reproduced(rows: list[Row]) -> float:
    """The share of vLLM's figures kvplan reproduces exactly or within the log's rounding."""
    if not rows:
        return 0.0
    return sum(r.verdict != DIFFERS for r in rows) / len(rows)
