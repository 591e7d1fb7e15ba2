"""Every field name a request may carry, for "did you mean" answers to a misspelt one."""

from __future__ import annotations

from functools import cache
from typing import Any

from msgspec import inspect as mi

from .common import BatchRequest, BudgetRequest, FleetQuery, FleetRequest, PerTokenRequest, SweepQuery
from .reconcile import ReconcileRequest
from .simulate import SimulateRequest

_REQUESTS = (BudgetRequest, PerTokenRequest, BatchRequest, FleetRequest, FleetQuery, SweepQuery,
             SimulateRequest, ReconcileRequest)  # fmt: skip


@cache
def request_field_names() -> tuple[str, ...]:
    names: set[str] = set()
    seen: set[type] = set()

    def walk(t: Any) -> None:
        if isinstance(t, mi.Metadata):  # an Annotated type: its constraints around the type
            walk(t.type)
        elif isinstance(t, mi.StructType):
            if t.cls in seen:
                return
            seen.add(t.cls)
            for f in t.fields:
                names.add(f.encode_name)
                walk(f.type)
        elif isinstance(t, mi.UnionType):
            for u in t.types:
                walk(u)
        elif isinstance(t, mi.ListType | mi.TupleType | mi.SetType | mi.FrozenSetType | mi.VarTupleType):
            for u in getattr(t, "item_types", None) or (t.item_type,):
                walk(u)
        elif isinstance(t, mi.DictType):
            walk(t.value_type)

    for info in mi.multi_type_info(_REQUESTS):
        walk(info)
    return tuple(sorted(names))
