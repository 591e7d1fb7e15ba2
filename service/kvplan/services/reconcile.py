"""Incident review: a vLLM start-up log (and optionally its /metrics) in; the figures it states,
kvplan's plan for the same inputs beside them, verdicts, the overhead vLLM actually saw, and
what-ifs out (docs/reconcile.md)."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import msgspec

from kvplan.core.budget import Budget, compute_budget
from kvplan.core.budget.types import ENGINE_SETTINGS
from kvplan.core.engine.dtypes import MODEL_DTYPE_ALIASES, MODEL_DTYPES
from kvplan.core.engine.profiles import (
    DEFAULT_PROFILE_ID,
    V0_PROFILE_ID,
    ConcurrencyRule,
    get_profile,
    profile_for_version,
)
from kvplan.core.errors import InvalidInput, KvplanError, WorkStopped
from kvplan.core.logs.enginelog import EngineLog, Figure, read_log
from kvplan.core.logs.modelname import last_component, match_preset, stated_quantization
from kvplan.core.logs.reconcile import (
    NOT_MODELLED,
    Bounds,
    Reconciliation,
    Row,
    Used,
    WhatIf,
    capacity_rows,
    gib_range,
    memory_row,
    self_checks,
    share_reproduced,
    start_failure,
)
from kvplan.core.model.geometry import Geometry
from kvplan.core.model.mxfp4 import has_gpt_oss_mxfp4_experts, kernel_from_log
from kvplan.core.model.quant import QUANTIZATION_ARGS
from kvplan.core.units import GiB
from kvplan.hub import HubError
from kvplan.presets import Registry
from kvplan.schemas import BudgetRequest
from kvplan.schemas.common import ModelSpec
from kvplan.schemas.reconcile import ReconcileOverrides

from .models import ModelRef, model_ref, resolve
from .scenarios import budget_input, with_quantization
from .scrape import samples

# The engine settings a log's command or the overrides may give (every /v1/budget input but the
# model, the GPU and the profile, which the log's own lines decide first).
_SETTINGS = (*ENGINE_SETTINGS, "quantization")
# The dtypes a log may print for --dtype, as the setting takes them.
_SERVED = frozenset({*MODEL_DTYPES, "half", "float"})
_KV_DTYPES = {"auto", "fp8", "fp8_e4m3", "fp8_e5m2", "bfloat16", "float16"}


def _stop_if_asked(should_stop: Callable[[], bool] | None, where: str) -> None:
    if should_stop is not None and should_stop():
        raise WorkStopped(f"stopped while reconciling, {where}")


def metrics_figures(text: str, should_stop: Callable[[], bool] | None = None) -> list[Figure]:
    """What vLLM's /metrics says of its cache and load (scrape.py reads it); should_stop() asked
    every 1,024 samples."""
    out: list[Figure] = []
    for s in samples(text, "metrics", should_stop):
        shown = f"metrics: {s.name}{dict(s.labels) or ''} {s.value:g}"[:300]
        if s.name == "vllm:cache_config_info":
            for key in ("num_gpu_blocks", "block_size", "gpu_memory_utilization", "cache_dtype"):
                raw = s.labels.get(key)
                if raw in (None, "", "None"):
                    continue
                name = "kv_cache_dtype" if key == "cache_dtype" else key
                value: float | int | str = raw
                try:
                    if key in ("num_gpu_blocks", "block_size"):
                        value = _whole(float(raw), key)
                    elif key == "gpu_memory_utilization":
                        value = float(raw)
                except ValueError as e:
                    raise InvalidInput("metrics", f"not Prometheus text exposition format: {e}") from None
                out.append(Figure(name=name, value=value, line=0, text=shown, rank="metrics"))
        elif s.name in ("vllm:kv_cache_usage_perc", "vllm:gpu_cache_usage_perc"):
            out.append(Figure(name="kv_cache_usage", value=s.value, line=0, text=shown, rank="metrics"))
        elif s.name in ("vllm:num_requests_running", "vllm:num_requests_waiting"):
            value = _whole(s.value, s.name)
            out.append(Figure(name=s.name.split(":")[1], value=value, line=0, text=shown, rank="metrics"))
        elif s.name in ("vllm:num_preemptions_total", "vllm:num_preemptions"):
            value = _whole(s.value, s.name)
            out.append(Figure(name="num_preemptions", value=value, line=0, text=shown, rank="metrics"))
    if not out:
        raise InvalidInput(
            "metrics", "no vLLM metric in it (vllm:cache_config_info, vllm:num_requests_running, …)"
        )
    return out


def _whole(value: float, name: str) -> int:
    if not math.isfinite(value) or not 0 <= value <= 1 << 53:
        raise InvalidInput("metrics", f"{name} is {value}: not a count")
    return int(value)


def _figure(log: EngineLog, extra: list[Figure], name: str) -> Figure | None:
    return log.first(name) or next((f for f in extra if f.name == name), None)


def _inputs(
    log: EngineLog, extra: list[Figure], o: ReconcileOverrides, registry: Registry, unresolved: str | None
) -> tuple[dict[str, Any], list[Used], str]:
    """The BudgetRequest fields the log and overrides give, what each came from, and the profile."""
    used: list[Used] = []
    fields: dict[str, Any] = {}

    def take(field: str, figure: str, convert: Any = None) -> None:
        f = _figure(log, extra, figure)
        if f is None:
            return
        value = f.value if convert is None else convert(f.value)
        if value is None:
            return
        fields[field] = value
        used.append(Used(name=field, value=value, source="metrics" if f.line == 0 else f"log line {f.line}"))

    engine, engine_source = _engine(log, o)
    if o.model == "":
        raise InvalidInput("overrides.model", "is empty: give a preset id or a Hub id, or leave it out")
    _model(log, o, registry, unresolved, fields, used)
    take("tensor_parallel_size", "tensor_parallel_size")
    take("pipeline_parallel_size", "pipeline_parallel_size")
    take("max_model_len", "max_model_len")
    take("max_num_seqs", "max_num_seqs")
    take("max_num_batched_tokens", "max_num_batched_tokens")
    take(
        "gpu_memory_utilization", "gpu_memory_utilization", lambda v: float(v) if 0 < float(v) <= 1 else None
    )
    take("block_size", "block_size")
    take("enforce_eager", "enforce_eager", bool)
    take("enable_prefix_caching", "enable_prefix_caching", bool)  # a hybrid's Mamba cache mode
    take("kv_cache_dtype", "kv_cache_dtype", lambda v: v if v in _KV_DTYPES else None)
    # The dtype the engine served (--dtype): its unquantized weights, and its KV cache under auto.
    take("dtype", "dtype", lambda v: MODEL_DTYPE_ALIASES.get(str(v), str(v)) if str(v) in _SERVED else None)
    take("quantization", "quantization", lambda v: v if v in QUANTIZATION_ARGS else None)
    take("moe_backend", "moe_backend", lambda v: kernel_from_log(str(v)))  # gpt-oss's padding
    for name in ("tensor_parallel_size", "pipeline_parallel_size", "data_parallel_size"):
        found = log.inference(name)  # the layout the ranks' lines imply, where no line states it
        if name not in fields and found is not None and isinstance(found.value, int) and found.value > 1:
            fields[name] = found.value
            used.append(
                Used(name=name, value=found.value, source=f"inferred: {found.how} (line {found.line})")
            )
    if log.command_refused:  # said, so a plan without the engine's other flags is not taken for one
        why = (
            f"log line {log.command_refused_line}: {log.command_refused}; the plan has only the "
            "settings the log prints elsewhere (TP, PP, lengths, …)"
        )
        used.append(Used(name="engine flags", value="not read whole", source=why))
    if log.command is not None:  # the rest of the engine's flags, as /v1/plan reads the command
        for name, value in log.command.settings.items():
            if name in _SETTINGS and name not in fields:
                fields[name] = value
                used.append(Used(name=name, value=value, source=f"log line {log.command_line} (command)"))
    ran = (fields.get("tensor_parallel_size", 1), fields.get("pipeline_parallel_size", 1))
    for name in _SETTINGS:  # each override replaces what the log says
        value = getattr(o, name)
        if value is not None and name not in ("gpu_memory_bytes", "context_tokens"):
            fields[name] = msgspec.to_builtins(value)
            used[:] = [u for u in used if u.name != name]
            used.append(Used(name=name, value=fields[name], source="override"))
    _weights_from_log(log, extra, fields, used, ran)
    total = _figure(log, extra, "gpu_total_gib")
    requested = _figure(log, extra, "requested_gib")
    if o.gpu is not None or o.gpu_memory_bytes is not None:
        for name in ("gpu", "gpu_memory_bytes"):
            if getattr(o, name) is not None:
                fields[name] = getattr(o, name)
                used.append(Used(name=name, value=fields[name], source="override"))
    elif total is not None:
        fields["gpu_memory_bytes"] = round(float(total.value) * GiB)
        used.append(
            Used(name="gpu_memory_bytes", value=fields["gpu_memory_bytes"], source=f"log line {total.line}")
        )
    elif requested is not None and "gpu_memory_utilization" in fields:
        fields["_memory_from_requested"] = True
        fields["gpu_memory_bytes"] = round(float(requested.value) * GiB / fields["gpu_memory_utilization"])
        used.append(Used(name="gpu_memory_bytes", value=fields["gpu_memory_bytes"],
                         source=f"log line {requested.line} (requested ÷ utilization)"))  # fmt: skip
    ctx = o.context_tokens or log.value("concurrency_tokens_per_request") or fields.get("max_model_len")
    mml = fields.get("max_model_len")
    if o.context_tokens is not None and isinstance(mml, int) and o.context_tokens > mml:
        why = f"{o.context_tokens:,} is longer than the engine's max_model_len {mml:,}: vLLM refuses it"
        raise InvalidInput("overrides.context_tokens", why)
    if isinstance(ctx, int):
        fields["context_tokens"] = ctx
        if o.context_tokens:
            source = "override"
        elif log.value("concurrency_tokens_per_request"):
            source = "log (the length its concurrency line is for)"
        else:
            source = "log (max_model_len)"
        used.append(Used(name="context_tokens", value=ctx, source=source))
    fields["engine"] = engine
    return fields, used, engine_source


def _engine(log: EngineLog, o: ReconcileOverrides) -> tuple[str, str]:
    """The profile the log is judged by, and why: the caller's; the V0 engine where the log says
    it ran (`Initializing a V0 LLM engine`), whatever its version; else the profile of its
    version; else the default."""
    if o.engine is not None:
        return get_profile(o.engine, "overrides.engine").id, "override"
    version, said = log.value("version"), "(log)"
    if version is None and (found := log.inference("version")) is not None:
        version, said = found.value, f"(inferred: {found.how})"
    kind = log.first("engine") or log.inference("engine")
    if kind is not None and kind.value == "V0":
        named = f"vLLM {version}, " if isinstance(version, str) else ""
        how = "printed" if isinstance(kind, Figure) else "inferred from its line formats"
        return V0_PROFILE_ID, f"{named}the V0 engine ({how}, log line {kind.line})"
    if isinstance(version, str) and (p := profile_for_version(version)) is not None:
        return p.id, f"vLLM {version} {said}"
    return DEFAULT_PROFILE_ID, "default (the log names no version kvplan models)"


# Settings under which a GPU's loaded weights are not the model's weights ÷ (TP × PP): LoRA slots
# and a drafter are loaded with them, an offload moves some off, experts spread over DP ranks.
_NOT_AN_EVEN_SPLIT = ("enable_lora", "speculative_method", "speculative_model", "cpu_offload_bytes",
                      "enable_expert_parallel")  # fmt: skip


def _block_rule(engine: str, plan: Budget | None) -> tuple[int, bool]:
    """The block size to check the log's figures with where it prints none: the plan's (the model's
    own, MLA's 64 included), else the engine's default; and whether it prints concurrency as V0."""
    profile = get_profile(engine)
    block = plan.block_size if plan is not None else profile.default_block_size
    return block, profile.concurrency_rule is ConcurrencyRule.TOKENS


def _weights_from_log(
    log: EngineLog, extra: list[Figure], fields: dict[str, Any], used: list[Used], ran: tuple[Any, Any]
) -> None:
    """The weights the engine loaded, as it printed them (a GPU's), for every worker: the plan's
    weights, so the memory after them is compared term by term. Only where that figure is the
    model's weights split evenly, on the layout the engine ran (`ran`: its TP and PP): not when the
    caller gives the weights or another layout, nor with LoRA, a drafter, an offload or experts
    spread over data-parallel ranks (kvplan's own weights then)."""
    weights = _figure(log, extra, "weights_gib")
    if weights is None or "weights_bytes" in fields or "weight_dtype" in fields:
        return
    tp, pp = fields.get("tensor_parallel_size", 1), fields.get("pipeline_parallel_size", 1)
    uneven = any(fields.get(k) for k in _NOT_AN_EVEN_SPLIT) or (fields.get("data_parallel_size") or 1) > 1
    if (tp, pp) != ran or uneven:
        return
    per_gpu = round(float(weights.value) * GiB)
    if per_gpu <= 0 or not (isinstance(tp, int) and isinstance(pp, int)):
        return
    fields["weights_bytes"] = per_gpu * tp * pp
    fields["_weights_from_log"] = True
    how = f"log line {weights.line}: {weights.value} GiB a GPU × {tp * pp} GPU" + ("s" if tp * pp > 1 else "")
    used.append(Used(name="weights_bytes", value=fields["weights_bytes"], source=how))


def hf_model(config: dict[str, Any], log: EngineLog) -> ModelSpec:
    """overrides.hf_config as the model, named for what the log calls it."""
    named = log.value("model")
    return ModelSpec(hf_config=config, name=last_component(named) if isinstance(named, str) else None)


def _model(
    log: EngineLog,
    o: ReconcileOverrides,
    registry: Registry,
    unresolved: str | None,
    fields: dict[str, Any],
    used: list[Used],
) -> None:
    """The model the plans name: the caller's (overrides.model or .hf_config), else the log's when
    it resolves (a preset or Hub id), else a preset of the same name (a local path's last
    component, a served name, a Hub id the Hub did not answer for), with the quantization its name
    states. None found: fields get `_missing`, which says what is missing and the field that gives it."""
    if o.hf_config is not None:
        fields["model"] = msgspec.to_builtins(hf_model(o.hf_config, log))
        used.append(Used(name="model", value="inline (overrides.hf_config)", source="override"))
        return
    if o.model is not None:
        fields["model"] = o.model
        shown = o.model if isinstance(o.model, str) else "inline (overrides.model)"
        used.append(Used(name="model", value=shown, source="override"))
        return
    named = log.first("model")
    if named is None or not isinstance(named.value, str) or not named.value.strip():
        fields["_missing"] = (
            "the model: the log does not name it; give overrides.model (a preset or Hub id) "
            "or overrides.hf_config (its config.json)"
        )
        return
    name = named.value
    local = name.startswith(("/", "./", "~", ".."))
    if not local and unresolved is None:
        fields["model"] = name
        used.append(Used(name="model", value=name, source=f"log line {named.line}"))
        return
    presets = {m.id: (m.name, m.hf_repo, *m.aliases) for m in registry.models.values()}
    preset = match_preset(name, presets)
    why = "a local path" if local else f"not looked up ({unresolved})"
    if preset is None:
        fields["_missing"] = (
            f"the model: the log names {name[:120]!r}, {why}, and no preset has its name; give "
            "overrides.model (the Hub id it came from, or a preset) or overrides.hf_config (its config.json)"
        )
        return
    fields["model"] = preset
    said = f"inferred: log line {named.line} names {last_component(name)[:80]!r} ({why})"
    used.append(Used(name="model", value=preset, source=said))
    quant = stated_quantization(name)
    if quant is not None and "quantization" not in fields:
        fields["quantization"] = quant
        used.append(Used(name="quantization", value=quant,
                         source=f"inferred: the name {last_component(name)[:80]!r} states it"))  # fmt: skip


class _Model:
    """The model every plan of one reconciliation names, parsed once (on first use, where a plan
    decodes it: a value the log gives out of range is an error of the log's first)."""

    def __init__(self, registry: Registry, ref: ModelRef | None) -> None:
        self.registry = registry
        self.ref = ref

    def of(self, req: BudgetRequest) -> ModelRef:
        if self.ref is None:
            self.ref = model_ref(self.registry, req.model)
        return self.ref

    def geometry(self, fields: dict[str, Any]) -> Geometry:
        """The model's geometry as the plans resolve it (fields["model"] names it)."""
        req = msgspec.convert({"model": fields["model"]}, BudgetRequest)
        return resolve(self.registry, self.of(req)).geometry


def _budget(registry: Registry, fields: dict[str, Any], model: _Model, **more: Any) -> Budget:
    sent = {k: v for k, v in {**fields, **more}.items() if not k.startswith("_")}
    req = msgspec.convert(sent, BudgetRequest)
    inp, _, _ = budget_input(registry, req, ref=model.of(req))
    return compute_budget(inp)


def _settle_moe_backend(fields: dict[str, Any], used: list[Used], model: _Model) -> None:
    """The MXFP4 kernel a log names is kept for gpt-oss, whose experts it pads (core/model/mxfp4.py),
    and dropped, said so, for another model (Marlin's FP4 warning also comes from FP4 linear layers)."""
    if "moe_backend" in fields and not has_gpt_oss_mxfp4_experts(model.geometry(fields)):
        _ignore("moe_backend", "the model has no gpt-oss MXFP4 experts", fields, used)


def _settle_quantization(fields: dict[str, Any], used: list[Used], model: _Model) -> None:
    """The log's --quantization is dropped, and said so, where the checkpoint states its own
    (vLLM reads that from the config)."""
    if "quantization" not in fields:
        return
    try:
        with_quantization(model.geometry(fields), fields["quantization"])
    except InvalidInput:
        _ignore("quantization", "the checkpoint states its own", fields, used)


def _ignore(name: str, why: str, fields: dict[str, Any], used: list[Used]) -> None:
    """A figure the log gives that the plan does not take: out of the fields, and said so beside
    the line it came from."""
    del fields[name]
    used[:] = [
        Used(name=u.name, value=u.value, source=f"{u.source} (ignored: {why})") if u.name == name else u
        for u in used
    ]


def _own_weights(
    registry: Registry, fields: dict[str, Any], model: _Model, plan: Budget
) -> tuple[int | None, str]:
    """A GPU's weights as kvplan finds them from the model (not the log), for the weights row."""
    if not fields.get("_weights_from_log"):
        return plan.weights_bytes_per_gpu, ""
    try:
        own = _budget(registry, {k: v for k, v in fields.items() if k != "weights_bytes"}, model)
    except KvplanError:
        return None, ""
    return own.weights_bytes_per_gpu, "kvplan's own weights; the plan uses the log's"


# The figures kvplan's non-KV memory model predicts (and the available memory they leave).
_NON_KV_FIGURES = frozenset({"activation_peak_gib", "non_torch_gib", "cudagraph_gib", "available_kv_gib"})


def _plan(
    registry: Registry, log: EngineLog, extra: list[Figure], fields: dict[str, Any], model: _Model
) -> tuple[Budget | None, list[Row], Budget | None]:
    """kvplan's own plan and its rows, and the plan the log's available memory makes."""
    plan: Budget | None = None
    if "gpu" in fields or "gpu_memory_bytes" in fields:
        plan = _budget(registry, fields, model)
    rows: list[Row] = []
    if plan is not None:
        plan_profile = get_profile(plan.engine)
        m = plan.memory
        own_weights, note = _own_weights(registry, fields, model, plan)
        for name, kv, step in (
            ("requested_gib", plan.requested_bytes, "requested_bytes"),
            ("weights_gib", own_weights, "weights_bytes_per_gpu"),
            ("activation_peak_gib", m.activation_bytes if m else None, "activation_bytes"),
            ("non_torch_gib", m.non_torch_bytes if m else None, "non_torch_bytes"),
            ("cudagraph_gib", m.cudagraph_bytes if m else None, "cudagraph_bytes"),
            ("available_kv_gib", plan.available_kv_bytes, "available_kv_bytes"),
        ):
            if name == "requested_gib" and fields.get("_memory_from_requested"):
                continue  # the GPU's size was read from this very figure: no check in it
            row = memory_row(name, log.first(name), kv, step, note if name == "weights_gib" else "")
            if row is not None and name == "available_kv_gib" and row.step is not None:
                # Where the paths part: the first term before it that differs, if one does.
                first = next(
                    (r.step for r in rows if r.step is not None and r.figure != "requested_gib"), None
                )
                row = msgspec.structs.replace(row, step=first or row.step)
            if row is not None and name in _NON_KV_FIGURES and not plan_profile.memory_modelled:
                row = msgspec.structs.replace(row, verdict=NOT_MODELLED, step=None)
            if row is not None:
                rows.append(row)
    available = log.first("available_kv_gib")
    from_log: Budget | None = None
    if available is not None and float(available.value) > 0:
        low, high = gib_range(available)
        mid = round(float(available.value) * GiB)
        blocks = next((f for f in extra if f.name == "num_gpu_blocks"), None)
        bounds = Bounds(
            low=_budget(registry, fields, model, kv_cache_memory_bytes=low),
            mid=_budget(registry, fields, model, kv_cache_memory_bytes=mid),
            high=_budget(registry, fields, model, kv_cache_memory_bytes=high),
        )
        from_log = bounds.mid
        capacity = EngineLog(figures=(*log.figures, *([blocks] if blocks else [])), lines=log.lines,
                             vllm_lines=log.vllm_lines)  # fmt: skip
        rows.extend(capacity_rows(capacity, bounds))
    return plan, rows, from_log


def reconcile(
    registry: Registry,
    text: str | EngineLog,
    metrics: str | None = None,
    overrides: ReconcileOverrides | None = None,
    ref: ModelRef | None = None,
    should_stop: Callable[[], bool] | None = None,
    unresolved: str | None = None,
) -> Reconciliation:
    """The log's figures beside kvplan's plan for the same inputs. `ref`: the model the log (or
    overrides.model) names, parsed, when the caller holds it (the route, which fetched it);
    `unresolved`: why the log's model could not be looked up (the route tried). should_stop() is
    asked while the log and /metrics are read and between the plans. What the log implies but
    cannot be planned (no model, a figure no plan takes) is said in `not_planned`, never an error:
    only what the caller sent in the overrides is refused."""
    o = overrides or ReconcileOverrides()
    if isinstance(text, str):
        log = read_log(text) if should_stop is None else read_log(text, should_stop)
    else:
        log = text
    extra = metrics_figures(metrics, should_stop) if metrics else []
    fields, used, engine_source = _inputs(log, extra, o, registry, unresolved)
    plan = from_log = None
    rows: list[Row] = []
    what_ifs: list[WhatIf] = []
    not_planned: str | None = fields.get("_missing")
    if not_planned is None:
        try:
            model = _Model(registry, ref)
            _settle_quantization(fields, used, model)
            _settle_moe_backend(fields, used, model)
            _stop_if_asked(should_stop, "before the plan")
            plan, rows, from_log = _plan(registry, log, extra, fields, model)
            _stop_if_asked(should_stop, "before the what-ifs")
            what_ifs = _what_ifs(
                registry, fields, model, from_log, log.first("available_kv_gib"), o, should_stop
            )
        except msgspec.ValidationError as e:
            plan, rows, from_log, what_ifs = None, [], None, []
            not_planned = f"a figure of the log no plan takes: {e}; give the right one in overrides"
        except WorkStopped:
            raise
        except (KvplanError, HubError) as e:
            # What the caller sent is refused, naming the override; what the log implies is said.
            given = {f for f in ReconcileOverrides.__struct_fields__ if getattr(o, f) is not None}
            base = e.field.split(".")[0]
            if base in given or e.field.startswith("overrides"):
                e.field = e.field if e.field.startswith("overrides") else f"overrides.{base}"
                raise
            plan, rows, from_log, what_ifs = None, [], None, []
            not_planned = f"{e.field}: {e.reason}; give overrides.{base} to plan"
    if not_planned is None and plan is None and "gpu" not in fields and "gpu_memory_bytes" not in fields:
        not_planned = (
            "the GPU's memory: the log prints neither the total nor the memory requested; give "
            "overrides.gpu (a preset) or overrides.gpu_memory_bytes"
            + (
                " (the capacity rows are planned from the KV memory it printed)"
                if from_log is not None
                else ""
            )
        )
    observed, note = _observed(log)
    named = fields.get("model")
    return Reconciliation(
        engine=str(fields["engine"]),
        engine_source=engine_source,
        model=named if isinstance(named, str) else "inline" if named is not None else "not known",
        not_planned=not_planned,
        checks=self_checks(log, *_block_rule(str(fields["engine"]), plan or from_log)),
        failure=start_failure(log, plan, from_log),
        registry_version=registry.version,
        inputs=tuple(used),
        figures=(*log.figures, *extra),
        rows=tuple(rows),
        reproduced_share=share_reproduced(rows),
        observed_non_kv_bytes=observed,
        observed_non_kv_note=note,
        plan=plan,
        plan_from_log_memory=from_log,
        what_ifs=tuple(what_ifs),
        lines=log.lines,
        vllm_lines=log.vllm_lines,
    )


def _observed(log: EngineLog) -> tuple[int | None, str]:
    """requested − weights − available, as vLLM printed them: the non_kv_bytes to give /v1/budget."""
    requested, weights, available = (
        log.first(n) for n in ("requested_gib", "weights_gib", "available_kv_gib")
    )
    if requested is None or weights is None or available is None:
        return None, "the log does not print requested, weights and available memory all three"
    gib = float(requested.value) - float(weights.value) - float(available.value)
    if gib < 0:
        return None, (
            f"requested {requested.value} − weights {weights.value} − available {available.value} GiB "
            "is negative (lines "
            + ", ".join(str(f.line) for f in (requested, weights, available))
            + "): the log's figures "
            "contradict each other (several ranks or runs pasted together?)"
        )
    return round(gib * GiB), (
        f"requested {requested.value} − weights {weights.value} − available {available.value} GiB "
        "(lines "
        + ", ".join(str(f.line) for f in (requested, weights, available))
        + "): give it as non_kv_bytes "
        "(with cudagraph_bytes 0) to /v1/budget to plan with what this engine saw"
    )


def _what_ifs(
    registry: Registry, fields: dict[str, Any], model: _Model, from_log: Budget | None,
    available: Figure | None, o: ReconcileOverrides, should_stop: Callable[[], bool] | None = None,
) -> list[WhatIf]:  # fmt: skip
    """The what-ifs beside the side-by-side, each a budget of the log's own setup with one thing
    changed: the requests held at a few context lengths up to max_model_len (the log's KV memory
    given), with fp8 KV where the log's is auto, and, for a target concurrency on a known GPU,
    the smallest gpu_memory_utilization and tensor-parallel size that hold it. None without the
    log's budget or its available KV memory, which they all start from."""
    if from_log is None or available is None:
        return []
    out: list[WhatIf] = []
    kv = round(float(available.value) * GiB)
    mml = from_log.max_model_len
    for ctx in sorted({1024, 4096, 8192, 32768, 131072, from_log.context_tokens}):
        if ctx > mml:
            continue
        _stop_if_asked(should_stop, f"the what-if at {ctx:,} tokens")
        b = _budget(registry, fields, model, kv_cache_memory_bytes=kv, context_tokens=ctx)
        n = b.concurrency.guaranteed
        out.append(WhatIf(question=f"requests of {ctx:,} tokens at once", answer=f"{n:,}", concurrency=n))
    if fields.get("kv_cache_dtype", "auto") == "auto":
        b = _budget(registry, fields, model, kv_cache_memory_bytes=kv, kv_cache_dtype="fp8")
        out.append(WhatIf(
            question=f"with fp8 KV (--kv-cache-dtype fp8), requests of {b.context_tokens:,} tokens",
            answer=f"{b.concurrency.guaranteed:,} (from {from_log.concurrency.guaranteed:,})",
            concurrency=b.concurrency.guaranteed,
        ))  # fmt: skip
    if o.target_concurrency is not None and ("gpu" in fields or "gpu_memory_bytes" in fields):
        b = _budget(registry, fields, model, target_concurrency=o.target_concurrency)
        util = b.min_gpu_memory_utilization
        out.append(WhatIf(
            question=f"the smallest gpu_memory_utilization for {o.target_concurrency:,} requests",
            answer="none on this layout" if util is None else f"{util:g}",
        ))  # fmt: skip
        for tp in (1, 2, 4, 8, 16):
            _stop_if_asked(should_stop, f"the what-if at TP {tp}")
            try:
                t = _budget(registry, fields, model, tensor_parallel_size=tp)
            except InvalidInput:
                continue
            if t.concurrency.guaranteed >= o.target_concurrency:
                q = f"the smallest tensor-parallel size for {o.target_concurrency:,} requests"
                out.append(WhatIf(question=q, answer=f"TP {tp} ({t.concurrency.guaranteed:,})",
                                  concurrency=t.concurrency.guaranteed))  # fmt: skip
                break
    return out
