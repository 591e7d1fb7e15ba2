"""Text answers for people running curl: aligned, every figure with its unit, the warnings,
and the ledger that explains them."""

from __future__ import annotations

import json
import textwrap
from collections.abc import Iterable, Sequence

from kvplan.core.budget import Budget
from kvplan.core.engine.command import Command
from kvplan.core.fleet.sweep import Sweep
from kvplan.core.fleet.types import MIX_EXACT, FleetPlan
from kvplan.core.kv.pertoken import PerToken
from kvplan.core.ledger import Step
from kvplan.core.logs.reconcile import NOT_MODELLED, Reconciliation
from kvplan.core.perf.serving import MICROBATCH_STEP, TOKENIZE_GIVEN, TOKENIZE_PRIOR
from kvplan.core.sim.simulate import SimResult, TimedSimResult
from kvplan.core.units import GiB, fmt_bytes, fmt_gib, gib
from kvplan.core.warnings import Severity, Warning
from kvplan.presets.registry import GpuInfo


def _b(n: int | None) -> str:
    """Exact bytes, and beside them the size a person reads."""
    if n is None:
        return "—"
    return f"{n:,} B ({fmt_bytes(n)})" if abs(n) >= 1024 else f"{n:,} B"


def _count(n: int, noun: str) -> str:
    """ "1 replica", "2 replicas": the noun agrees with the count."""
    return f"{n:,} {noun}" + ("" if n == 1 else "s")


# Text answers wrap at this many columns unless the caller says (?width=).
DEFAULT_WIDTH = 100


def _rows(rows: Iterable[tuple[str, str]], width: int = DEFAULT_WIDTH, key: int = 0) -> list[str]:
    """Label and value, the values aligned and wrapped under their own column (at least `key`
    columns of label, so sections of one answer align)."""
    rows = list(rows)
    key = max(key, *(len(k) for k, _ in rows))
    indent = " " * (key + 4)
    out = []
    for k, v in rows:
        head = f"  {k.ljust(key)}  "
        out += textwrap.wrap(v, max(width, len(head) + 20), initial_indent=head, subsequent_indent=indent,
                             break_on_hyphens=False) or [head.rstrip()]  # fmt: skip
    return out


def _warnings(ws: Sequence[Warning], width: int = 100) -> list[str]:
    """The answer's warnings by severity, in a person's words: the notes (how a figure was
    obtained) quietly, then the warnings (the plan may not hold as asked). The codes stay in JSON."""
    out: list[str] = []
    for severity, title, mark in ((Severity.INFO, "notes", "·"), (Severity.WARNING, "warnings", "!")):
        said = [w for w in ws if w.severity is severity]
        if said:
            out += ["", title]
        for w in said:
            out += textwrap.wrap(
                w.message, width=width, initial_indent=f"  {mark} ", subsequent_indent="    "
            )
    return out


def _value(v: object, key: str = "") -> str:
    if key == "GiB" and isinstance(v, (int, float)) and not isinstance(v, bool):
        return gib(v * GiB)  # a step's gloss in GiB reads as every GiB figure does
    if isinstance(v, bool) or v is None:
        return str(v)
    if isinstance(v, int):
        return f"{v:,}"
    if isinstance(v, float):
        return f"{v:,.6g}"
    return str(v)


def ledger_lines(steps: Sequence[Step], width: int = DEFAULT_WIDTH) -> list[str]:
    """One step a line — name, value and unit aligned — its formula, inputs and source wrapped
    under the formula column to `width`."""
    if not steps:
        return []
    name_w = min(44, max(len(s.name) for s in steps))
    val_w = min(24, max(len(_value(s.value)) for s in steps))
    out = ["", "ledger (name  value unit  = formula  [inputs]  ← vLLM source)"]
    for s in steps:
        inputs = ", ".join(f"{k}={_value(v, k)}" for k, v in s.inputs.items() if v is not None)
        head = f"  {s.name.ljust(name_w)}  {_value(s.value).rjust(val_w)} {s.unit:<8} "
        tail = f"= {s.formula}" + (f"  [{inputs}]" if inputs else "")
        tail += f"  ← {s.source}" if s.source else ""
        indent = " " * min(len(head), max(8, width // 2))
        wide = max(width, len(head) + 20)
        out += textwrap.wrap(
            tail, wide, initial_indent=head, subsequent_indent=indent, break_on_hyphens=False
        )
    return out


def per_token_text(pt: PerToken, model: str, engine: str, registry: str, width: int = DEFAULT_WIDTH) -> str:
    head = (
        f"kvplan per-token · model {model} · kv {pt.kv_cache_dtype} · engine {engine} · registry {registry}"
    )
    rows = [
        ("bytes per token (1 GPU)", _b(pt.bytes_per_token)),
        ("bytes per token (model)", _b(pt.bytes_per_token_model)),
        ("KV heads per GPU", f"{pt.kv_heads_per_gpu}"),
        ("MHA-equivalent ratio", f"{pt.mha_equivalent_ratio:.4g}× ({_b(pt.mha_equivalent_bytes)} as MHA)"),
    ]
    for k in pt.by_kind:
        rows.append((f"  {k.kind} × {k.layers} ({k.kv_dtype})", f"{k.bytes_per_token_per_layer:,} B/layer"))
    if len(pt.by_stage) > 1:
        rows.append(("by PP stage", " · ".join(f"{x:,} B" for x in pt.by_stage)))
    if pt.kv_bytes_per_request is not None:
        rows.append((f"KV per request of {pt.context_tokens:,}", _b(pt.kv_bytes_per_request)))
    body = [*_rows(rows, width), *_warnings(pt.warnings, width), *ledger_lines(pt.ledger, width)]
    return "\n".join([head, "", *body]) + "\n"


def _block_sizes(b: Budget) -> str:
    """The block size, and the one vLLM raised it to where a hybrid's pages demand it."""
    used = sorted({g.block_size for g in b.groups})
    if used == [b.block_size]:
        return f"{b.block_size} tokens"
    if not b.group_size:  # packed groups (docs/vllm-rules.md §8.6): blocks of their own kinds
        return (
            f"{b.block_size} tokens (packed groups' own blocks: " + " / ".join(f"{s:,}" for s in used) + ")"
        )
    return " / ".join(f"{s:,}" for s in used) + f" tokens (raised from {b.block_size} to unify pages)"


_CHARGE = {
    "sliding_attention": "the window's blocks",
    "chunked_attention": "the chunk's blocks",
    "sliding_window_mla": "the window's blocks",
    "mamba": "state blocks, whatever T",
    "mamba_replicated": "state blocks on every TP rank, whatever T",
    "circular_buffer": "one ring, whatever T",
}


def _group_rows(b: Budget) -> list[tuple[str, str]]:
    """One row per group shape of a hybrid: how many groups, their layers and what each charges."""
    if len(b.groups) == 1:
        return []
    return [
        (
            f"  {g.groups} × {g.kind}",
            f"{g.layers} layers in {g.groups} group{'s' if g.groups > 1 else ''}"
            # Packed (block-outermost) groups have no common slot count.
            + (f" of {b.group_size} slots · " if b.group_size else " · ")
            + f"{g.blocks_per_request:,} blocks each per request"
            + (f" ({_CHARGE[g.kind]})" if g.kind in _CHARGE else ""),
        )
        for g in b.groups
    ]


def _memory_rows(b: Budget) -> list[tuple[str, str]]:
    """What comes off besides the weights, and how sure the figure is."""
    m = b.memory
    if m is None:
        return []
    if m.non_kv_source != "estimated":
        how = "given" if m.non_kv_source == "given" else "not estimated (model shape unknown)"
        return [("non-KV per GPU", f"{_b(b.non_kv_bytes + b.cudagraph_bytes)} ({how})")]
    graphs = (
        f" + CUDA graphs {_b(b.cudagraph_bytes)}"
        if m.cudagraph_subtracted
        else f" (CUDA graphs {_b(m.cudagraph_bytes or 0)} are captured afterwards, not subtracted)"
    )
    rows = [
        (
            "non-KV per GPU (estimated)",
            f"activation {_b(m.activation_bytes or 0)} + non-torch {_b(m.non_torch_bytes or 0)}{graphs}",
        )
    ]
    if b.band is not None:
        rows.append(
            (
                "band (calibration)",
                f"available {_b(b.band.available_kv_low_bytes)} … {_b(b.band.available_kv_high_bytes)} → "
                f"{b.band.concurrency_low:,} … {b.band.concurrency_high:,} requests; plan on the low end",
            )
        )
    return rows


def _gpu_memory(used: int, preset: GpuInfo | None) -> str:
    """The GPU memory the plan computes with, and, when the preset's own figure differs, that
    figure by its name: what vLLM sees is below what the driver reports."""
    if preset is None or preset.memory_bytes == used:
        return _b(used)
    theirs = "its nominal size is" if preset.nominal else "the driver reports"
    seen = "as vLLM sees it" if preset.vllm_memory_bytes == used else "as given"
    return f"{_b(used)} {seen}; {theirs} {fmt_gib(preset.memory_bytes)}"


def budget_text(
    b: Budget,
    model: str,
    gpu: str | None,
    registry: str,
    width: int = DEFAULT_WIDTH,
    gpu_preset: GpuInfo | None = None,
) -> str:
    """The budget as an on-call engineer reads it: a heading naming model, GPU, layout, engine and
    registry, the figures in aligned rows, the warnings, and the ledger when it was asked for."""
    c = b.concurrency
    where = gpu or (f"{fmt_bytes(b.gpu_memory_bytes)} GPU" if b.gpu_memory_bytes else "given KV memory")
    layout = (
        "" if b.tensor_parallel_size == b.pipeline_parallel_size == 1 else f" · TP {b.tensor_parallel_size}"
    )
    if b.pipeline_parallel_size > 1:
        layout += f" × PP {b.pipeline_parallel_size}"
    head = f"kvplan budget · {model} on {where}{layout} · engine {b.engine} · registry {registry}"
    rows: list[tuple[str, str]] = [
        ("per-token KV (1 GPU)", _b(b.per_token.bytes_per_token)),
        # The total the plan computes with: for a preset, what vLLM sees of the GPU where its logs
        # say so, which is below the driver's figure.
        *(
            [("GPU memory, as planned", _gpu_memory(b.gpu_memory_bytes, gpu_preset))]
            if b.gpu_memory_bytes
            else []
        ),
        (
            "requested",
            f"{_b(b.requested_bytes)} = ceil(GPU memory × {b.gpu_memory_utilization:g})"
            if b.requested_bytes is not None
            else "— (kv_cache_memory_bytes given)",
        ),
        (
            "weights per GPU",
            _b(b.weights_bytes_per_gpu)
            + (f" ({_b(b.weights_offloaded_bytes)} more in CPU memory)" if b.weights_offloaded_bytes else "")
            + (f", with {_b(b.lora_bytes_per_gpu)} of LoRA adapter slots" if b.lora_bytes_per_gpu else ""),
        ),
        *_memory_rows(b),
        (
            "available for KV",
            _b(b.available_kv_bytes)
            + (
                f" — short by {_b(b.kv_memory_shortfall_bytes)}: the weights do not fit (see warnings)"
                if b.kv_memory_shortfall_bytes
                else ""
            ),
        ),
        ("bytes per block", f"{_b(b.bytes_per_block)} · block {_block_sizes(b)}"),
        ("blocks", f"{b.num_blocks:,} ({b.usable_blocks:,} usable; block 0 is the null block)"),
        ("token slots", f"{b.token_slots:,}"),
        (f"KV per request of {b.context_tokens:,}", _b(b.kv_bytes_per_request)),
        (
            "blocks per request",
            f"{b.blocks_per_request:,}"
            + (
                ""
                if len(b.groups) == 1
                else " = " + " + ".join(f"{g.groups}×{g.blocks_per_request:,} {g.kind}" for g in b.groups)
            ),
        ),
        *_group_rows(b),
        (
            "concurrency (guaranteed)",
            f"{c.guaranteed:,}   (unrounded {c.guaranteed_unrounded:,.4f})"
            + ("" if c.schedulable == c.guaranteed else f"; vLLM runs {c.schedulable:,} (max_num_seqs)"),
        ),
        (
            "vLLM would log",
            f"Maximum concurrency for {b.context_tokens:,} tokens per request: "
            f"{c.vllm_reported:.2f}x · GPU KV cache size: {b.kv_cache_size_tokens:,} tokens",
        ),
        (
            "budget / KV per request",
            f"{c.budget_floor:,}   (unrounded {c.budget_unrounded:,.4f}; the seed's method)",
        ),
        ("max context that fits", f"{b.max_context_tokens:,} tokens (limited by {b.max_context_limited_by})"),
    ]
    if b.target_concurrency is not None:
        util = (
            "impossible on this GPU"
            if b.min_gpu_memory_utilization is None
            else f"{b.min_gpu_memory_utilization:g}"
        )
        rows.append(
            (
                f"for {b.target_concurrency:,} requests",
                f"max context {b.max_context_for_target or 0:,} tokens · min gpu_memory_utilization {util}",
            )
        )
    if b.data_parallel is not None:
        d = b.data_parallel
        rows.append(
            (
                f"over {d.engines} DP engines",
                f"{_count(d.concurrency, 'request')} on {d.gpus} GPUs · {d.kv_cache_size_tokens:,} KV tokens",
            )
        )
    if b.pooled is not None:
        p = b.pooled
        rows.append(
            (
                "pooled (NOT deployable)",
                f"{_count(p.concurrency, 'request')} on {p.gpus} GPUs pooled "
                f"({fmt_gib(p.available_kv_bytes)} for KV)",
            )
        )
    lines = [head, "", *_rows(rows, width), *_warnings(b.warnings, width), *ledger_lines(b.ledger, width)]
    return "\n".join(lines) + "\n"


def fleet_text(plan: FleetPlan, model: str, registry: str) -> str:
    """A fleet plan as text: per GPU type each layout, whether it fits (or why not), its replicas, requests
    and cost, then the sizing for the target and the cheapest mix."""
    mix = (
        " + ".join(f"{m.share:g}×{m.context_tokens:,}" for m in plan.mix)
        if len(plan.mix) > 1
        else f"{plan.context_tokens:,} tokens"
    )
    lines = [f"kvplan fleet · {model} · workload {mix} · engine {plan.engine} · registry {registry}", ""]
    for t in plan.gpu_types:
        lines.append(
            f"{t.gpu} ×{t.count} ({t.gpus_per_node} per node) — best: "
            + (f"{t.best.name}, {t.best.total_concurrency:,} concurrent" if t.best else "nothing fits")
        )
        header = ["layout", "GPUs/replica", "replicas", "idle", "per replica", "total", "cost/h", "note"]
        rows = []
        for p in t.layouts:
            misleading = (
                p.pooled_concurrency is not None and p.pooled_concurrency != p.concurrency_per_replica
            )
            note = p.reason or (f"pooled {p.pooled_concurrency:,} (not deployable)" if misleading else "")
            if p.per_rank is not None and p.feasible:
                note = (
                    f"{p.per_rank.ranks} ranks × {p.per_rank.concurrency_per_rank:,}; "
                    f"{fmt_gib(p.per_rank.weights_bytes_per_rank)} of weights per rank"
                )
            rows.append(
                [
                    p.name,
                    str(p.gpus_per_replica),
                    f"{p.replicas:,}",
                    f"{p.idle_gpus:,}",
                    f"{p.concurrency_per_replica:,}" if p.feasible else "—",
                    f"{p.total_concurrency:,}" if p.feasible else "—",
                    "" if p.cost_per_hour is None else f"{p.cost_per_hour:,.2f}",
                    note,
                ]
            )
        widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]
        for r in [header, *rows]:
            lines.append("  " + "  ".join(c.ljust(widths[i]) for i, c in enumerate(r)).rstrip())
        if t.target is not None:
            s = t.target
            lines.append(
                f"  for {plan.target_concurrency:,}: {_count(s.replicas, 'replica')} of {s.layout} = "
                f"{s.gpus:,} GPUs" + ("" if s.available else " (more than the fleet has)")
            )
        lines.append("")
    total = f"fleet total: {plan.total_concurrency:,} concurrent requests under the best layouts"
    if plan.total_expected_concurrency is not None:
        total += f" (expected {plan.total_expected_concurrency:,} with the mix)"
    lines.append(total)
    if plan.cheapest_mix is not None:
        m = plan.cheapest_mix
        parts = " + ".join(f"{_count(p.replicas, 'replica')} of {p.layout} on {p.gpu}" for p in m.parts)
        how = "proven cheapest" if m.method == MIX_EXACT else "the cheapest the search found before its limit"
        lines.append(
            f"cheapest for {plan.target_concurrency:,}: {parts} — {m.concurrency:,} concurrent, "
            f"{m.cost_per_hour:,.2f} per hour ({how}"
            + ("" if m.within_fleet else "; more GPUs than the fleet has")
            + ")"
        )
    lines += _warnings(plan.warnings)
    return "\n".join(lines) + "\n"


SWEEP_COLUMNS = (
    "value",
    "guaranteed",
    "vllm_reported",
    "budget_floor",
    "num_blocks",
    "usable_blocks",
    "max_context_tokens",
    "kv_bytes_per_request",
    "available_kv_bytes",
)


def sweep_csv(s: Sweep) -> str:
    out = [",".join((s.vary, *SWEEP_COLUMNS[1:]))]
    for p in s.points:
        out.append(",".join(str(getattr(p, c)) for c in SWEEP_COLUMNS))
    return "\n".join(out) + "\n"


def sweep_text(s: Sweep, model: str, registry: str) -> str:
    header = [s.vary, "guaranteed", "vLLM x", "budget/req", "blocks", "max context"]
    rows = [
        [
            str(p.value),
            f"{p.guaranteed:,}",
            f"{p.vllm_reported:,.2f}",
            f"{p.budget_floor:,}",
            f"{p.num_blocks:,}",
            f"{p.max_context_tokens:,}",
        ]
        for p in s.points
    ]
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]
    lines = [f"kvplan sweep · {model} · vary {s.vary} · engine {s.engine} · registry {registry}", ""]
    lines += ["  " + "  ".join(c.rjust(widths[i]) for i, c in enumerate(r)) for r in [header, *rows]]
    return "\n".join(lines) + "\n"


def simulation_text(r: SimResult, labels: dict[str, object], registry: str) -> str:
    """A simulation's outcome as text: completed requests, preemptions, prefix-cache hits and the pool's
    peak use, under a heading that names the pool and the engine."""
    model, gpu = labels.get("model"), labels.get("gpu")
    subject = f"{model} on {gpu} · " if model and gpu else f"{model} · " if model else ""
    head = (
        f"kvplan simulate · {subject}pool {labels['pool']} · engine {labels['engine']} · registry {registry}"
    )
    rows = [
        ("requests completed", f"{r.completed:,} of {r.requests:,} in {r.steps:,} steps"),
        ("preemptions", f"{r.preemptions:,} ({r.recomputed_tokens:,} tokens thrown away and recomputed)"),
        (
            "prefix cache hits",
            f"{r.cache_hit_rate_tokens:.1%} of prompt tokens ({r.cache_hit_tokens:,} of "
            f"{r.prompt_tokens:,}); {r.cache_hit_rate_blocks:.1%} of full blocks",
        ),
        (
            "blocks in use",
            f"peak {r.peak_blocks_in_use:,}, mean {r.mean_blocks_in_use:,.1f} of "
            f"{r.usable_blocks:,} usable ({r.block_size} tokens each)",
        ),
        (
            "running requests",
            f"peak {r.peak_running:,}, mean {r.mean_running:,.1f} "
            f"(the worst-case formula holds {r.formula_concurrency:,} requests of "
            f"{r.formula_context_tokens:,} tokens, the longest here)",
        ),
        ("tail waste", f"{r.tail_waste_tokens_mean:,.1f} tokens per finished request"),
    ]
    if isinstance(r, TimedSimResult):
        rows.append(("requests in flight", f"peak {r.peak_in_flight:,} (sent and not yet finished)"))
        exact = ["exact: vLLM 0.33's scheduler, step for step", *_rows(rows, key=_LABEL)]
        return "\n".join([head, "", *exact, "", *_timed_lines(r), *_warnings(r.warnings)]) + "\n"
    return "\n".join([head, "", *_rows(rows), *_warnings(r.warnings)]) + "\n"


def _duration(ms: float) -> str:
    """Milliseconds as a person reads them: ms under ten seconds, seconds from there."""
    return f"{ms / 1000:,.1f} s" if ms >= 10_000 else f"{ms:,.2f} ms" if ms < 10 else f"{ms:,.1f} ms"


# The latencies as vllm bench serve reports them, in the order a request meets them.
_LATENCY_ROWS = (
    ("queue_ms", "queued before first step"),
    ("ttft_ms", "time to first token"),
    ("tpot_ms", "time per output token"),
    ("itl_ms", "inter-token latency"),
    ("e2e_ms", "end-to-end latency"),
)
_LABEL = max(len(name) for _, name in _LATENCY_ROWS)
_STATS = ("mean", "p50", "p90", "p99")


def _timed_lines(r: TimedSimResult, width: int = DEFAULT_WIDTH) -> list[str]:
    """What the requests saw in time: a latency table (mean, p50, p90, p99), the step-time model's
    measured error right under it, throughput and goodput, then which figures are exact and which
    modelled, wrapped for a terminal."""
    lat, t, n = r.latency, r.throughput, r.timing
    cells = [
        (name, [_duration(getattr(getattr(lat, key), p)) for p in _STATS]) for key, name in _LATENCY_ROWS
    ]
    col = max(len(c) for _, row in cells for c in row) + 2
    table = [("latency per request", _STATS), *cells]
    server = _server_path(n.steps)
    summed = (
        "step times (kvplan's step-time model) and the server's path"
        if server
        else "step times from kvplan's step-time model"
    )
    out = [f"modelled: every duration is a sum of {summed}"]
    out += [f"  {name.ljust(_LABEL)}" + "".join(c.rjust(col) for c in row) for name, row in table]
    rows = [
        ("model's error", n.validation),
        (
            "throughput",
            f"{t.requests_per_s:,.2f} requests/s · {t.output_tokens_per_s:,.0f} output tokens/s · "
            f"{t.total_tokens_per_s:,.0f} tokens/s in all, over {t.duration_s:,.1f} s",
        ),
    ]
    layout = next((s for s in n.steps if s.name == "step-time dtypes and layout"), None)
    if layout is not None and (moe := layout.inputs.get("moe")):
        rows.insert(1, ("experts", str(moe)))  # the kernel's table, and what of MXFP8 vLLM honours
    if (ungraphed := _ungraphed(n.steps)) is not None:
        rows.insert(1, ("forward", ungraphed))
    if server is not None:
        rows.insert(1, ("server", server))
    if (g := r.goodput) is not None:
        named = (("TTFT", g.targets.ttft_ms), ("TPOT", g.targets.tpot_ms), ("end-to-end", g.targets.e2e_ms))
        met = ", ".join(f"{name} ≤ {_duration(v)}" for name, v in named if v is not None)
        share = f"{g.requests_met:,} of {r.requests:,} ({g.share_met:.1%}) met {met}"
        rows.append(("goodput", f"{g.requests_per_s:,.2f} requests/s: {share}"))
    note = [f"{text[:1].upper()}{text[1:]}." for text in (n.exact, n.modelled)]
    wrapped = [line for text in note for line in textwrap.wrap(text, width, break_on_hyphens=False)]
    return [*out, *_rows(rows, width, _LABEL), "", *wrapped]


def _server_path(steps: Sequence[Step]) -> str | None:
    """What the latencies hold besides the engine's steps (core/perf/serving.py): the request path
    and the tokenizer, counted in queue time, TTFT and end-to-end, never in TPOT or ITL. None when
    the ledger lacks the steps to say it."""
    named = {s.name: s for s in steps}
    path = named.get("request path outside the engine (prior)")
    given = named.get(TOKENIZE_GIVEN)
    tokenizer = given or named.get(TOKENIZE_PRIOR)
    if path is None or tokenizer is None:
        return None
    ms, us = float(path.inputs["request_path_s"]) * 1000, float(tokenizer.inputs["per_token_s"]) * 1e6
    rate = "the request's" if given is not None else "prior, for prose"
    batches = named.get(MICROBATCH_STEP)
    wait = 0.0 if batches is None else float(batches.inputs["wait_s"]) * 1000
    batched = f" in micro-batches (a lone request waits {wait:g} ms for more)" if wait else ""
    return (
        f"queue time, TTFT and end-to-end include the request's path outside the engine ({ms:g} ms: "
        f"HTTP, IPC, the first token's way back, prior) and one tokenizer thread ({us:g} µs a prompt "
        f"token, {rate}){batched}; TPOT and ITL are the engine's steps alone"
    )


def _ungraphed(steps: Sequence[Step]) -> str | None:
    """Which steps run without a CUDA graph, and so take at least the host's floor: every step of an
    eager forward or of cudagraph mode none, full_decode_only's steps with a prefill, and otherwise
    steps above the largest capture size. None when the ledger lacks the steps to say it."""
    named = {s.name: s for s in steps}
    host, graphs, model = (
        named.get(k) for k in ("host overhead (prior)", "CUDA graphs in the step time", "step-time model")
    )
    if host is None or graphs is None or model is None:
        return None
    mode, eager, largest = (
        graphs.inputs.get("mode"),
        host.inputs.get("eager_forward"),
        graphs.inputs.get("largest"),
    )
    if eager:
        which = "eager PyTorch, never in a CUDA graph"
    elif mode == "none":  # no capture sizes: the ledger's mode is none (core/perf/steptime.py)
        which = "compiled, never in a CUDA graph (cudagraph mode none)"
    elif mode == "full_decode_only":
        which = "a step with a prefill runs without a CUDA graph (full_decode_only)"
    else:
        which = f"a step of more than {int(largest):,} tokens (the largest CUDA graph) runs without one"
    layers, per_layer = int(model.inputs["layers"]), float(host.inputs["eager_layer_s"]) * 1000
    return (
        f"{which}: such a step takes at least {layers * per_layer:,.0f} ms, the host's "
        f"({layers} layers × {per_layer:.2f} ms a layer, prior)"
    )


def _decimals(r: Reconciliation, figure: str, line: int) -> int:
    """The decimals the log printed a figure with (so 3 GiB is not shown as 3.00)."""
    f = next((f for f in r.figures if f.name == figure and f.line == line), None)
    return f.decimals if f is not None else 2


def _verdict(verdict: str, difference: float | None, pct: float | None, unit: str) -> str:
    """A verdict with its size: `differs by +1.20 GiB (+3.1 %)`."""
    if verdict != "differs" or difference is None:
        return verdict
    shown = f"{difference:+,.2f}" if abs(difference) >= 0.01 or difference == 0 else f"{difference:+.4f}"
    size = f"{shown} {unit}".rstrip()
    return f"differs by {size}" + (f" ({pct:+.1f} %)" if pct is not None else "")


def reconcile_text(r: Reconciliation) -> str:
    """The side-by-side for an on-call engineer's terminal: what was read and inferred, the log
    against itself, every figure vLLM printed beside kvplan's with a sized verdict, and what to
    do with the difference."""
    out = [
        f"kvplan reconcile · {r.model} · engine {r.engine} ({r.engine_source})"
        f" · registry {r.registry_version}",
        f"read {r.lines:,} lines, {r.vllm_lines:,} of them vLLM's, {len(r.figures):,} figures",
    ]
    if r.failure is not None:
        f = r.failure
        out.append(f"THE ENGINE DID NOT START: {f.detail} (line {f.line}). {f.kvplan_says}.")
    if r.not_planned:  # whatever is missing, overrides supply it: say where they go
        out.append(f"not planned: {r.not_planned} (overrides: in a JSON body, or ?<name>= beside a text log)")
    inferred = [u for u in r.inputs if u.source.startswith("inferred")]
    if inferred:
        names = ", ".join(f"{u.name} {u.value}" for u in inferred)
        out.append(
            f"inferred: {names} (give overrides.<name>, or ?<name>= beside a text log, to replace any)"
        )
    out += ["", "inputs (from the log unless said)"]
    for u in r.inputs:
        value = f"{u.value:,}" if isinstance(u.value, int) and not isinstance(u.value, bool) else str(u.value)
        out.append(f"  {u.name:26} {value:>24}   {u.source}")
    if r.checks:
        out += ["", "the log against itself"]
        for c in r.checks:
            verdict = _verdict(c.verdict, c.difference, c.difference_pct, "")
            lines = ", ".join(map(str, c.lines))
            out.append(
                f"  {c.name:22} {c.printed!s:>12} = {c.formula} = {c.computed:g}  {verdict}  (lines {lines})"
            )
            if c.note and c.verdict == "differs":
                out.append(f"  {'':22} {c.note}")
    compared = {(row.figure, row.vllm_line) for row in r.rows}
    out += ["", f"{'figure':30} {'vLLM':>14} {'kvplan':>14}  {'verdict':30} {'from':10} where the paths part"]
    for row in r.rows:
        # vLLM's figure as the log printed it (a quote); kvplan's memory figures as every GiB figure.
        if isinstance(row.vllm, float):
            shown = f"{row.vllm:,.{_decimals(r, row.figure, row.vllm_line)}f}"
        else:
            shown = f"{row.vllm:,}"
        if row.kvplan_bytes is not None:
            shown, ours = f"{shown} GiB", fmt_gib(row.kvplan_bytes)
        else:
            ours = "—" if row.kvplan is None else f"{row.kvplan:,}"
        origin = "metrics" if row.vllm_line == 0 else f"line {row.vllm_line}"
        where = f"ledger step {row.step}" if row.step else ""
        verdict = _verdict(row.verdict, row.difference, row.difference_pct, row.unit)
        out.append(f"{row.figure:30} {shown:>14} {ours:>14}  {verdict:30} {origin:10} {where}".rstrip())
    for f in r.figures:
        if (f.name, f.line) in compared or not isinstance(f.value, (int, float)) or isinstance(f.value, bool):
            continue
        # A memory figure with at least the two decimals vLLM prints memory with; counts as read.
        places = max(2, f.decimals)
        shown = f"{f.value:,.{places}f} GiB" if f.unit == "GiB" else f"{f.value:,}"
        origin = "metrics" if f.line == 0 else f"line {f.line}"
        out.append(f"{f.name:30} {shown:>14} {'—':>14}  {'not compared':30} {origin:10} {f.rank}".rstrip())
    judged = [row for row in r.rows if row.verdict != NOT_MODELLED]
    if judged:
        share = f"{r.reproduced_share:.0%} of {len(judged)}"
        out.append(f"reproduced exactly or within the log's rounding: {share}")
    out.append("")
    if r.observed_non_kv_bytes is not None:
        out.append(f"overhead vLLM saw: non_kv_bytes {_b(r.observed_non_kv_bytes)}")
    out.append(f"  {r.observed_non_kv_note}")
    if r.what_ifs:
        out += ["", "what if (the log's available memory)"]
        out += [f"  {w.question}: {w.answer}" for w in r.what_ifs]
    return "\n".join(out) + "\n"


def fields_text(title: str, data: object, width: int = 100) -> str:
    """Any answer as aligned `path  value` lines for a terminal: nested objects dotted, lists
    indexed, long values cut to the width."""
    rows: list[tuple[str, str]] = []

    def walk(prefix: str, value: object) -> None:
        if isinstance(value, dict):
            for k, v in value.items():
                walk(f"{prefix}.{k}" if prefix else str(k), v)
        elif isinstance(value, (list, tuple)) and value and isinstance(value[0], (dict, list, tuple)):
            for i, v in enumerate(value):
                walk(f"{prefix}[{i}]", v)
        elif isinstance(value, (list, tuple)):
            rows.append((prefix, ", ".join(map(str, value))))
        elif isinstance(value, int) and not isinstance(value, bool) and abs(value) >= 10_000:
            rows.append((prefix, f"{value:,}"))
        else:
            rows.append((prefix, "—" if value is None else str(value)))

    walk("", data)
    key = min(40, max((len(k) for k, _ in rows), default=0))
    out = [title, ""]
    for k, v in rows:
        line = f"  {k:<{key}}  {v}"
        out.append(line if len(line) <= width else line[: width - 1] + "…")
    return "\n".join(out) + "\n"


def batch_text(results: list[dict[str, object]]) -> str:
    """One line a scenario: what it holds, or why it failed."""
    out = ["kvplan budget batch", ""]
    for item in results:
        i = item.get("index")
        r = item.get("result")
        if isinstance(r, dict):
            c = r.get("concurrency") or {}
            guaranteed = c.get("guaranteed") if isinstance(c, dict) else None
            warnings = r.get("warnings")
            listed = warnings if isinstance(warnings, list) else []
            # The warnings only: every default answer carries notes on how its figures were obtained.
            codes = ", ".join(
                str(w.get("code")) for w in listed if isinstance(w, dict) and w.get("severity") == "warning"
            )
            where = (
                f"{r.get('model')} on {r.get('gpu') or 'given memory'} · {r.get('context_tokens'):,} tokens"
            )
            out.append(
                f"[{i}] {where}: {guaranteed:,} requests · {r.get('num_blocks'):,} blocks"
                + (f" · warnings: {codes}" if codes else "")
            )
        else:
            e = item.get("error") or {}
            assert isinstance(e, dict)
            out.append(f"[{i}] error {e.get('status')} · {e.get('field') or ''}: {e.get('detail')}")
    return "\n".join(out) + "\n"


def command_text(c: Command, width: int = DEFAULT_WIDTH) -> str:
    """How each flag of the command was read: its value and what it does to the plan."""
    effect = {"plan": "planned", "memory": "NOT MODELLED", "none": "no memory effect"}
    rows = [("model", c.model or "—")]
    rows += [(f"env {k}", v) for k, v in c.env.items()]
    for f in c.flags:
        value = f.value if not isinstance(f.value, (dict, list)) else json.dumps(f.value)[:80]
        said = f"{value} · {effect.get(f.effect, f.effect)}"
        if f.field:
            said += f" → {f.field}"
        if f.note and f.effect == "memory":
            said += f" ({f.note})"
        rows.append((f.option, said))
    return "\n".join(["", f"read from the command ({c.form})", *_rows(rows, width)]) + "\n"
