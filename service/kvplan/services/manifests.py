"""A deployment's generated configs as YAML (core/autoscale/manifests.py builds them), each
headed by a comment saying what it is for and which plan it came from."""

from __future__ import annotations

from typing import Any

import yaml

from kvplan.core.autoscale.manifests import (
    CHARS_PER_TOKEN,
    MANAGED,
    Site,
    adapter_rules,
    endpoint_picker,
    engine_block_size,
    hpa,
    prometheus_rule,
    router_figures,
    scale_down_window,
    scaled_object,
    vllm_args,
)
from kvplan.core.budget.types import EngineSettings
from kvplan.core.errors import InvalidInput
from kvplan.schemas.deployments import AutoscalingSettings

from .deployments import Plan

MANIFEST_KINDS = ("prometheusrule", "keda", "hpa", "epp", "vllm-args")
EPP_FLAVORS = ("llm-d", "gie")
_ENGINE_SETTINGS = EngineSettings.__struct_fields__


def site(plan: Plan, settings: AutoscalingSettings) -> Site:
    """The plan's deployment as the manifests name it: `vllm serve` takes a Hub model's repository,
    and the revision the file pinned (`org/name@revision`) as --revision."""
    s = plan.spec
    hub = plan.labels.get("hub")
    pinned = hub is not None and isinstance(s.model, str) and "@" in s.model
    return Site(
        namespace=s.namespace,
        name=s.name,
        model=plan.served_model or plan.model_name,
        model_name=plan.model_name,
        revision=hub["revision"] if pinned else None,
        quantization=s.quantization,
        match_on=tuple(settings.match_on.split(",")),
        prometheus_address=settings.prometheus_address,
        polling_interval_seconds=settings.polling_interval_seconds,
        cooldown_seconds=settings.cooldown_seconds,
        target_utilization=s.target_utilization,
        min_replicas=s.min_replicas,
        max_replicas=s.max_replicas,
    )


def _header(kind: str, plan: Plan, lines: list[str]) -> str:
    b = plan.budget
    said = [
        f"# kvplan {kind} for {plan.spec.namespace}/{plan.spec.name}: {plan.model_name}"
        f" on {plan.accelerator_type},",
        f"# {b.num_blocks:,} blocks of {engine_block_size(b)} tokens ({b.kv_cache_size_tokens:,} tokens)"
        " a replica,"
        f" planned under {b.engine} with presets {plan.labels['registry_version']}.",
        *(f"# {line}" for line in (*_tuned(plan), *lines)),
    ]
    return "\n".join(said) + "\n"


def _tuned(plan: Plan) -> list[str]:
    """The settings a deployment's vary chose, said where they are used."""
    sweep = plan.sweep
    if sweep is None or sweep.best is None:
        return []
    best = sweep.best
    chosen = ", ".join(f"{k} {v:g}" for k, v in best.settings.items())
    return [
        f"Tuned by the entry's vary: {chosen}, the most requests/s per GPU under its slo "
        f"({best.rate_per_gpu_per_s:.4g}) of {len(sweep.variants)} combinations searched."
    ]


class _Dumper(yaml.SafeDumper):
    """Multi-line strings (a config file inside a ConfigMap) as literal blocks, readable as written."""


def _str(dumper: yaml.SafeDumper, s: str) -> yaml.ScalarNode:
    return dumper.represent_scalar("tag:yaml.org,2002:str", s, style="|" if "\n" in s else None)


_Dumper.add_representer(str, _str)


def _dump(docs: list[dict[str, Any]]) -> str:
    return yaml.dump_all(docs, Dumper=_Dumper, sort_keys=False, width=120, allow_unicode=True)


def manifest_yaml(kind: str, plan: Plan, settings: AutoscalingSettings, flavor: str | None = None) -> str:
    """One kind of config for this plan, as YAML."""
    st = site(plan, settings)
    b = plan.budget
    if kind == "prometheusrule":  # the same for every deployment: no plan of one in its header
        said = [
            "# kvplan prometheusrule: the recording rules and alerts of every deployment kvplan plans.",
            "# The same rules serve every deployment: apply this once, where your Prometheus selects rules.",
            f"# vLLM's series are matched to a deployment on: {', '.join(st.match_on)}"
            " (docs/autoscaling.md).",
        ]
        return "\n".join(said) + "\n" + _dump([prometheus_rule(st.match_on)])
    capped = (
        [
            f"scaleDown.stabilizationWindowSeconds is {scale_down_window(st)}: Kubernetes takes at most that,"
            f" not cooldown_seconds ({st.cooldown_seconds})."
        ]
        if scale_down_window(st) < st.cooldown_seconds
        else []
    )
    if kind == "keda":
        notes = [
            "Needs kvplan's PrometheusRule (kind=prometheusrule) and kvplan scraped with honorLabels: true.",
            *capped,
        ]
        return _header(kind, plan, notes) + _dump([scaled_object(st)])
    if kind == "hpa":
        notes = [
            "The HPA reads kvplan's desired count through prometheus-adapter: merge the ConfigMap's",
            "externalRules into your adapter's config. Needs kvplan's PrometheusRule (kind=prometheusrule).",
        ]
        if st.min_replicas == 0:
            notes.append("An HPA keeps at least 1 replica: minReplicas is 1 (min_replicas 0 needs KEDA).")
        notes += capped
        adapter = {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {
                "name": "prometheus-adapter-kvplan",
                "namespace": "monitoring",
                "labels": dict(MANAGED),
            },
            "data": {"config.yaml": _dump([adapter_rules()])},
        }
        return _header(kind, plan, notes) + _dump([hpa(st), adapter])
    if kind == "epp":
        chosen = flavor or "llm-d"
        if chosen not in EPP_FLAVORS:
            raise InvalidInput("flavor", f"{chosen!r} is not one; valid: {', '.join(EPP_FLAVORS)}")
        f = router_figures(b, st.target_utilization)
        notes = [
            f"blockSize: vLLM's block of {f.block_size_tokens} tokens"
            + (
                f" (× {CHARS_PER_TOKEN} characters a token: the gie prefix index counts characters)"
                if chosen == "gie"
                else ""
            ),
            f"lruCapacityPerServer: {f.lru_capacity_per_server:,}, one prefix entry a KV block of a replica",
            f"kvCacheUtilThreshold: {f.kv_cache_util_threshold:g} = 1 − {b.blocks_per_request:,} blocks a"
            f" request of {b.context_tokens:,} tokens / {b.num_blocks:,} blocks",
            "  (saturated: one more request does not fit)",
            f"queueDepthThreshold: {f.queue_depth_threshold} = {b.concurrency.schedulable} schedulable − "
            f"⌊{st.target_utilization:g} × {b.concurrency.schedulable}⌋",
            "  (the headroom above the autoscaler's target)",
        ]
        if chosen == "llm-d":
            notes.append(
                f"maxConcurrency: {f.max_concurrency:,} requests (max_num_seqs) and maxTokenConcurrency: "
                f"{f.max_token_concurrency:,} tokens a replica (its KV capacity): hybrid mode holds a"
                " replica to whichever binds"
            )
        return _header(f"epp ({chosen})", plan, notes) + _dump([endpoint_picker(b, st, chosen)])
    if kind == "vllm-args":
        if not isinstance(plan.spec.model, str):
            raise InvalidInput(
                "model",
                f"{plan.spec.namespace}/{plan.spec.name}'s model is an inline config: kvplan cannot say what"
                " `vllm serve` loads; name the model by its Hub id (or a path) to generate its arguments",
            )
        given = EngineSettings(**{k: getattr(plan.spec, k) for k in _ENGINE_SETTINGS})
        args = vllm_args(st, b, given)
        notes = [
            "Container args for the vllm/vllm-openai image (its entrypoint is `vllm serve`), the same as:",
            "  vllm serve " + " ".join(args),
        ]
        return _header(kind, plan, notes) + _dump([{"args": args}])
    raise InvalidInput("kind", f"{kind!r} is not one; valid: {', '.join(MANIFEST_KINDS)}")
