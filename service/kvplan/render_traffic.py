"""Capacity under traffic as text, for a terminal (the rest of the text answers: render.py)."""

from __future__ import annotations

from kvplan.core.sim.latency import Distribution
from kvplan.core.sim.simulate import TimingNote
from kvplan.core.traffic.search import RateSearch
from kvplan.core.traffic.sweep import CapacitySweep
from kvplan.render import _duration, _rows


def _ms(d: Distribution) -> str:
    return " · ".join(f"{stat} {_duration(getattr(d, stat))}" for stat in ("mean", "p50", "p90", "p99"))


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
        rows = [
            (
                "sustainable rate",
                f"{s.max_rate_per_s:,.3g} requests/s (every target met; at "
                f"{s.max_rate_per_s * (1 + s.tolerance):,.3g}/s one is missed: tolerance {s.tolerance:.1%})",
            )
        ]
        if s.reason:
            rows.append(("note", s.reason))
    rows.append(("binds first", s.binding.why))
    at = s.at_max if s.at_max is not None else s.above_max
    if at is not None:
        rows += [
            (
                "at that rate",
                ", ".join(f"{c.target} {c.value_ms:,.1f} ms (≤ {c.limit_ms:,.1f})" for c in at.checks),
            ),
            ("time to first token", _ms(at.latency.ttft_ms)),
            ("time per output token", _ms(at.latency.tpot_ms)),
            ("end-to-end latency", _ms(at.latency.e2e_ms)),
            ("throughput", f"{at.throughput.output_tokens_per_s:,.0f} output tokens/s"),
        ]
    rows.append(("search", f"{s.points} simulations; {s.method}"))
    curve = [
        f"  {p.rate_per_s:10.4g}/s  {'meets' if p.meets else 'misses':6}  "
        + "  ".join(f"{c.target} {c.value_ms:,.1f}" for c in p.checks)
        for p in s.curve
    ]
    note = labels.get("timing")
    tail = (
        ["", f"Modelled: {note.modelled}.", f"Validation: {note.validation}."]
        if isinstance(note, TimingNote)
        else []
    )
    return "\n".join([head, "", *_rows(rows), "", "latency against rate:", *curve, *tail]) + "\n"


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
