"""Over the whole input space the budget schema allows, no answer breaks the core's invariants:
available KV never above the requested budget nor negative, no negative count. Values are drawn
from the schema's own constraints (msgspec's type info), edges included."""

from __future__ import annotations

from typing import Any

import msgspec
from hypothesis import given, settings
from hypothesis import strategies as st

from kvplan.core.engine.profiles import PROFILES
from kvplan.core.errors import KvplanError
from kvplan.presets import load_registry
from kvplan.schemas import BudgetRequest
from kvplan.services.answers import budget_answer

REG = load_registry(extra_dir="")
ENGINE_PATTERN = "^[A-Za-z0-9@._+-]+$"
SKIP = {"model", "gpu", "kv_cache_dtype_skip_layers", "speculative_hf_config"}


def _values(t: msgspec.inspect.Type) -> st.SearchStrategy[Any]:
    if isinstance(t, msgspec.inspect.Metadata):
        return _values(t.type)
    if isinstance(t, msgspec.inspect.UnionType):
        return st.one_of(*(_values(x) for x in t.types))
    if isinstance(t, msgspec.inspect.NoneType):
        return st.none()
    if isinstance(t, msgspec.inspect.BoolType):
        return st.booleans()
    if isinstance(t, msgspec.inspect.LiteralType):
        return st.sampled_from(t.values)
    if isinstance(t, msgspec.inspect.IntType):
        lo = t.ge if t.ge is not None else (t.gt + 1 if t.gt is not None else 0)
        hi = t.le if t.le is not None else (t.lt - 1 if t.lt is not None else 1 << 62)
        return st.one_of(st.sampled_from(sorted({lo, hi, lo + 1, min(hi, 1 << 30)})), st.integers(lo, hi))
    if isinstance(t, msgspec.inspect.FloatType):
        lo = t.ge if t.ge is not None else (t.gt if t.gt is not None else 0.0)
        hi = t.le if t.le is not None else 1e9
        return st.floats(lo, hi, exclude_min=t.gt is not None, allow_nan=False)
    if isinstance(t, msgspec.inspect.VarTupleType):  # a few items: the bounds are the items' own
        return st.lists(_values(t.item_type), min_size=t.min_length or 0, max_size=8).map(tuple)
    if isinstance(t, msgspec.inspect.StrType) and t.pattern is None:  # a module name (LoRA targets)
        return st.sampled_from(["q_proj", "o_proj", "gate_up_proj", "down_proj", "lm_head", "x"])
    if isinstance(t, msgspec.inspect.StrType) and t.pattern == ENGINE_PATTERN:  # a profile or a version
        return st.sampled_from([*PROFILES, "0.11.1", "0.19.0", "0.33"])
    if isinstance(t, msgspec.inspect.StrType):  # a model reference (speculative_model)
        return st.sampled_from([*sorted(REG.models), "ngram", "nobody/EAGLE3-nothing"])
    raise AssertionError(f"no strategy for {t}")


FIELDS = {
    f.name: _values(f.type)
    for f in msgspec.inspect.type_info(BudgetRequest).fields  # type: ignore[union-attr]
    if f.name not in SKIP
}


@st.composite
def budget_requests(draw: st.DrawFn) -> dict[str, Any]:
    body = {name: draw(values) for name, values in FIELDS.items() if draw(st.booleans())}
    body["model"] = draw(st.sampled_from(sorted(REG.models)))
    if draw(st.booleans()):
        body["gpu"] = draw(st.sampled_from(sorted(REG.gpus)))
    return body


@settings(max_examples=400)
@given(budget_requests())
def test_no_budget_answer_breaks_an_invariant(body):
    try:
        req = msgspec.convert(body, BudgetRequest)
        b, _ = budget_answer(REG, req, explain=False)
    except (KvplanError, msgspec.ValidationError):
        return  # a 4xx naming the field
    assert 0 <= b.available_kv_bytes
    assert b.requested_bytes is None or b.available_kv_bytes <= b.requested_bytes
    assert min(b.weights_bytes, b.weights_bytes_per_gpu, b.num_blocks, b.usable_blocks, b.token_slots) >= 0
    c = b.concurrency
    assert min(c.guaranteed, c.schedulable, c.budget_floor, c.guaranteed_unrounded, c.budget_unrounded) >= 0
    assert c.vllm_reported >= 0 and b.kv_cache_size_tokens >= 0 and b.max_context_tokens >= 0
    if b.pooled is not None:
        assert b.pooled.available_kv_bytes >= 0 and b.pooled.concurrency >= 0
