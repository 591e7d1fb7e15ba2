"""The core's value types that the cycle collector does not track (msgspec gc=False) must not be
able to form a reference cycle: every field a number, a string, a tuple or frozenset of such, a
frozen value holding only such, or a dict of scalars (a ledger step's inputs). A list, a set or
an arbitrary object would let one refer back to itself."""

from __future__ import annotations

import importlib
import pkgutil
from typing import Any

import msgspec
from msgspec import inspect as mi

import kvplan.core

SCALARS = (mi.IntType, mi.FloatType, mi.StrType, mi.BoolType, mi.NoneType, mi.LiteralType, mi.EnumType,
           mi.BytesType)  # fmt: skip


def untracked_types() -> list[type]:
    for m in pkgutil.walk_packages(kvplan.core.__path__, "kvplan.core."):
        importlib.import_module(m.name)
    found, todo = [], list(msgspec.Struct.__subclasses__())
    while todo:
        cls = todo.pop()
        todo.extend(cls.__subclasses__())
        if cls.__module__.startswith("kvplan.core") and cls.__struct_config__.gc is False:
            found.append(cls)
    return found


def cannot_refer_back(info: Any) -> bool:
    if isinstance(info, mi.Metadata):
        return cannot_refer_back(info.type)
    if isinstance(info, SCALARS):
        return True
    if isinstance(info, mi.UnionType):
        return all(cannot_refer_back(t) for t in info.types)
    if isinstance(info, mi.TupleType):
        return all(cannot_refer_back(t) for t in info.item_types)
    if isinstance(info, mi.VarTupleType | mi.FrozenSetType):  # immutable once built
        return cannot_refer_back(info.item_type)
    if isinstance(info, mi.DictType):  # keys and values scalars: nothing in it can hold the value
        return isinstance(info.key_type, SCALARS) and all(
            isinstance(t, SCALARS) for t in getattr(info.value_type, "types", (info.value_type,))
        )
    if isinstance(info, mi.StructType | mi.DataclassType):  # frozen values: what they hold decides
        return all(cannot_refer_back(f.type) for f in info.fields)
    return False


def test_the_budget_and_geometry_types_are_untracked():
    names = {cls.__name__ for cls in untracked_types()}
    assert {"Budget", "BudgetInput", "Geometry", "PerToken", "Step", "LayoutCapacity"} <= names


def test_no_untracked_value_type_can_form_a_reference_cycle():
    offending = [
        f"{cls.__name__}.{f.name}"
        for cls in untracked_types()
        for f in mi.type_info(cls).fields
        if not cannot_refer_back(f.type)
    ]
    assert offending == []
