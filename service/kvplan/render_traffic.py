"""Capacity under traffic as text, for a terminal (the rest of the text answers: render.py)."""

from __future__ import annotations

from kvplan.core.sim.latency import Distribution
from kvplan.core.sim.simulate import TimingNote
from kvplan.core.traffic.search import RateSearch
from kvplan.core.traffic.slo import TargetCheck
from kvplan.core.traffic.sweep import CapacitySweep
from kvplan.render import _duration, _rows


def _ms(d: Distribution) -> str:
    return " · ".join(f"{stat} {_duration(getattr(d, stat))}" for stat in ("mean", "p50", "p90", "p99"))


def _rate(x: float, digits: int = 3) -> str:
    """A rate to `digits` significant figures (whole from 10^(digits-1) on, thousands separated),
    never in e-notation."""
    return f"{x:,.0f}" if x >= 10 ** (digits - 1) else f"{x:.{digits}g}" if x >= 1e-3 else f"{x:.1g}"


def _check(c: TargetCheck) -> str:
    return f"{c.target} {_duration(c.value_ms)} " + (
        f"(≤ {_duration(c.limit_ms)}, met)" if c.met else f"(> {_duration(c.limit_ms)}, missed)"
    )


def _curve(s: RateSearch) -> list[str]:
    """Every simulated rate a row (to four figures: the last rates of a bisection are close), each
    target's figure a column, aligned under its name."""
    if not s.curve:
        return []
    names = [c.target for c in s.curve[0].checks]
    rows = [
        [
            f"{_rate(p.rate_per_s, 4)}/s",
            "meets" if p.meets else "misses",
            *(_duration(c.value_ms) for c in p.checks),
        ]
        for p in s.curve
    ]
    head = ["rate", "targets", *names]
    widths = [max(len(r[i]) for r in [head, *rows]) for i in range(len(head))]

    def line(cells: list[str]) -> str:
        left = f"{cells[0]:>{widths[0]}}  {cells[1]:<{widths[1]}}"
        return "  " + "  ".join([left, *(f"{v:>{w}}" for v, w in zip(cells[2:], widths[2:], strict=True))])

    return [line(head), *(line(r) for r in rows)]


def capacity_text(s: RateSearch | CapacitySweep, labels: dict[str, object]) -> str:
    """A capacity search for a terminal: the sustainable rate, what binds, the latency there, and
    the curve the search simulated."""
    if isinstance(s, CapacitySweep):
        return _sweep_text(s, labels)
    head = (
        f"kvplan capacity · {labels.get('model')} on {labels.get('gpu')} · pool {labels.get('pool')} · "
        f"engine {labels.get('engine')} · registry {labels.get('registry_version')}"
    )
    if s.max_rate_per_s == 0:
        rows = [("sustainable rate", "none: " + s.reason)]
    else:
        above = _rate(s.max_rate_per_s * (1 + s.tolerance))
        rate = (
            f"{_rate(s.max_rate_per_s)} requests/s or more (every rate tried met every target)"
            if s.above_max is None  # no rate missed: the search's ceiling, not the replica's limit
            else f"{_rate(s.max_rate_per_s)} requests/s (every target met; at {above}/s one is "
            f"missed: tolerance {s.tolerance:.1%})"
        )
        rows = [("sustainable rate", rate)]
        if s.reason:
            rows.append(("note", s.reason))
    rows.append(("binds first", s.binding.why))
    at = s.at_max if s.at_max is not None else s.above_max
    if at is not None:
        where = "at that rate" if s.at_max is not None else f"at {_rate(at.rate_per_s)}/s"
        rows += [
            (where, ", ".join(_check(c) for c in at.checks)),
            ("time to first token", _ms(at.latency.ttft_ms)),
            ("time per output token", _ms(at.latency.tpot_ms)),
            ("end-to-end latency", _ms(at.latency.e2e_ms)),
            ("throughput", f"{_rate(at.throughput.output_tokens_per_s)} output tokens/s"),
        ]
    rows.append(("search", f"{s.points} simulations; {s.method}"))
    note = labels.get("timing")
    tail = (
        ["", _sentence("Modelled", note.modelled), _sentence("Validation", note.validation)]
        if isinstance(note, TimingNote)
        else []
    )
    return "\n".join([head, "", *_rows(rows), "", "latency against rate:", *_curve(s), *tail]) + "\n"


def _sentence(label: str, text: str) -> str:
    """`label: text.`, without saying the label twice when the text opens with it."""
    if text.lower().startswith(label.lower() + ":"):
        text = text[len(label) + 1 :].lstrip()
    return f"{label}: {text.rstrip('.')}."


def _sweep_text(s: CapacitySweep, labels: dict[str, object]) -> str:
    """Every combination tried, most requests a second per GPU first."""
    head = (
        f"kvplan capacity · {labels.get('model')} on {labels.get('gpu')} · engine {labels.get('engine')} · "
        f"registry {labels.get('registry_version')} · settings ranked by sustainable requests/s per GPU"
    )
    lines = [head, ""]
    for v in s.variants:
        settings = ", ".join(f"{k} {x:g}" for k, x in v.settings.items())
        rate = (
            f"{v.max_rate_per_s:8.3g}/s {v.rate_per_gpu_per_s:8.3g}/s a GPU"
            if v.max_rate_per_s
            else "  none meets"
        )
        why = f"binds: {v.binding.constraint}" if v.binding is not None else f"not run: {v.reason}"
        lines.append(f"  {settings:60} {rate}   {why}")
    if s.best is not None:
        lines += ["", "best: " + ", ".join(f"{k} {x:g}" for k, x in s.best.settings.items())]
    return "\n".join(lines) + "\n"
