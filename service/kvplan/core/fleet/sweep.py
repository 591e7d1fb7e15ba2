"""Series for dashboards: the budget along one axis (context, utilization, KV dtype or TP)."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import msgspec
from msgspec.structs import replace

from ..budget import BudgetInput, compute_budget
from ..engine.dtypes import KV_CACHE_DTYPES
from ..errors import InvalidInput, WorkStopped
from ..kv.parallel import valid_tensor_sizes
from ..limits import MAX_SWEEP_POINTS

AXES = ("context_tokens", "gpu_memory_utilization", "kv_cache_dtype", "tensor_parallel_size")


class SweepPoint(msgspec.Struct, frozen=True):
    value: float | str
    guaranteed: int
    vllm_reported: float
    budget_floor: int
    num_blocks: int
    usable_blocks: int
    max_context_tokens: int
    kv_bytes_per_request: int
    available_kv_bytes: int
    # The engine settings the point ran with (the profile's defaults unless given).
    block_size: int
    max_num_seqs: int
    max_num_batched_tokens: int


class Sweep(msgspec.Struct, frozen=True):
    vary: str
    engine: str
    context_tokens: int | None
    points: tuple[SweepPoint, ...]


def default_values(template: BudgetInput, axis: str) -> list[float | str]:
    """At most MAX_SWEEP_POINTS values; contexts double from 1024, so at most log₂ of the top."""
    g = template.geometry
    if axis == "context_tokens":
        top = template.max_model_len or g.max_position_embeddings
        values: list[float | str] = []
        t = 1024
        while t < top and len(values) < MAX_SWEEP_POINTS - 1:
            values.append(t)
            t *= 2
        return [*values, top]
    if axis == "gpu_memory_utilization":
        return [round(0.5 + 0.05 * i, 2) for i in range(11)]
    if axis == "kv_cache_dtype":
        if g.is_mla:
            return ["auto", "fp8"]
        return ["auto", "fp8", "int8_per_token_head", "int4_per_token_head", "nvfp4"]
    return [float(t) for t in valid_tensor_sizes(g, 8)]


def _point_input(template: BudgetInput, axis: str, value: float | str, i: int) -> BudgetInput:
    field = f"values[{i}]"
    if axis == "kv_cache_dtype":
        if value not in KV_CACHE_DTYPES:
            raise InvalidInput(field, f"{value!r} is not a kv_cache_dtype")
        return replace(template, kv_cache_dtype=str(value))
    if isinstance(value, str):
        try:
            value = float(value)
        except ValueError:
            raise InvalidInput(field, f"{value!r} is not a number") from None
    if not math.isfinite(value):
        raise InvalidInput(field, "must be finite")
    if axis == "gpu_memory_utilization":
        return replace(template, gpu_memory_utilization=float(value))
    if value != int(value):
        raise InvalidInput(field, f"{axis} takes whole numbers, got {value}")
    return replace(template, **{axis: int(value)})


def sweep(
    template: BudgetInput,
    axis: str,
    values: Sequence[float | str] | None = None,
    should_stop: Callable[[], bool] | None = None,
) -> Sweep:
    """The template's budget at each value of one axis (the values given, else default_values),
    a point of the headline figures each: the series /v1/sweep charts. A value that breaks the
    budget is refused naming it (values[i]) and the field it broke. should_stop() is asked before
    each point (a point of a 4,096-layer model takes a few ms)."""
    if axis not in AXES:
        raise InvalidInput("vary", f"must be one of {', '.join(AXES)}")
    vals = list(values) if values else default_values(template, axis)
    if len(vals) > MAX_SWEEP_POINTS:
        raise InvalidInput("values", f"at most {MAX_SWEEP_POINTS} points, got {len(vals)}")
    points = []
    engine = template.profile.id
    for i, v in enumerate(vals):
        if should_stop is not None and should_stop():
            raise WorkStopped(f"{i} of {len(vals)} sweep points computed")
        inp = _point_input(template, axis, v, i)
        try:
            b = compute_budget(inp)
        except InvalidInput as e:  # name the point: values[i] and the field it broke
            raise InvalidInput(f"values[{i}]", f"{e.field}: {e.reason}") from None
        shown: float | str = (
            v
            if axis == "kv_cache_dtype"
            else (float(v) if axis == "gpu_memory_utilization" else int(float(v)))
        )
        points.append(
            SweepPoint(
                shown,
                b.concurrency.guaranteed,
                b.concurrency.vllm_reported,
                b.concurrency.budget_floor,
                b.num_blocks,
                b.usable_blocks,
                b.max_context_tokens,
                b.kv_bytes_per_request,
                b.available_kv_bytes,
                b.block_size,
                b.max_num_seqs,
                b.max_num_batched_tokens,
            )
        )
    ctx = None if axis == "context_tokens" else template.context_tokens
    return Sweep(axis, engine, ctx, tuple(points))
