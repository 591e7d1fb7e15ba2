"""The deployments' text answers: the file's plans, one plan, and a replica count with its
terms (render.py holds the shared helpers)."""

from __future__ import annotations

from kvplan.services.deployments import DeploymentAnswer, DeploymentList, Plan, ReplicasAnswer

from .render import DEFAULT_WIDTH, _rows, _warnings, budget_text


def _pct(x: float) -> str:
    return f"{x * 100:.3g} %"


def deployments_text(d: DeploymentList) -> str:
    """Every deployment on one line (model, GPU, capacity, concurrency, bounds), then the reload's
    outcome and each failure by name."""
    lines = ["kvplan deployments" + (f" · {d.file}" if d.file else " · KVPLAN_DEPLOYMENTS is not set")]
    if d.last_reload is not None:
        r = d.last_reload
        lines.append(
            "last reading: "
            + ("planned every deployment" if r.successful else "FAILED (the last good plans stay)")
        )
    rows = [
        (
            "deployment",
            "model on GPU",
            "blocks × size",
            "KV tokens",
            "conc.",
            "slo rate",
            "target",
            "replicas",
            "plan",
        )
    ]
    for a in d.deployments:
        s = a.series
        rows.append(
            (
                f"{a.namespace}/{a.deployment}",
                f"{a.model_name} on {a.accelerator_type}",
                f"{int(s['num_gpu_blocks']):,} × {int(s['block_size_tokens'])}",
                f"{int(s['kv_cache_capacity_tokens']):,}",
                f"{s['max_concurrency']:.2f}",
                f"{s['max_rate_per_s']:.3g}/s" if "max_rate_per_s" in s else "—",
                _pct(s["target_utilization"]),
                f"{int(s['min_replicas'])}–{int(s['max_replicas'])}",
                "current" if a.plan_current else "last good",
            )
        )
    if len(rows) > 1:
        widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
        lines += [
            "",
            *("  " + "  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in rows),
        ]
    elif d.file:
        lines += ["", "  no deployment is planned"]
    if d.failures:
        lines += ["", "not planned"]
        lines += [f"  ! {f.message()}" for f in d.failures]
    return "\n".join(lines) + "\n"


def _sustained_rate_rows(a: DeploymentAnswer) -> list[tuple[str, str]]:
    """A deployment with latency targets: the rate a replica sustains under them, what binds."""
    c = a.capacity
    if c is None:
        return []
    slo = a.inputs.slo
    targets = ", ".join(
        f"{k} ≤ {v:g}" for k in (slo.__struct_fields__ if slo is not None else ()) if (v := getattr(slo, k))
    )
    rows = [
        ("latency targets", targets),
        (
            "sustained rate",
            f"{c.max_rate_per_s:.4g} requests/s a replica under its slo (searched in {c.points} "
            f"simulations of its traffic, ±{_pct(c.tolerance)}); binds first: {c.binding.why}",
        ),
    ]
    sweep = a.sweep
    if sweep is not None and sweep.best is not None:
        best = sweep.best
        chosen = ", ".join(f"{k} {v:g}" for k, v in best.settings.items())
        rows.append(
            (
                "tuned by vary",
                f"{chosen}: the most requests/s per GPU ({best.rate_per_gpu_per_s:.4g}) of "
                f"{len(sweep.variants)} combinations searched",
            )
        )
    return rows


def deployment_text(a: DeploymentAnswer, plan: Plan) -> str:
    """One deployment: what it publishes, then its budget as /v1/budget?format=text shows it."""
    s = a.series
    head = [
        f"kvplan deployment · {a.namespace}/{a.deployment} · model_name {a.model_name}",
        *_rows(
            [
                (
                    "plan",
                    "current" if a.plan_current else "the last good plan (the file's entry fails; see below)",
                ),
                ("blocks", f"{int(s['num_gpu_blocks']):,} of {int(s['block_size_tokens'])} tokens"),
                ("KV capacity", f"{int(s['kv_cache_capacity_tokens']):,} tokens a replica"),
                (
                    "concurrency",
                    f"{s['max_concurrency']:.2f} (vLLM's, at {int(s['context_tokens']):,} tokens); "
                    f"{int(s['guaranteed_concurrency'])} guaranteed; max_num_seqs {int(s['max_num_seqs']):,}",
                ),
                (
                    "scaling",
                    f"fill {_pct(s['target_utilization'])} of a replica, "
                    f"{int(s['min_replicas'])} to {int(s['max_replicas'])} replicas",
                ),
                *_sustained_rate_rows(a),
            ]
        ),
    ]
    if a.failure is not None:
        head += ["", "not planned from the file as it is", f"  ! {a.failure.message()}"]
    gpu = plan.labels.get("gpu")
    body = budget_text(plan.budget, plan.labels["model"], gpu, plan.labels["registry_version"])
    return "\n".join(head) + "\n\n" + body


def replicas_text(r: ReplicasAnswer, width: int = DEFAULT_WIDTH) -> str:
    """The desired count first, then each term of the rule with its inputs."""
    who = f"{r.namespace}/{r.deployment}"
    bound = {"min_replicas": " (raised to min_replicas)", "max_replicas": " (capped at max_replicas)"}
    why = bound.get(r.clamped_by or "", "")
    lines = [
        f"kvplan replicas · {who} · {r.model_name} on {r.accelerator_type}",
        *_rows(
            [
                ("desired replicas", f"{r.desired_replicas}{why}; the load asks for {r.unclamped_replicas}"),
                ("ready replicas", f"{r.ready_replicas}"),
                (
                    "one replica",
                    f"{r.capacity_tokens:,} tokens of KV, max_num_seqs {r.max_num_seqs:,}; "
                    f"target {_pct(r.target_utilization)}",
                ),
                (
                    "token demand",
                    f"{r.demand_tokens:,.0f} tokens = {r.kv_cache_usage_sum:.4g} (Σ KV usage)"
                    f" × {r.capacity_tokens:,}"
                    f" + {r.requests_waiting:g} waiting × {r.mean_prompt_tokens:,.1f} prompt tokens"
                    f" ({r.mean_prompt_tokens_source.replace('_', ' ')})",
                ),
                (
                    "request demand",
                    f"{r.demand_requests:g} = {r.requests_running:g} running"
                    f" + {r.requests_waiting:g} waiting",
                ),
                (
                    "replicas for tokens",
                    f"{r.replicas_for_tokens:.4g} = {r.demand_tokens:,.0f} ÷ ({r.target_utilization:g} × "
                    f"{r.capacity_tokens:,})" + ("  ← binds" if r.binding == "tokens" else ""),
                ),
                (
                    "replicas for requests",
                    f"{r.replicas_for_requests:.4g} = {r.demand_requests:g} ÷ ({r.target_utilization:g} × "
                    f"{r.max_num_seqs:,})" + ("  ← binds" if r.binding == "requests" else ""),
                ),
                *_rate_term_rows(r),
                ("bounds", f"{r.min_replicas} to {r.max_replicas}"),
            ],
            width,
        ),
    ]
    lines += _warnings(r.warnings, width)
    if not r.plan_current:
        lines += [
            "",
            "the plan is the last good one: the deployments file's entry fails (GET the deployment)",
        ]
    return "\n".join(lines) + "\n"


def _rate_term_rows(r: ReplicasAnswer) -> list[tuple[str, str]]:
    """The rate term of a deployment with latency targets: counted, or why not."""
    if r.max_rate_per_s is None:
        return []
    if r.replicas_for_rate is None:
        return [
            (
                "replicas for rate",
                f"not counted: no request_rate_per_s given ({r.max_rate_per_s:.4g}/s a replica sustained)",
            )
        ]
    return [
        (
            "replicas for rate",
            f"{r.replicas_for_rate:.4g} = {r.request_rate_per_s:.4g}/s ÷ ({r.target_utilization:g} × "
            f"{r.max_rate_per_s:.4g}/s sustained)" + ("  ← binds" if r.binding == "rate" else ""),
        )
    ]
