"""The fleet's vLLM deployments (KVPLAN_DEPLOYMENTS, a TOML file): read, planned as /v1/budget
plans each one, and kept. A file that cannot be read keeps the plans of the last good one; a
deployment that cannot be planned is reported by name, keeps its last good plan if it had one,
and hides none of the others. api/deployments.py reloads it and publishes the plans."""

from __future__ import annotations

import difflib
import hashlib
import time
import tomllib
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import msgspec
import msgspec.inspect

from kvplan.core import warnings as w
from kvplan.core.autoscale.manifests import engine_block_size
from kvplan.core.autoscale.rule import desired_replicas
from kvplan.core.autoscale.types import ReplicaLoad, Replicas, Target
from kvplan.core.budget import Budget
from kvplan.core.errors import InvalidInput, KvplanError, UnknownDeployment, UnknownName, WorkStopped
from kvplan.core.limits import (
    DEPLOYMENT_SEARCH_SECONDS,
    MAX_DEPLOYMENTS,
    MAX_DEPLOYMENTS_FILE_BYTES,
    MAX_REPLICA_REQUESTS,
    MAX_SLO_DEPLOYMENTS,
    MAX_SUGGESTED_CHARS,
    MAX_SUGGESTION_NAMES,
)
from kvplan.core.traffic.search import RateSearch
from kvplan.core.traffic.sweep import CapacitySweep
from kvplan.hub import HubError, HubUnavailable
from kvplan.presets import Registry
from kvplan.schemas import BudgetRequest, unknown_field
from kvplan.schemas.capacity import CapacityRequest, Vary
from kvplan.schemas.deployments import AutoscalingSettings, DeploymentSpec, ReplicasRequest

from .answers import budget_answer
from .capacity import capacity_answer
from .models import Inline, Preset, model_ref
from .scrape import ScrapedLoad, replica_load

Key = tuple[str, str]  # (namespace, name)
TOP_LEVEL = ("deployment", "autoscaling")
_BUDGET_FIELDS = BudgetRequest.__struct_fields__


class FileError(KvplanError):
    """The deployments file as a whole cannot be used: the last good plans stay."""


class Failure(msgspec.Struct, frozen=True, kw_only=True):
    """A deployment that could not be planned (or the file, when `deployment` is None): the field
    at fault and why, as a 400 would say it."""

    deployment: str | None  # "namespace/name", or "deployment[i]" when it has no valid name
    field: str
    reason: str
    suggestions: list[str] | None = None
    transient: bool = False  # the Hub could not be asked: read again at the next interval

    @classmethod
    def of(cls, e: KvplanError | HubError, deployment: str | None = None) -> Failure:
        """A core or Hub error as a failure, with the close names an unknown one has."""
        near = list(e.suggestions) if isinstance(e, UnknownName) and e.suggestions else None
        return cls(deployment=deployment, field=e.field, reason=e.reason, suggestions=near,
                   transient=isinstance(e, HubUnavailable))  # fmt: skip

    def message(self) -> str:
        where = f"{self.deployment}: " if self.deployment else ""
        return f"{where}{self.field}: {self.reason}"


class Plan(msgspec.Struct, frozen=True, kw_only=True):
    """One deployment's plan: its inputs, the budget /v1/budget answers for them, and the labels
    its series carry."""

    spec: DeploymentSpec
    budget: Budget
    labels: dict[str, Any]  # the budget answer's labels (model, gpu, registry_version, hub)
    model_name: str
    accelerator_type: str
    model_revision: str
    planned_at: float
    served_model: str = ""  # the model as `vllm serve` takes it (a Hub repository, a preset's)
    current: bool = True  # false: the last good plan, kept while the file's entry fails
    rate: RateSearch | None = None  # with slo and traffic: the rate one replica sustains under them
    sweep: CapacitySweep | None = None  # with vary: every combination searched; spec holds the best's
    entry: DeploymentSpec | None = None  # the file's entry, when vary's best settings replaced its own

    @property
    def key(self) -> Key:
        return (self.spec.namespace, self.spec.name)

    def names(self) -> dict[str, Any]:
        """What every answer about this plan says of it, named as its series are labelled."""
        return {
            "namespace": self.spec.namespace,
            "deployment": self.spec.name,
            "model_name": self.model_name,
            "accelerator_type": self.accelerator_type,
            "plan_current": self.current,
            "engine": self.budget.engine,
            "registry_version": self.labels["registry_version"],
        }

    def target(self) -> Target:
        """What the replica rule reads of this plan."""
        b = self.budget
        return Target(
            capacity_tokens=b.kv_cache_size_tokens,
            max_num_seqs=b.max_num_seqs,
            target_utilization=self.spec.target_utilization,
            context_tokens=b.context_tokens,
            min_replicas=self.spec.min_replicas,
            max_replicas=self.spec.max_replicas,
            max_rate_per_s=None if self.rate is None else self.rate.max_rate_per_s,
        )


class Fleet(msgspec.Struct, frozen=True, kw_only=True):
    """What one reading of the file gave: the plans served, the failures, and the settings."""

    plans: dict[Key, Plan]
    failures: tuple[Failure, ...]
    settings: AutoscalingSettings
    digest: str  # of the file's bytes, to skip re-planning an unchanged file


class Parsed(msgspec.Struct, frozen=True, kw_only=True):
    specs: tuple[DeploymentSpec, ...]
    failures: tuple[Failure, ...]
    settings: AutoscalingSettings


def digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _decode_failure(e: msgspec.ValidationError, where: str, field_prefix: str) -> Failure:
    near = unknown_field(e, DeploymentSpec if field_prefix == "" else AutoscalingSettings)
    if near is not None:  # a misspelt field, or a value outside its closed set (named with them)
        return Failure(
            deployment=where,
            field=near.field if near.kind == "field" else field_prefix + near.field,
            reason=near.reason,
            suggestions=list(near.suggestions) or None,
        )
    text = str(e)
    path = ""
    if " - at `$." in text:
        text, _, at = text.rpartition(" - at `$.")
        path = at.rstrip("`")
    missing = "Object missing required field `"
    if text.startswith(missing):
        path = ((path + ".") if path else "") + text[len(missing) :].rstrip("`")
        text = "is required"
    return Failure(deployment=where, field=(field_prefix + path) or "deployment", reason=text)


def parse(data: bytes) -> Parsed:
    """The file's deployments, each decoded on its own. Raises KvplanError for a file that is not
    TOML or whose top level is not [[deployment]] tables and an [autoscaling] table (nothing of it
    is used then); a deployment's own error is a Failure beside the others. An empty file has no
    deployments (the watcher confirms it first: api/deployments.py)."""
    if len(data) > MAX_DEPLOYMENTS_FILE_BYTES:
        raise FileError(
            "KVPLAN_DEPLOYMENTS",
            f"{len(data):,} bytes: a deployments file is at most {MAX_DEPLOYMENTS_FILE_BYTES:,} "
            f"({MAX_DEPLOYMENTS:,} deployments of a few KB each); name large models by their Hub id",
        )
    try:
        doc = tomllib.loads(data.decode("utf-8"))
    except UnicodeDecodeError as e:
        raise FileError("KVPLAN_DEPLOYMENTS", f"not UTF-8 text (byte {e.start})") from None
    except tomllib.TOMLDecodeError as e:
        raise FileError("KVPLAN_DEPLOYMENTS", f"not TOML: {e}") from None
    except RecursionError:  # tomllib recurses on nested arrays and inline tables
        raise FileError("KVPLAN_DEPLOYMENTS", "not TOML kvplan reads: nested too deeply") from None
    unknown = [k for k in doc if k not in TOP_LEVEL]
    if unknown:
        near = difflib.get_close_matches(unknown[0], TOP_LEVEL, n=1)
        hint = f" (did you mean [[{near[0]}]]?)" if near else ""
        raise FileError(unknown[0], f"not a table the file takes: [[deployment]] and [autoscaling]{hint}")
    try:
        settings = msgspec.convert(doc.get("autoscaling", {}), AutoscalingSettings)
    except msgspec.ValidationError as e:
        f = _decode_failure(e, "", "autoscaling.")
        field = f.field if f.field.startswith("autoscaling") else f"autoscaling.{f.field}"
        raise FileError(field, f.reason) from None
    tables = doc.get("deployment", [])
    if not isinstance(tables, list):
        raise FileError("deployment", "must be an array of tables: write [[deployment]]")
    if len(tables) > MAX_DEPLOYMENTS:
        raise FileError("deployment", f"{len(tables):,} deployments; at most {MAX_DEPLOYMENTS:,}")
    specs: list[DeploymentSpec] = []
    failures: list[Failure] = []
    entries: dict[Key, list[int]] = {}
    for i, table in enumerate(tables):
        where = _name_of(table, i)
        try:
            spec = msgspec.convert(table, DeploymentSpec)
        except msgspec.ValidationError as e:
            failures.append(_decode_failure(e, where, ""))
            continue
        if spec.min_replicas > spec.max_replicas:
            reason = f"is {spec.max_replicas}, below min_replicas ({spec.min_replicas})"
            failures.append(Failure(deployment=where, field="max_replicas", reason=reason))
            continue
        entries.setdefault((spec.namespace, spec.name), []).append(i)
        specs.append(spec)
    searched = [s for s in specs if s.slo is not None or s.traffic is not None or s.vary is not None]
    if len(searched) > MAX_SLO_DEPLOYMENTS:
        raise FileError(
            "slo",
            f"{len(searched)} deployments with slo, traffic or vary, each planned by rate searches; at "
            f"most {MAX_SLO_DEPLOYMENTS}: plan the others by their KV capacity (no slo)",
        )
    for (ns, name), at in entries.items():
        if len(at) > 1:  # which one was meant is not for kvplan to guess: neither is planned
            which = ", ".join(f"deployment[{i}]" for i in at)
            reason = f"named by {len(at)} entries ({which}): rename all but one; the last good plan stays"
            failures.append(Failure(deployment=f"{ns}/{name}", field="name", reason=reason))
    specs = [s for s in specs if len(entries[s.namespace, s.name]) == 1]
    return Parsed(specs=tuple(specs), failures=tuple(failures), settings=settings)


def _name_of(table: object, i: int) -> str:
    if isinstance(table, dict):
        ns, name = table.get("namespace"), table.get("name")
        if isinstance(ns, str) and isinstance(name, str) and 0 < len(ns) + len(name) < 320:
            return f"{ns}/{name}"
    return f"deployment[{i}]"


def budget_request(spec: DeploymentSpec) -> BudgetRequest:
    """The /v1/budget question a deployment asks."""
    return BudgetRequest(**{f: getattr(spec, f) for f in _BUDGET_FIELDS if hasattr(spec, f)})


def model_name(registry: Registry, spec: DeploymentSpec) -> str:
    """vLLM's model_name label: --served-model-name, else the model as `vllm serve` names it."""
    return spec.served_model_name or served_model(registry, spec)


def served_model(registry: Registry, spec: DeploymentSpec) -> str:
    """The model as `vllm serve` takes it: a Hub repository (without its @revision), a preset's
    Hugging Face repository (its id when it names none), an inline model's name."""
    ref = model_ref(registry, spec.model)
    if isinstance(ref, Preset):
        return registry.model(ref.name).hf_repo or registry.model(ref.name).id
    if isinstance(ref, Inline):
        return ref.spec.name or "custom"
    return ref.repo_id


def plan_one(
    registry: Registry,
    spec: DeploymentSpec,
    now: float,
    previous: Plan | None = None,
    should_stop: Callable[[], bool] | None = None,
) -> Plan:
    """One deployment's plan, or KvplanError/HubError when it has none: a plan in which vLLM
    would not start (the weights do not fit, one max_model_len request does not fit) is refused,
    since no replica could serve it. With vary, the plan is of the best combination's settings.
    The rate searches of an entry `previous` planned from the same entry and presets are reused."""
    entry = spec
    reuse = (
        previous is not None
        and previous.labels["registry_version"] == registry.version
        and (previous.entry or previous.spec) == entry
    )
    if previous is not None and reuse:
        sweep, rate = previous.sweep, previous.rate
        spec = previous.spec
    else:
        sweep = best_settings(registry, spec, should_stop)
        if sweep is not None:
            assert sweep.best is not None
            spec = msgspec.structs.replace(spec, **sweep.best.settings)
        rate = None
    b, labels = budget_answer(registry, budget_request(spec), explain=True)
    if b.kv_memory_shortfall_bytes > 0 or b.num_blocks == 0:
        raise KvplanError("model", "vLLM would not start: the weights and reserved memory leave no KV cache")
    if any(x.code == w.MAX_MODEL_LEN_DOES_NOT_FIT for x in b.warnings):
        raise KvplanError(
            "max_model_len",
            f"vLLM would not start: one {b.max_model_len:,}-token request does not fit in "
            f"{b.kv_cache_size_tokens:,} tokens of KV cache",
        )
    hub = labels.get("hub")
    if previous is not None and reuse and (hub["sha"] if hub else "") != previous.model_revision:
        return plan_one(registry, entry, now, None, should_stop)  # the Hub moved the model: search anew
    if rate is None:
        rate = sustained_rate(registry, spec, should_stop)
    return Plan(
        spec=spec,
        budget=b,
        labels=labels,
        model_name=model_name(registry, spec),
        served_model=served_model(registry, spec),
        accelerator_type=labels.get("gpu") or "custom",
        model_revision=hub["sha"] if hub else "",
        planned_at=now,
        rate=rate,
        sweep=sweep,
        entry=entry if entry != spec else None,
    )


def _capacity_request(spec: DeploymentSpec, vary: Vary | None = None) -> CapacityRequest:
    """The POST /v1/capacity question of a deployment with slo and traffic (its defaults)."""
    if spec.traffic is None:
        raise InvalidInput("traffic", "give the traffic's shape (as /v1/capacity's workload) with slo")
    if spec.slo is None:
        raise InvalidInput("slo", "give the latency targets the traffic is to be served under")
    fields = {f: getattr(spec, f) for f in CapacityRequest.__struct_fields__ if hasattr(spec, f)}
    return CapacityRequest(**{**fields, "workload": spec.traffic, "vary": vary})


def sustained_rate(
    registry: Registry, spec: DeploymentSpec, should_stop: Callable[[], bool] | None = None
) -> RateSearch | None:
    """With slo and traffic, the rate one replica sustains under them (POST /v1/capacity's search,
    its defaults); None without them. A deployment whose targets no rate meets has no plan."""
    if spec.slo is None and spec.traffic is None:
        if spec.tokenize_us_per_token is not None:
            raise InvalidInput("tokenize_us_per_token", "times the rate search: give slo and traffic")
        return None
    search = _searched(registry, _capacity_request(spec), should_stop)
    assert isinstance(search, RateSearch)  # no vary: one search
    if search.max_rate_per_s <= 0:
        raise KvplanError("slo", search.reason or "no request rate meets the latency targets")
    if search.above_max is None:  # no rate missed: the figure is where the search stopped, not a limit
        raise KvplanError("traffic", f"the traffic does not load one replica: {search.reason}")
    return search


def best_settings(
    registry: Registry, spec: DeploymentSpec, should_stop: Callable[[], bool] | None = None
) -> CapacitySweep | None:
    """With vary, every combination of its settings searched as POST /v1/capacity searches them,
    ranked by sustainable requests a second per GPU; None without vary."""
    if spec.vary is None:
        return None
    if spec.slo is None or spec.traffic is None:
        raise InvalidInput("vary", "give slo and traffic with vary: the settings are ranked by their rate")
    sweep = _searched(registry, _capacity_request(spec, spec.vary), should_stop)
    assert isinstance(sweep, CapacitySweep)
    if sweep.best is None:
        why = "; ".join(f"{v.settings}: {v.reason}" for v in sweep.variants[:3] if v.reason)
        raise KvplanError("slo", f"no combination of vary's settings meets the latency targets: {why}")
    return sweep


def _searched(
    registry: Registry, req: CapacityRequest, should_stop: Callable[[], bool] | None
) -> RateSearch | CapacitySweep:
    """POST /v1/capacity's answer for a deployment, stopped after DEPLOYMENT_SEARCH_SECONDS (or when
    should_stop says so); its errors name the entry's fields (traffic, not workload)."""
    deadline = time.monotonic() + DEPLOYMENT_SEARCH_SECONDS

    def stop() -> bool:
        return time.monotonic() > deadline or (should_stop is not None and should_stop())

    try:
        answer, _ = capacity_answer(registry, req, stop)
    except WorkStopped:
        raise KvplanError(
            "traffic",
            f"the rate searches took longer than {DEPLOYMENT_SEARCH_SECONDS:g} s: give fewer requests "
            "(traffic.count) or fewer vary values",
        ) from None
    except InvalidInput as e:
        field = "traffic" + e.field.removeprefix("workload") if e.field.startswith("workload") else e.field
        reason = e.reason.replace(" or fewer search.max_points", "").replace("(count)", "(traffic.count)")
        raise InvalidInput(field, reason) from None
    return answer


def plan_all(
    registry: Registry,
    parsed: Parsed,
    file_digest: str,
    previous: Fleet | None,
    now: float | None = None,
    should_stop: Callable[[], bool] | None = None,
) -> Fleet:
    """The parsed file's plans. A deployment that fails is a Failure, and keeps its plan from
    `previous` (marked not current). `should_stop` ends rate searches (the service stopping)."""
    now = time.time() if now is None else now
    plans: dict[Key, Plan] = {}
    failures = list(parsed.failures)
    failed_names = {f.deployment for f in failures}
    for spec in parsed.specs:
        key = (spec.namespace, spec.name)
        try:
            last = previous.plans.get(key) if previous is not None else None
            plans[key] = plan_one(registry, spec, now, last, should_stop)
        except (KvplanError, HubError) as e:
            failures.append(Failure.of(e, f"{key[0]}/{key[1]}"))
            failed_names.add(f"{key[0]}/{key[1]}")
    if parsed.settings.match_on == "model_name":
        for key, f in _shared_model_names(plans):
            failures.append(f)
            failed_names.add(f"{key[0]}/{key[1]}")
            del plans[key]
    if previous is not None:
        labels = {p.model_name for p in plans.values()}
        for key, old in previous.plans.items():
            if key not in plans and f"{key[0]}/{key[1]}" in failed_names:
                if parsed.settings.match_on == "model_name" and old.model_name in labels:
                    continue  # two series of one model_name would break the rule for every deployment
                plans[key] = msgspec.structs.replace(old, current=False)
                labels.add(old.model_name)
    return Fleet(plans=plans, failures=tuple(failures), settings=parsed.settings, digest=file_digest)


def _shared_model_names(plans: dict[Key, Plan]) -> list[tuple[Key, Failure]]:
    """With match_on = "model_name" a deployment's vLLM series are found by that label alone, and
    the rules join on it: every deployment of a label two share fails (none is published)."""
    by_label: dict[str, list[Key]] = {}
    for key, p in plans.items():
        by_label.setdefault(p.model_name, []).append(key)
    out = []
    for label, keys in by_label.items():
        if len(keys) > 1:
            names = ", ".join(f"{ns}/{n}" for ns, n in sorted(keys))
            reason = (
                f'{label!r} is the model_name of {names}: with match_on = "model_name" each deployment '
                "needs its own (set served_model_name, or match on namespace,deployment)"
            )
            for ns, n in keys:
                failure = Failure(deployment=f"{ns}/{n}", field="served_model_name", reason=reason)
                out.append(((ns, n), failure))
    return out


def read(registry: Registry, data: bytes, previous: Fleet | None = None) -> Fleet:
    """The plans of a file's bytes, at once (the CLI; the service fetches Hub models first)."""
    return plan_all(registry, parse(data), digest(data), previous)


def file_failure(path: str, e: OSError) -> Failure:
    """A deployments file that cannot be read, as the service reports it."""
    return Failure(deployment=None, field="KVPLAN_DEPLOYMENTS", reason=f"{e.strerror}: {path}")


def plan_file(registry: Registry, path: str) -> tuple[Fleet | None, tuple[Failure, ...]]:
    """A deployments file's plans and what could not be planned, at once (the CLI): no fleet when
    the file itself cannot be read or used, with the one failure that says why."""
    try:
        data = Path(path).read_bytes()
    except OSError as e:
        return None, (file_failure(path, e),)
    try:
        fleet = read(registry, data)
    except KvplanError as e:
        return None, (Failure.of(e),)
    return fleet, fleet.failures


def find(fleet: Fleet | None, namespace: str, name: str) -> Plan | None:
    return None if fleet is None else fleet.plans.get((namespace, name))


def known(fleet: Fleet | None) -> list[str]:
    return [] if fleet is None else sorted(f"{ns}/{n}" for ns, n in fleet.plans)


# Each kvplan_deployment_<name> series: its help text and its value, /v1/budget's for the inputs.
SERIES: dict[str, tuple[str, Callable[[Plan], int | float | None]]] = {
    "num_gpu_blocks": (
        "KV-cache blocks one replica's engine allocates (vLLM's num_gpu_blocks)",
        lambda p: p.budget.num_blocks,
    ),
    "block_size_tokens": (
        "tokens a KV-cache block holds (vLLM's block_size, as its engine runs it)",
        lambda p: engine_block_size(p.budget),
    ),
    "kv_cache_capacity_tokens": (
        "tokens one replica's KV cache holds (vLLM's 'GPU KV cache size: N tokens')",
        lambda p: p.budget.kv_cache_size_tokens,
    ),
    "max_concurrency": (
        "vLLM's 'Maximum concurrency for context_tokens tokens per request'",
        lambda p: p.budget.concurrency.vllm_reported,
    ),
    "guaranteed_concurrency": (
        "requests of context_tokens one replica holds at once without preemption",
        lambda p: p.budget.concurrency.guaranteed,
    ),
    "max_num_seqs": (
        "requests one replica's scheduler runs at once (vLLM's max_num_seqs)",
        lambda p: p.budget.max_num_seqs,
    ),
    "available_kv_bytes": (
        "bytes one replica's engine has for KV (vLLM's 'Available KV cache memory')",
        lambda p: p.budget.available_kv_bytes,
    ),
    "context_tokens": (
        "the request length the concurrency figures are planned for",
        lambda p: p.budget.context_tokens,
    ),
    "target_utilization": (
        "share of one replica's capacity to fill before adding a replica",
        lambda p: p.spec.target_utilization,
    ),
    "min_replicas": ("the deployment's lower replica bound", lambda p: p.spec.min_replicas),
    "max_replicas": ("the deployment's upper replica bound", lambda p: p.spec.max_replicas),
    "max_rate_per_s": (
        "requests a second one replica sustains under the deployment's latency targets (its slo, "
        "searched on its traffic as POST /v1/capacity searches); only a deployment with slo has it",
        lambda p: None if p.rate is None else p.rate.max_rate_per_s,
    ),
}


def gauges(plan: Plan) -> dict[str, int | float]:
    """The figures a deployment's series publish, each /v1/budget's for the same inputs (a figure
    the plan has not, such as max_rate_per_s without slo, publishes no series)."""
    out = {}
    for name, (_, value) in SERIES.items():
        v = value(plan)
        if v is not None:
            out[name] = v
    return out


# Answers ------------------------------------------------------------------------------------------


class DeploymentAnswer(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    """A deployment's plan as /v1/deployments answers it, named as its series are labelled: its
    series' values (`series`, each what /v1/budget answers for `inputs`), the rules and presets it
    was planned under, and with `budget` the whole budget answer."""

    namespace: str
    deployment: str
    model_name: str
    accelerator_type: str
    plan_current: bool
    engine: str
    registry_version: str
    model_revision: str
    planned_at: float
    series: dict[str, float]  # counts stay integers in JSON (a number either way)
    inputs: DeploymentSpec
    failure: Failure | None = None
    capacity: RateSearch | None = None  # with slo and traffic: what POST /v1/capacity answers for them
    sweep: CapacitySweep | None = None  # with vary: every combination; `inputs` holds the best's settings
    budget: dict[str, Any] | None = None


class ReloadState(msgspec.Struct, frozen=True, kw_only=True):
    successful: bool
    at: float
    last_success_at: float


class DeploymentList(msgspec.Struct, frozen=True, kw_only=True):
    file: str | None
    last_reload: ReloadState | None
    deployments: list[DeploymentAnswer]
    failures: list[Failure]


def deployment_list(
    fleet: Fleet | None, failures: tuple[Failure, ...], file: str | None, last_reload: ReloadState | None
) -> DeploymentList:
    """What /v1/deployments answers and `kvplan deployments` prints: every plan by name (each
    with its entry's failure, if the plan is a last good one), and what could not be planned."""
    plans = [] if fleet is None else sorted(fleet.plans.values(), key=lambda p: p.key)
    return DeploymentList(
        file=file,
        last_reload=last_reload,
        deployments=[deployment_answer(p, failures, whole=False) for p in plans],
        failures=list(failures),
    )


def deployment_answer(plan: Plan, failures: Iterable[Failure], whole: bool) -> DeploymentAnswer:
    """One plan answered; `whole` adds the budget answer (labels first, as /v1/budget's)."""
    name = f"{plan.spec.namespace}/{plan.spec.name}"
    failure = next((f for f in failures if f.deployment == name), None)
    return DeploymentAnswer(
        **plan.names(),
        model_revision=plan.model_revision,
        planned_at=plan.planned_at,
        series=gauges(plan),
        inputs=plan.spec,
        failure=failure,
        capacity=plan.rate,
        sweep=plan.sweep,
        budget={**plan.labels, **msgspec.to_builtins(plan.budget)} if whole else None,
    )


def lookup(fleet: Fleet | None, namespace: str, name: str, configured: bool) -> Plan:
    """The plan of namespace/name, or UnknownDeployment naming the ones there are."""
    plan = find(fleet, namespace, name)
    if plan is not None:
        return plan
    names = tuple(known(fleet))
    if not configured:
        raise UnknownDeployment(
            "deployment",
            "deployment (KVPLAN_DEPLOYMENTS is not set: no deployments file)",
            f"{namespace}/{name}",
            (),
        )
    # difflib is quadratic in the lengths: against every name of a large fleet of long names, for any
    # path a caller sends, it cost seconds on the event loop. Suggested among the first names of
    # everyday length, the asked one's namespace first.
    asked = f"{namespace}/{name}"
    near: tuple[str, ...] = ()
    if len(asked) <= MAX_SUGGESTED_CHARS:
        short = sorted(
            (n for n in names if len(n) <= MAX_SUGGESTED_CHARS),
            key=lambda n: not n.startswith(namespace + "/"),
        )
        near = tuple(difflib.get_close_matches(asked, short[:MAX_SUGGESTION_NAMES], n=3, cutoff=0.6))
    raise UnknownDeployment("deployment", "deployment", f"{namespace}/{name}", names, near)


def observed_replicas(
    plan: Plan, req: ReplicasRequest, should_stop: Callable[[], bool] | None = None
) -> Replicas:
    """The replica rule for what an autoscaler observed: each replica's /metrics text, or the
    numbers. The mean prompt length: given, else the scrapes' lifetime mean, else context_tokens."""
    if (req.metrics is None) == (req.replicas is None):
        raise InvalidInput(
            "metrics", "give one of metrics (each ready replica's /metrics text) or replicas (the numbers)"
        )
    prompt, source = req.mean_prompt_tokens, "given"
    said: list[w.Warning] = []
    if req.metrics is not None:
        scraped = _scrapes(req.metrics, should_stop)
        loads = [s.load for s in scraped]
        for i, s in enumerate(scraped):
            if s.notes:
                text = f"metrics[{i}]: dropped {', '.join(s.notes)} around the exposition."
                said.append(w.Warning(w.SCRAPE_CLEANED, text))
            if s.model_names and plan.model_name not in s.model_names:
                served = ", ".join(sorted(s.model_names))
                said.append(
                    w.Warning(
                        w.SCRAPE_MODEL_DIFFERS,
                        f"metrics[{i}] is vLLM serving {served}, not {plan.model_name}"
                        f" ({plan.spec.namespace}/{plan.spec.name}'s model_name): is it this deployment's"
                        " replica?",
                    )
                )
        count = sum(s.prompt_count for s in scraped)
        if prompt is None and count >= 1:  # a lifetime mean: whole requests, tokens each
            mean = sum(s.prompt_sum for s in scraped) / count
            if mean <= MAX_REPLICA_REQUESTS:
                prompt, source = mean, "scrapes"
    else:
        loads = [
            ReplicaLoad(
                kv_cache_usage_perc=r.kv_cache_usage_perc,
                num_requests_running=r.num_requests_running,
                num_requests_waiting=r.num_requests_waiting,
            )
            for r in req.replicas or ()
        ]
    r = desired_replicas(plan.target(), loads, prompt, source, req.request_rate_per_s)
    return msgspec.structs.replace(r, warnings=(*said, *r.warnings)) if said else r


def _scrapes(texts: list[str], should_stop: Callable[[], bool] | None) -> list[ScrapedLoad]:
    """Every replica's load; the errors of all bad scrapes in one, named by the first."""
    out: list[ScrapedLoad] = []
    errors: list[InvalidInput] = []
    for i, text in enumerate(texts):
        try:
            out.append(replica_load(text, f"metrics[{i}]", should_stop))
        except InvalidInput as e:
            errors.append(e)
    if len(errors) == 1:
        raise errors[0]
    if errors:
        rest = "; ".join(f"{e.field}: {e.reason}" for e in errors[1:4])
        more = f"; and {len(errors) - 4} more" if len(errors) > 4 else ""
        raise InvalidInput(errors[0].field, f"{errors[0].reason} (also {rest}{more})")
    return out


class ReplicasAnswer(Replicas, kw_only=True):
    """A replicas answer: the rule's terms, and the plan they used."""

    namespace: str
    deployment: str
    model_name: str
    accelerator_type: str
    plan_current: bool
    engine: str
    registry_version: str


def replicas_answer(plan: Plan, r: Replicas) -> ReplicasAnswer:
    """The rule's terms with the plan they used, named as its series are labelled."""
    return ReplicasAnswer(**plan.names(), **msgspec.structs.asdict(r))
