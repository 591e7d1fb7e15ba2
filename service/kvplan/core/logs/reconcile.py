"""Reconciling what a vLLM engine printed with kvplan's plan for the same inputs: figure by
figure, vLLM's value and its line, kvplan's, a verdict, and where the two paths part.

Verdicts: `exact` (the same integer, or the same figure to the decimals printed), `within
rounding` (kvplan's figure lies in the range the log's rounding allows, e.g. the blocks of an
available memory printed to 0.01 GiB), `differs` (by how much), or `not modelled for this
engine` where the engine's profile has no model of the figure."""

from __future__ import annotations

from typing import Any

import msgspec

from ..budget import Budget
from ..units import GiB
from .enginelog import EngineLog, Figure

EXACT = "exact"
WITHIN_ROUNDING = "within rounding"
DIFFERS = "differs"
# A figure the engine's profile does not model (the V0 engine's non-KV memory): no verdict on it.
NOT_MODELLED = "not modelled for this engine"


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
    # kvplan − vLLM, in the figure's unit and as a share of vLLM's figure (set from the two).
    difference: float | None = None
    difference_pct: float | None = None

    def __post_init__(self) -> None:
        if self.kvplan is not None:
            diff = round(self.kvplan - self.vllm, 4)
            msgspec.structs.force_setattr(self, "difference", diff)
            pct = round(100 * diff / self.vllm, 2) if self.vllm else None
            msgspec.structs.force_setattr(self, "difference_pct", pct)


class Check(msgspec.Struct, frozen=True, kw_only=True):
    """The log checked against itself: a figure it printed beside what its other figures make
    by vLLM's arithmetic, with the printed rounding allowed for."""

    name: str
    formula: str
    printed: float | int
    computed: float | int
    verdict: str
    difference: float  # computed − printed
    difference_pct: float | None  # of the printed figure
    lines: tuple[int, ...]
    note: str = ""


def _half_ulps(*figures: Figure) -> float:
    """How far the true values may lie from these printed ones, together."""
    return sum((0.5 * 10.0**-f.decimals for f in figures if isinstance(f.value, float) or f.decimals), 0.0)


def _check(
    name: str,
    formula: str,
    printed: Figure,
    computed: float,
    slack: float,
    inputs: tuple[Figure, ...],
    note: str = "",
) -> Check:
    """`printed` against what its inputs make (`computed`): exact when the two agree to the
    decimals printed, within rounding when apart by no more than `slack` (the inputs' own
    rounding), else it differs, by how much."""
    p = float(printed.value)
    diff = computed - p
    if round(computed, printed.decimals) == round(p, printed.decimals):
        verdict = EXACT
    elif abs(diff) <= slack + 1e-9:
        verdict = WITHIN_ROUNDING
    else:
        verdict = DIFFERS
    return Check(
        name=name,
        formula=formula,
        printed=printed.value if isinstance(printed.value, (int, float)) else p,
        computed=round(computed, 4),
        verdict=verdict,
        difference=round(diff, 4),
        difference_pct=round(100 * diff / p, 2) if p else None,
        lines=tuple(sorted({printed.line, *(f.line for f in inputs)})),
        note=note,
    )


_GRAPH_NOTE = "this engine subtracts its CUDA-graph estimate (VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS)"
_GROUPS_NOTE = (
    "vLLM 0.33 prints one group's blocks (blocks ÷ groups × block size) for hybrid models: "
    "a difference there is the group count"
)
_WHOLE_BLOCKS_NOTE = (
    "vLLM counts whole blocks a request, in every KV group: a hybrid (sliding-window, Mamba) "
    "model holds more requests than tokens ÷ length, partial blocks fewer"
)


def _memory_checks(log: EngineLog) -> list[Check]:
    """requested = total × utilization, and available = requested − what the profiling run saw
    (with the CUDA-graph estimate subtracted too when only that agrees: the engines that do)."""
    f = log.first
    out: list[Check] = []
    total, util, requested = f("gpu_total_gib"), f("gpu_memory_utilization"), f("requested_gib")
    if total is not None and util is not None and requested is not None:
        u, t = float(util.value), float(total.value)
        slack = _half_ulps(requested) + _half_ulps(total) * u + _half_ulps(util) * t
        formula = "total_gpu_memory × gpu_memory_utilization"
        out.append(_check("requested_gib", formula, requested, t * u, slack, (total, util)))
    available = f("available_kv_gib")
    terms = [
        t for t in (f(n) for n in ("weights_gib", "non_torch_gib", "activation_peak_gib")) if t is not None
    ]
    if requested is None or available is None or len(terms) < 3:
        return out
    base = float(requested.value) - sum(float(t.value) for t in terms)
    slack = _half_ulps(requested, available, *terms)
    formula = "requested − weights − non_torch − activation_peak"
    check = _check("available_kv_gib", formula, available, base, slack, (requested, *terms))
    graph = f("cudagraph_estimate_gib")
    if check.verdict == DIFFERS and graph is not None:
        with_graph = _check(
            "available_kv_gib",
            formula + " − CUDA graph estimate",
            available,
            base - float(graph.value),
            slack + _half_ulps(graph),
            (requested, *terms, graph),
            note=_GRAPH_NOTE,
        )
        check = with_graph if with_graph.verdict != DIFFERS else check
    return [*out, check]


def _capacity_checks(log: EngineLog, default_block: int | None, v0: bool) -> list[Check]:
    """tokens = blocks × block size, and the concurrency line from the blocks (the engine's own
    formula: V0's blocks × block size ÷ T, V1's blocks ÷ blocks a request) or from the tokens;
    with the plan's block size (else the engine's default) where the log prints none."""
    f = log.first
    out: list[Check] = []
    tokens, blocks, block = f("gpu_kv_cache_tokens"), f("num_gpu_blocks"), f("block_size")
    if block is None and default_block is not None and blocks is not None:
        line = blocks.line
        block = Figure(
            name="block_size",
            value=default_block,
            line=line,
            text="(the plan's block size, else the engine's default)",
        )
    if tokens is not None and blocks is not None and block is not None:
        computed = float(int(blocks.value) * int(block.value))
        inputs = (blocks, block)
        out.append(_check("gpu_kv_cache_tokens", "num_gpu_blocks × block_size", tokens, computed, 0.0, inputs,
                          note=_GROUPS_NOTE))  # fmt: skip
    conc, per = f("max_concurrency"), f("concurrency_tokens_per_request")
    if conc is None or per is None or int(per.value) <= 0:
        return out
    n, slack = int(per.value), 0.5 * 10**-conc.decimals
    if blocks is not None and block is not None:
        if v0:  # vllm/executor/executor_base.py
            computed = int(blocks.value) * int(block.value) / n
            formula = "num_gpu_blocks × block_size ÷ tokens a request"
        else:
            computed = int(blocks.value) / -(-n // int(block.value))
            formula = "num_gpu_blocks ÷ ⌈tokens a request ÷ block_size⌉"
        out.append(_check("max_concurrency", formula, conc, computed, slack, (blocks, block, per)))
    elif tokens is not None:
        formula = "GPU KV cache tokens ÷ tokens a request"
        out.append(_check("max_concurrency", formula, conc, int(tokens.value) / n, slack, (tokens, per),
                          note=_WHOLE_BLOCKS_NOTE))  # fmt: skip
    return out


def self_checks(log: EngineLog, default_block: int | None = None, v0: bool = False) -> tuple[Check, ...]:
    """The log's figures against each other: requested = total × utilization; available =
    requested − weights − non-torch − activation (− the CUDA-graph estimate, where the engine
    subtracts it); KV tokens = blocks × block size; concurrency = tokens ÷ tokens a request.
    Each needs all its figures printed; what the log lacks is not checked."""
    return (*_memory_checks(log), *_capacity_checks(log, default_block, v0))


class StartFailure(msgspec.Struct, frozen=True, kw_only=True):
    """The engine did not start (the log says why, on `line`), and whether kvplan's plan for the
    same inputs predicts it (None: no plan)."""

    kind: str
    detail: str
    line: int
    kvplan_predicts: bool | None
    kvplan_says: str


def start_failure(log: EngineLog, plan: Budget | None, from_log: Budget | None) -> StartFailure | None:
    """The log's failed start-up beside what kvplan's plan says of the same inputs (else of the
    KV memory the log printed): that no KV memory is left (a shortfall), or that a request of
    max_model_len does not fit the blocks."""
    f = log.failure
    if f is None:
        return None
    whose = "kvplan's plan" if plan is not None else "kvplan, from the KV memory the log printed,"
    plan = plan or from_log
    if plan is None:
        predicts, says = None, "no plan to compare it with: an input is missing"
    elif plan.kv_memory_shortfall_bytes > 0:
        short = plan.kv_memory_shortfall_bytes / GiB
        predicts, says = True, f"{whose} predicts it too: the memory is {short:.2f} GiB short of any KV cache"
    elif not plan.fits_max_model_len:
        tokens = plan.max_model_len
        predicts, says = (
            True,
            f"{whose} predicts it too: one request of {tokens:,} tokens does not fit the blocks",
        )
    else:
        predicts = False
        says = (
            f"{whose} has {plan.available_kv_bytes / GiB:.2f} GiB for KV and fits max_model_len: "
            "its inputs differ from what this engine ran with (compare the rows)"
        )
    return StartFailure(kind=f.kind, detail=f.detail, line=f.line, kvplan_predicts=predicts, kvplan_says=says)


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
    # Why there is no plan beside the log's figures: the input missing and the field that gives it.
    not_planned: str | None = None
    # The log against itself, whatever could be planned.
    checks: tuple[Check, ...] = ()
    # The engine did not start: why, and whether kvplan's plan predicts it.
    failure: StartFailure | None = None
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
    judged = [r for r in rows if r.verdict != NOT_MODELLED]
    if not judged:
        return 0.0
    return sum(r.verdict != DIFFERS for r in judged) / len(judged)
