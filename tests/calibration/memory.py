"""Calibrate the non-KV memory model (core/engine/nonkv.py) on real vLLM start-up logs and write the
report, docs/memory-model.md.

    .venv/bin/python -m tests.calibration.memory          # fit, print the constants, write the report

The constants live in core/engine/profiles.py; tests/calibration/test_memory_model.py checks that they
are what this fit gives, that the report is current, and the accuracy target."""

from __future__ import annotations

import json
import math
import re
import statistics
import sys
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import msgspec

from kvplan.core.budget import BudgetInput, compute_budget
from kvplan.core.engine.nonkv import MemoryRules, activation_peak, cudagraph_memory, non_torch_memory
from kvplan.core.engine.profiles import EngineProfile, profile_for_version
from kvplan.core.hf.reader import from_hf_config
from kvplan.core.model.geometry import Geometry
from kvplan.core.units import GiB

HERE = Path(__file__).parent
DATA = HERE / "data"
REPORT = HERE.parents[1] / "docs" / "memory-model.md"

# How a log's checkpoint is quantized, as a quantization_config its base config lacks.
_CT = "compressed-tensors"
QUANT_CONFIGS: dict[str, dict[str, Any]] = {
    "fp8 (compressed-tensors": {"quant_method": _CT, "config_groups": {"g": {"weights": {
        "num_bits": 8, "type": "float", "strategy": "channel"}}}},
    "w8a8 int8": {"quant_method": _CT, "config_groups": {"g": {"weights": {
        "num_bits": 8, "type": "int", "strategy": "channel"}}}},
    "gptq (w4a16": {"quant_method": _CT, "config_groups": {"g": {"weights": {
        "num_bits": 4, "type": "int", "strategy": "group", "group_size": 128}}}},
    "fp8 (online": {"quant_method": "fp8"},
    "awq": {"quant_method": "awq", "bits": 4, "group_size": 128},
}  # fmt: skip


@dataclass(frozen=True)
class Log:
    """One start-up log with the inputs a user would give kvplan and the figures vLLM printed."""

    id: str
    version: str
    profile: EngineProfile
    model: str
    geometry: Geometry
    total_bytes: int
    utilization: float
    tensor: int
    pipeline: int
    max_num_seqs: int
    max_num_batched_tokens: int
    enforce_eager: bool
    weight_dtype: str | None
    weights_gib: float
    activation_gib: float | None
    non_torch_gib: float | None
    cudagraph_gib: float | None
    available_gib: float

    @property
    def layers_on_worker(self) -> int:
        return -(-self.geometry.decoder_layer_count // self.pipeline)


def _configs() -> dict[str, dict[str, Any]]:
    out = {}
    for line in (DATA / "hf-configs" / "INDEX.jsonl").read_text().splitlines():
        entry = json.loads(line)
        out[entry["model"]] = json.loads((DATA / "hf-configs" / entry["file"]).read_text())
    return out


def _version(text: str) -> str | None:
    m = re.search(r"(\d+\.\d+)", text)
    return m.group(1) if m else None


def _dtype(notes: str) -> str | None:
    """The dtype the engine ran in, where the notes print it (`dtype=torch.float32`)."""
    m = re.search(r"dtype=torch\.(\w+)", notes)
    return m.group(1) if m else None


def load_logs() -> tuple[list[Log], list[tuple[str, str]]]:
    """The V1 logs whose inputs are complete, and each other log with the reason it is left out."""
    configs, logs, skipped = _configs(), [], []
    for line in (DATA / "vllm-memlogs.jsonl").read_text().splitlines():
        r = json.loads(line)
        rep, why = r["reported"], None
        version = _version(r["vllm_version"])
        profile = profile_for_version(version) if version else None
        config = configs.get(r["model"])
        if r["engine"] != "V1":
            why = "V0 engine (not modelled)"
        elif profile is None:
            why = f"version {r['vllm_version']!r} maps to no profile"
        elif config is None:
            why = "no config.json for the model"
        elif None in (r["gpu_total_gib"], r["gpu_memory_utilization"], r["tensor_parallel_size"]):
            why = "GPU memory, utilization or TP not printed"
        elif None in (rep["available_kv_gib"], rep["weights_gib"]):
            why = "available KV or weights not printed"
        elif rep["available_kv_gib"] <= 0:
            why = "failed start-up (negative KV budget)"
        elif "does not add up" in r["notes"]:
            why = "its figures do not add up (notes)"
        if why or profile is None or config is None:
            skipped.append((r["id"], why or ""))
            continue
        quant = next((q for k, q in QUANT_CONFIGS.items() if (r["quantization"] or "").startswith(k)), None)
        if quant is not None and "quantization_config" not in config:
            config = {**config, "quantization_config": quant}
        total = round(r["gpu_total_gib"] * GiB)
        defaults = profile.batch_defaults(total, r["gpu_type"] or "")
        logs.append(
            Log(
                id=r["id"],
                version=version or "",
                profile=profile,
                model=r["model"],
                geometry=from_hf_config(config, name=r["model"]),
                total_bytes=total,
                utilization=r["gpu_memory_utilization"],
                tensor=r["tensor_parallel_size"],
                pipeline=r["pipeline_parallel_size"] or 1,
                max_num_seqs=r["max_num_seqs"] or defaults.max_num_seqs,
                max_num_batched_tokens=r["max_num_batched_tokens"] or defaults.max_num_batched_tokens,
                enforce_eager=bool(r["enforce_eager"]),
                weight_dtype=_dtype(r["notes"]) if quant is None else None,
                weights_gib=rep["weights_gib"],
                activation_gib=rep["activation_peak_gib"],
                non_torch_gib=rep["non_torch_gib"],
                cudagraph_gib=rep["cudagraph_gib"],
                available_gib=rep["available_kv_gib"],
            )
        )
    return logs, skipped


# -- the fit ---------------------------------------------------------------------------------------


def _solve(rows: Sequence[Sequence[float]], ys: Sequence[float]) -> list[float]:
    """Least squares by the normal equations (a handful of columns)."""
    n = len(rows[0])
    a = [[sum(r[i] * r[j] for r in rows) for j in range(n)] for i in range(n)]
    b = [sum(r[i] * y for r, y in zip(rows, ys, strict=True)) for i in range(n)]
    for i in range(n):  # Gauss-Jordan with partial pivoting
        p = max(range(i, n), key=lambda k: abs(a[k][i]))
        a[i], a[p], b[i], b[p] = a[p], a[i], b[p], b[i]
        if abs(a[i][i]) < 1e-12:
            continue
        for k in range(n):
            if k != i:
                f = a[k][i] / a[i][i]
                a[k] = [x - f * y for x, y in zip(a[k], a[i], strict=True)]
                b[k] -= f * b[i]
    return [b[i] / a[i][i] if abs(a[i][i]) >= 1e-12 else 0.0 for i in range(n)]


def _activation_columns(log: Log) -> list[float]:
    s = log.geometry.shape
    assert s is not None
    return [
        1.0,
        log.max_num_seqs * s.vocab_size,
        log.max_num_batched_tokens * s.experts_per_token * s.moe_intermediate_size / log.tensor,
    ]


# Fewer logs than this fit only the sampler's bytes per logit (a median, robust to one odd log),
# keeping the other constants of the reference fit.
FULL_FIT_MIN_LOGS = 8


def fit(
    logs: Sequence[Log], calibration: str, cudagraph_subtracted: bool, reference: MemoryRules | None = None
) -> MemoryRules:
    """The constants of one profile from its logs (PP > 1 logs print rank 0, whose stage lacks the
    LM head: left out of the activation fit)."""
    act = [g for g in logs if g.activation_gib is not None and g.pipeline == 1]
    if reference is not None and len(act) < FULL_FIT_MIN_LOGS:
        ratios = [
            (g.activation_gib * GiB - reference.activation_floor_bytes)
            / (g.max_num_seqs * g.geometry.shape.vocab_size)  # type: ignore[operator, union-attr]
            for g in act
        ]
        single = [g.non_torch_gib for g in logs if g.non_torch_gib is not None and g.tensor == 1]
        parallel = [g.non_torch_gib for g in logs if g.non_torch_gib is not None and g.tensor > 1]
        few = msgspec.structs.replace(
            reference,
            calibration=calibration,
            sampler_bytes_per_logit=round(statistics.median(ratios)),
            non_torch_single_bytes=round(statistics.median(single) * GiB)
            if single
            else reference.non_torch_single_bytes,
            non_torch_parallel_bytes=round(statistics.median(parallel) * GiB)
            if parallel
            else reference.non_torch_parallel_bytes,
            cudagraph_subtracted=cudagraph_subtracted,
        )
        return _with_band(few, logs)
    moe = any(g.geometry.shape and g.geometry.shape.experts_per_token for g in act)
    cols = [(_activation_columns(g) if moe else _activation_columns(g)[:2]) for g in act]
    floor, sampler, *rest = _solve(cols, [g.activation_gib * GiB for g in act])  # type: ignore[operator]
    single = [g.non_torch_gib for g in logs if g.non_torch_gib is not None and g.tensor == 1]
    parallel = [g.non_torch_gib for g in logs if g.non_torch_gib is not None and g.tensor > 1]
    graphs = [g for g in logs if g.cudagraph_gib is not None and g.cudagraph_gib > 0 and not g.enforce_eager]
    g0, g1 = _solve([[1.0, g.layers_on_worker] for g in graphs], [g.cudagraph_gib * GiB for g in graphs])  # type: ignore[operator]
    rules = MemoryRules(
        calibration=calibration,
        activation_floor_bytes=round(floor),
        sampler_bytes_per_logit=round(sampler),
        moe_bytes_per_token_expert_column=round(rest[0]) if rest else 0,
        non_torch_single_bytes=round(statistics.median(single) * GiB) if single else 0,
        non_torch_parallel_bytes=round(statistics.median(parallel) * GiB) if parallel else 0,
        cudagraph_floor_bytes=round(g0),
        cudagraph_bytes_per_layer=round(g1),
        cudagraph_subtracted=cudagraph_subtracted,
        band_low_bytes=0,
        band_high_bytes=0,
    )
    return _with_band(rules, logs)


def _with_band(rules: MemoryRules, logs: Sequence[Log]) -> MemoryRules:
    """The band: how far vLLM's available KV fell from the model's on these logs (the non-KV
    model alone, single-stage: the weights are kvplan's to get right, and exact from the Hub)."""
    errors = [e.available_given_weights for e in evaluate(rules, logs) if e.log.pipeline == 1]
    return msgspec.structs.replace(
        rules,
        band_low_bytes=math.floor(-max(0.0, *errors) * GiB),  # kvplan above vLLM: vLLM may be lower
        band_high_bytes=math.ceil(-min(0.0, *errors) * GiB),
    )


# -- the errors ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Errors:
    """kvplan − vLLM, in GiB, per term (None where the log does not print it)."""

    log: Log
    weights: float
    activation: float | None
    non_torch: float | None
    cudagraph: float | None
    available: float  # with kvplan's own weights: the answer a user gets
    available_given_weights: float  # with the weights the log printed: the non-KV model alone

    @property
    def within_target(self) -> bool:
        return abs(self.available) <= max(0.5, 0.02 * self.log.available_gib)


def predicted_weights(log: Log) -> int:
    b = compute_budget(
        BudgetInput(
            geometry=log.geometry,
            profile=log.profile,
            gpu_memory_bytes=log.total_bytes,
            gpu_memory_utilization=log.utilization,
            tensor_parallel_size=log.tensor,
            pipeline_parallel_size=log.pipeline,
            weight_dtype=log.weight_dtype,
            kv_cache_memory_bytes=1 << 30,
        )
    )
    return b.weights_bytes_per_gpu


def evaluate(rules: MemoryRules, logs: Iterable[Log]) -> list[Errors]:
    out = []
    for g in logs:
        s = g.geometry.shape
        assert s is not None
        act = activation_peak(rules, s, g.max_num_seqs, g.max_num_batched_tokens, g.tensor) / GiB
        nt = non_torch_memory(rules, g.tensor) / GiB
        cg = cudagraph_memory(rules, g.layers_on_worker, g.enforce_eager) / GiB
        requested = math.ceil(g.total_bytes * g.utilization) / GiB
        others = act + nt + (cg if rules.cudagraph_subtracted else 0.0)
        weights = predicted_weights(g) / GiB
        out.append(
            Errors(
                log=g,
                weights=weights - g.weights_gib,
                activation=None if g.activation_gib is None else act - g.activation_gib,
                non_torch=None if g.non_torch_gib is None else nt - g.non_torch_gib,
                cudagraph=None if g.cudagraph_gib is None or g.cudagraph_gib <= 0 else cg - g.cudagraph_gib,
                available=(requested - weights - others) - g.available_gib,
                available_given_weights=(requested - g.weights_gib - others) - g.available_gib,
            )
        )
    return out


# Which logs calibrate which profile, and whether that profile subtracts the graph estimate.
CALIBRATIONS: dict[str, tuple[Callable[[Log], bool], bool]] = {
    # vllm@0.12 (0.12–0.13) and vllm@0.23 (0.23–0.29) share 0.19's memory model, and vllm@0.8
    # (0.8–0.9) 0.10's: their logs calibrate it too.
    "vllm@0.19": (lambda g: g.profile.id in ("vllm@0.12", "vllm@0.19", "vllm@0.23"), False),
    "vllm@0.10": (lambda g: g.profile.id in ("vllm@0.8", "vllm@0.10"), False),
}


def fit_all(logs: Sequence[Log]) -> dict[str, MemoryRules]:
    out: dict[str, MemoryRules] = {}
    for pid, (chosen, subtracted) in CALIBRATIONS.items():
        mine = [g for g in logs if chosen(g)]
        ids = ", ".join(sorted({g.version for g in mine}))
        out[pid] = fit(
            mine, f"{len(mine)} vLLM {ids} start-up logs", subtracted, next(iter(out.values()), None)
        )
    return out


def cross_validate(logs: Sequence[Log]) -> list[Errors]:
    """Leave one model out: each model's logs predicted by a fit without any of them."""
    out: list[Errors] = []
    full = fit_all(logs)
    reference = full[next(iter(CALIBRATIONS))]
    for pid, (chosen, subtracted) in CALIBRATIONS.items():
        mine = [g for g in logs if chosen(g)]
        for model in sorted({g.model for g in mine}):
            rest = [g for g in mine if g.model != model]
            if len(rest) < 2:
                continue
            rules = fit(
                rest,
                f"{pid} without {model}",
                subtracted,
                None if pid == next(iter(CALIBRATIONS)) else reference,
            )
            out.extend(evaluate(rules, [g for g in mine if g.model == model]))
    return out


# -- the report ------------------------------------------------------------------------------------


def _fmt(x: float | None) -> str:
    return "—" if x is None else f"{x:+.2f}"


def _summary(rows: Sequence[Errors], key: Callable[[Errors], float | None]) -> str:
    xs = [abs(v) for r in rows if (v := key(r)) is not None]
    if not xs:
        return "—"
    return f"{statistics.median(xs):.2f} / {max(xs):.2f} ({len(xs)})"


def report(logs: Sequence[Log], skipped: Sequence[tuple[str, str]]) -> str:
    rules = fit_all(logs)
    rows = [e for pid in rules for e in evaluate(rules[pid], [g for g in logs if g.profile.id == pid])]
    cv = cross_validate(logs)
    hit = sum(r.within_target for r in rows)
    cv_hit = sum(r.within_target for r in cv)
    lines = [
        "# The non-KV memory model, calibrated",
        "",
        "Generated by `python -m tests.calibration.memory` from `tests/calibration/data/vllm-memlogs.jsonl`",
        "(real vLLM start-up logs; `../shared/data/vllm-memlogs`). Do not edit by hand.",
        "",
        "What vLLM subtracts besides the weights (`core/engine/nonkv.py`), per engine profile:",
        "",
        "    activation = floor + sampler × max_num_seqs × vocab + moe × max_num_batched_tokens × top_k × moe_intermediate / TP",
        "    non_torch  = single (TP 1) | parallel (TP > 1: NCCL and custom all-reduce buffers; pipeline stages add none)",
        "    cudagraph  = floor + per_layer × decoder layers on the worker (0 with enforce_eager or no graphs;",
        "                 vllm@0.33 and vllm@e740bad scale it by graphs captured ÷ the logs' 102: vllm-rules.md §3.6)",
        "    available  = ceil(total × utilization) − weights − activation − non_torch [− cudagraph where the profile subtracts it]",
        "",
        "The activation terms model vLLM's profiling run (`gpu_model_runner.py` `profile_run`: a dummy forward",
        "pass of `max_num_batched_tokens`, then a sampler pass whose fp32 logits over `max_num_seqs` × vocabulary",
        "dominate the peak); weights are kvplan's own (the checkpoint's quantization from its scheme).",
        "",
        "## Constants",
        "",
        "| profile | calibration | floor | sampler B/logit | moe B | non-torch 1 / N | graphs floor + per layer | graphs subtracted | band |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for pid, r in rules.items():
        lines.append(
            f"| {pid} | {r.calibration} | {r.activation_floor_bytes / GiB:.3f} GiB | {r.sampler_bytes_per_logit} | "
            f"{r.moe_bytes_per_token_expert_column} | {r.non_torch_single_bytes / GiB:.2f} / "
            f"{r.non_torch_parallel_bytes / GiB:.2f} GiB | {r.cudagraph_floor_bytes / GiB:.3f} + "
            f"{r.cudagraph_bytes_per_layer / 2**20:.2f} MiB | {'yes' if r.cudagraph_subtracted else 'no'} | "
            f"{r.band_low_bytes / GiB:+.2f} / {r.band_high_bytes / GiB:+.2f} GiB |"
        )
    lines += [
        "",
        "## Accuracy",
        "",
        f"Available KV within ±0.5 GiB or ±2 % (the larger): **{hit} of {len(rows)}** V1 logs with complete",
        f"inputs ({hit / len(rows):.0%}); leave-one-model-out: **{cv_hit} of {len(cv)}** ({cv_hit / len(cv):.0%}).",
        "",
        "Absolute error in GiB (kvplan − vLLM): median / worst (logs).",
        "",
        "| split | available KV | given the log's weights | weights | activation | non-torch | CUDA graphs |",
        "|---|---|---|---|---|---|---|",
    ]

    def split(name: str, rs: Sequence[Errors]) -> None:
        lines.append(
            f"| {name} | {_summary(rs, lambda e: e.available)} | "
            f"{_summary(rs, lambda e: e.available_given_weights)} | {_summary(rs, lambda e: e.weights)} | "
            f"{_summary(rs, lambda e: e.activation)} | {_summary(rs, lambda e: e.non_torch)} | "
            f"{_summary(rs, lambda e: e.cudagraph)} |"
        )

    split("all (fit)", rows)
    split("leave-one-model-out", cv)
    for v in sorted({r.log.version for r in rows}):
        split(f"vLLM {v}", [r for r in rows if r.log.version == v])
    for tp in sorted({r.log.tensor for r in rows}):
        split(f"TP {tp}", [r for r in rows if r.log.tensor == tp])
    lines += [
        "",
        "## Every log",
        "",
        "Errors in GiB (kvplan − vLLM); `cv` is the leave-one-model-out error of available KV.",
        "",
        "| log | vLLM | model | TP×PP | vLLM's KV | available | cv | weights | activation | non-torch | graphs |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    cv_by_id = {e.log.id: e.available for e in cv}
    for e in sorted(rows, key=lambda e: e.log.id):
        g = e.log
        mark = "" if e.within_target else " ✗"
        lines.append(
            f"| {g.id} | {g.version} | {g.model[:48]} | {g.tensor}×{g.pipeline} | {g.available_gib:.2f} | "
            f"{_fmt(e.available)}{mark} | {_fmt(cv_by_id.get(g.id))} | {_fmt(e.weights)} | "
            f"{_fmt(e.activation)} | {_fmt(e.non_torch)} | {_fmt(e.cudagraph)} |"
        )
    lines += ["", "## Left out", "", "| log | why |", "|---|---|"]
    lines += [f"| {i} | {why} |" for i, why in skipped]
    return "\n".join(lines) + "\n"


def main(argv: Sequence[str]) -> int:
    logs, skipped = load_logs()
    for pid, r in fit_all(logs).items():
        print(pid, r)
    REPORT.write_text(report(logs, skipped))
    print(f"wrote {REPORT}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
