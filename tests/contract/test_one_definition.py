"""Each type is defined once. The engine settings are the core's EngineSettings
(kvplan.core.budget.types): BudgetInput inherits them, and every request type takes a setting
from the one table of request fields (schemas.common.FIELDS), which holds the core's own type
(bounds, description) and default, so the wire refuses by the bounds the core checks and OpenAPI
documents. A Mamba state and the QSA caches are on the wire the core's fields, in the core's order
with its defaults. Every request struct shares one base for msgspec's options."""

from __future__ import annotations

import inspect
from typing import Any

import msgspec
import pytest
from msgspec import inspect as mi

import kvplan.schemas.common
import kvplan.schemas.reconcile
import kvplan.schemas.simulate
from kvplan.core.budget.types import ENGINE_SETTINGS, BudgetInput, EngineSettings
from kvplan.core.errors import InvalidInput
from kvplan.core.model.geometry import QsaCaches
from kvplan.core.model.mamba import MambaState
from kvplan.core.validate import Input
from kvplan.schemas import (
    BudgetRequest,
    FleetGpu,
    FleetQuery,
    FleetRequest,
    LayoutSpec,
    MambaStateSpec,
    PerTokenRequest,
    QsaSpec,
    SimulateRequest,
    Workload,
)
from kvplan.schemas.capacity import CapacityRequest, CapacityTraceQuery
from kvplan.schemas.common import FIELDS
from kvplan.schemas.reconcile import ReconcileOverrides
from kvplan.schemas.simulate import SimulateTraceQuery

REQUESTS = [
    PerTokenRequest,
    BudgetRequest,
    FleetRequest,
    FleetQuery,
    SimulateRequest,
    CapacityRequest,
    ReconcileOverrides,
]
# Settings a request requires (the core's are all optional).
REQUIRED = {(FleetQuery, "context_tokens")}
# Requests whose every setting is optional with no default of its own: None is "what the log says".
REPLACING = {ReconcileOverrides}
# What each route states its own way rather than as an engine setting (a fleet's GPUs give the
# memory, its layouts the parallelism, its workload the context; a simulation's requests their
# lengths). Every other engine setting is an input of every route (issue 26).
STATED_OTHERWISE = {
    PerTokenRequest: None,  # bytes per token: no memory at all
    BudgetRequest: set(),
    FleetRequest: {"gpu_memory_bytes", "tensor_parallel_size", "pipeline_parallel_size", "context_tokens"},
    FleetQuery: {"gpu_memory_bytes", "tensor_parallel_size", "pipeline_parallel_size"},
    SimulateRequest: {"context_tokens", "target_concurrency"},
    CapacityRequest: {"context_tokens", "target_concurrency"},  # its workload gives the lengths
    ReconcileOverrides: set(),
}
# Structs of the wire modules that are not decoded from a caller (an answer).
NOT_INPUT = {"Problem"}


def _fields(t: type) -> dict[str, Any]:
    info = mi.type_info(t)
    assert isinstance(info, mi.StructType)
    return {f.name: f for f in info.fields}


def _value_type(t: Any) -> Any:
    """The type a field holds when given: its union without None."""
    if isinstance(t, mi.UnionType):
        kept = tuple(u for u in t.types if not isinstance(u, mi.NoneType))
        return kept[0] if len(kept) == 1 else kept
    return t


@pytest.mark.parametrize("request_type", REQUESTS, ids=lambda t: t.__name__)
def test_each_engine_setting_a_request_takes_has_the_cores_type_and_default(request_type):
    core, wire = _fields(EngineSettings), _fields(request_type)
    shared = [name for name in wire if name in core]
    assert shared, request_type
    for name in shared:
        w, c = wire[name], core[name]
        assert _value_type(w.type) == _value_type(c.type), f"{request_type.__name__}.{name}"
        if (request_type, name) in REQUIRED:
            assert w.required, name
        elif request_type in REPLACING:
            assert not w.required and w.default is None, f"{request_type.__name__}.{name}"
        else:
            assert not w.required and w.default == c.default, f"{request_type.__name__}.{name}"


def test_a_budget_request_takes_every_engine_setting_and_budget_input_inherits_them():
    assert [f for f in ENGINE_SETTINGS if f not in BudgetRequest.__struct_fields__] == []
    assert issubclass(BudgetInput, EngineSettings)
    assert BudgetInput.__struct_fields__[: len(ENGINE_SETTINGS)] == ENGINE_SETTINGS


def _wire_structs() -> list[type]:
    modules = (kvplan.schemas.common, kvplan.schemas.reconcile, kvplan.schemas.simulate)
    return [
        obj
        for m in modules
        for _, obj in inspect.getmembers(m, inspect.isclass)
        if issubclass(obj, msgspec.Struct) and obj.__module__ == m.__name__
    ]


def test_every_wire_struct_a_caller_sends_takes_its_options_from_the_one_base():
    structs = _wire_structs()
    assert len(structs) > 15
    for t in structs:
        if t.__name__ in NOT_INPUT:
            continue
        assert issubclass(t, Input), t.__name__
        source = next(line for line in inspect.getsource(t).splitlines() if line.startswith("class "))
        assert "forbid_unknown_fields" not in source and "frozen" not in source, t.__name__


# Each request type built from FIELDS, and the fields it declares itself (what no other takes).
TAKERS = {
    PerTokenRequest: set(),
    BudgetRequest: set(),
    FleetRequest: {"workload", "fleet", "layouts", "target_rate"},
    CapacityRequest: {"workload", "search", "vary"},
    CapacityTraceQuery: {"search", "vary"},
    FleetQuery: {"count"},
    SimulateRequest: {"workload"},
    SimulateTraceQuery: set(),
    ReconcileOverrides: {"hf_config"},
    FleetGpu: {"count"},
    LayoutSpec: {"data_parallel_attention"},
    Workload: {"mix"},
}
# A field a request takes optional (None by default) or required where the table has it otherwise.
FLIPPED = {
    (SimulateRequest, "model"),
    (SimulateTraceQuery, "model"),
    (CapacityRequest, "slo"),
    (CapacityTraceQuery, "slo"),
    (FleetQuery, "gpu"),
    (FleetGpu, "gpu"),
    (FleetQuery, "context_tokens"),
}


@pytest.mark.parametrize("request_type", TAKERS, ids=lambda t: t.__name__)
def test_each_field_of_a_request_type_is_declared_once_in_the_table_or_by_the_request(request_type):
    table = msgspec.defstruct("Table", [(n, t, d) for n, (t, d) in FIELDS.items()], kw_only=True)
    core = _fields(table)
    for name, f in _fields(request_type).items():
        if name in TAKERS[request_type]:
            assert name not in FIELDS, f"{request_type.__name__}.{name} is the table's"
            continue
        c = core[name]
        assert _value_type(f.type) == _value_type(c.type), f"{request_type.__name__}.{name}"
        if request_type in REPLACING:
            assert (f.required, f.default) == (False, None), f"{request_type.__name__}.{name}"
        elif (request_type, name) not in FLIPPED:
            assert (f.required, f.default) == (c.required, c.default), f"{request_type.__name__}.{name}"
        else:
            assert f.required != c.required, f"{request_type.__name__}.{name} is as the table has it"


@pytest.mark.parametrize(("wire", "core"), [(MambaStateSpec, MambaState), (QsaSpec, QsaCaches)])
def test_a_mamba_state_and_the_qsa_caches_are_the_cores_fields_in_its_order_with_its_defaults(wire, core):
    assert wire.__struct_fields__ == core.__struct_fields__
    assert wire.__struct_defaults__ == core.__struct_defaults__


def _int_bounds() -> list[tuple[str, int, int]]:
    out = []
    for name, f in _fields(EngineSettings).items():
        t = _value_type(f.type)
        t = t.type if isinstance(t, mi.Metadata) else t
        if isinstance(t, mi.IntType):
            out.append((name, t.ge, t.le))
    return out


@pytest.mark.parametrize(("name", "low", "high"), _int_bounds(), ids=lambda x: str(x))
def test_the_core_refuses_a_setting_past_its_bound_as_the_wire_does(budget, name, low, high):
    """One definition of each bound: the wire refuses at decoding, the core at compute_budget
    (for values that reach it another way, such as a sweep's), by the same EngineSettings type."""
    base = {"model": "llama-3-8b", "gpu": "pool-80gib"}
    for bad in (low - 1, high + 1):
        with pytest.raises(msgspec.ValidationError, match=name):
            msgspec.convert({**base, name: bad}, BudgetRequest)
        with pytest.raises(InvalidInput) as e:
            budget("llama-3-8b", gpu="pool-80gib", **{"weights_bytes": 1 << 30, name: bad})
        assert e.value.field == name


@pytest.mark.parametrize("request_type", [t for t in REQUESTS if STATED_OTHERWISE[t] is not None],
                         ids=lambda t: t.__name__)  # fmt: skip
def test_every_route_takes_every_engine_setting_it_does_not_state_otherwise(request_type):
    missing = set(ENGINE_SETTINGS) - set(request_type.__struct_fields__) - STATED_OTHERWISE[request_type]
    assert not missing, f"{request_type.__name__} lacks {sorted(missing)}"
    assert "quantization" in request_type.__struct_fields__
