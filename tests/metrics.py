"""Observing the service from outside in tests: what a counter or histogram on /metrics says,
and scenarios no answer cache in this process has seen yet (so the core must run for them)."""

from __future__ import annotations

import itertools
import re
from typing import Any

from prometheus_client.parser import text_string_to_metric_families

_unasked = itertools.count(1)


def unasked(scenario: dict[str, Any]) -> dict[str, Any]:
    """`scenario` with a few bytes more of weights: the same figures (group A: 880 blocks, 6 requests;
    group C: 0 and budget_insufficient), but a scenario nothing in this process has asked before."""
    return {**scenario, "weights_bytes": scenario["weights_bytes"] + next(_unasked)}


def sample(text: str, name: str, **labels: str) -> float:
    """The sum of the samples called `name` whose labels include `labels` (0 when there are none yet:
    tests compare before and after, so a misspelt name cannot pass)."""
    return sum(
        s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
        if s.name == name and all(s.labels.get(k) == v for k, v in labels.items())
    )


def metric_names_in(expr: str, prefix: str = "kvplan_") -> set[str]:
    """The metric names a PromQL expression reads that start with `prefix` (not its label names,
    strings or range durations)."""
    expr = re.sub(r'"[^"]*"', "", expr)
    expr = re.sub(r"\{[^}]*\}", "", expr)
    expr = re.sub(r"\[[^\]]*\]", "", expr)
    words = set(re.findall(r"\b([a-zA-Z_:][a-zA-Z0-9_:]*)\b", expr))
    return {x for x in words if x.startswith(prefix)}


def names_in_exposition(text: str) -> set[str]:
    """The metric names of a /metrics text's samples."""
    return {m.group(1) for m in re.finditer(r"^([a-zA-Z_:][a-zA-Z0-9_:]*)[{ ]", text, re.M)}
