"""The step-time model against measured vLLM runs: `python -m tests.perf.validate_silicon`.

The rows are AIConfigurator 0.12.0's systems/silicon_sample.csv, its vLLM aggregated runs
(tests/perf/data/silicon_vllm_agg.csv: closed loops at a fixed input and output length and a
concurrency, each row a measured mean TTFT and TPOT). They were kept out
of the fit (tests/perf/fit_aic.py reads kernel tables only) and no constant was chosen by them.

Each row the presets can express is simulated as the bench ran it: `concurrency` requests in
flight, each sent when one finishes, all of the row's lengths, ROUNDS × concurrency requests as
AIConfigurator's benchmark template sends (aiperf --num-requests concurrency × 20), on
the model, GPU, tensor parallel size and precision of the row, everything else vLLM 0.33's
defaults. The simulated mean TTFT and TPOT are compared with the measured ones. Writes
docs/validation-steptime.md (per GPU, per model, per concurrency, and the rows left out with the
reason) and presets/data/perf/validation.json (the per-GPU summary every timed answer quotes).
"""

from __future__ import annotations

import csv
import statistics
import sys
from collections import defaultdict
from pathlib import Path
from typing import Any, NamedTuple

import msgspec

from kvplan.core.budget import compute_budget
from kvplan.core.engine.profiles import profile_for_version
from kvplan.core.errors import KvplanError
from kvplan.core.sim.simulate import TimedSimResult
from kvplan.presets.perf import PERF_DIR, VALIDATION, GpuValidation, Validation
from kvplan.presets.registry import load_registry
from kvplan.schemas import BudgetRequest, SimulateRequest
from kvplan.services.answers import simulate_answer
from kvplan.services.scenarios import budget_input

ROOT = Path(__file__).resolve().parents[2]
ROWS = Path(__file__).parent / "data" / "silicon_vllm_agg.csv"
DOC = ROOT / "docs" / "validation-steptime.md"
# AIConfigurator's own benchmark (generator/config/backend_templates/benchmark/bench_run.sh.j2): aiperf
# --concurrency c --num-requests c × 20 (AICONFIGURATOR_BENCH_MULTI_ROUND), isl/osl stddev 0, ignore_eos.
ROUNDS = 20
SOURCE = "silicon_sample.csv of AIConfigurator 0.12.0"

GPUS = {
    "h100_sxm": "h100-sxm-80gb",
    "h200_sxm": "h200-141gb",
    "b200_sxm": "b200-180gb",
    "b300_sxm": "b300-288gb",
}
# Hub model → (kvplan preset, --quantization by the row's precision: "" is the checkpoint's own).
MODELS: dict[str, tuple[str, dict[str, str | None]]] = {
    "meta-llama/Llama-3.1-70B": ("llama-3.1-70b", {"fp8": "fp8", "fp4": "modelopt_fp4", "": None}),
    "Qwen/Qwen3-32B": ("qwen3-32b", {"": None, "fp8": "fp8"}),
    "nvidia/Llama-3.1-8B-Instruct-FP8": ("llama-3.1-8b", {"fp8": "modelopt"}),
    "Qwen/Qwen3-235B-A22B-FP8": ("qwen3-235b-a22b", {"fp8": "fp8"}),
    "openai/gpt-oss-120b": ("gpt-oss-120b", {"fp4": None}),
}
# The tokenizer each model's server ran, and how long it takes a prompt token of the benchmark's
# prompts on a DGX H100's CPU, µs: tests/perf/tokenizer_rates.py, the median of three runs (its
# "all" column; docs/steptime.md has them). InferenceMAX's client sends random-token prompts,
# aiperf windows of its Shakespeare corpus ("text").
TOKENIZERS = {
    "meta-llama/Llama-3.1-70B": "llama3",
    "nvidia/Llama-3.1-8B-Instruct-FP8": "llama3",
    "Qwen/Qwen3-32B": "qwen3",
    "Qwen/Qwen3-235B-A22B-FP8": "qwen3",
    "openai/gpt-oss-120b": "o200k",
}
TOKENIZE_US = {
    ("llama3", "random"): 1.56,
    ("llama3", "text"): 1.33,
    ("o200k", "random"): 2.28,
    ("o200k", "text"): 1.43,
    ("qwen3", "random"): 1.62,
    ("qwen3", "text"): 1.31,
}
THRESHOLDS = {"tpot": 10.0, "ttft": 15.0}  # issue #28: median absolute error, %
# The engine limits AIConfigurator's generator writes for an aggregated vLLM worker
# (aiconfigurator 0.12.0, generator/rule_plugin/vllm.rule, unless preserve_engine_limits):
# max_batch_size 512 (twice the batch from 512 up) → --max-num-seqs; max_num_tokens = that + isl +
# 1500 → --max-num-batched-tokens; max_seq_len = isl + osl + 1500 → --max-model-len.
RULE_SOURCE = "aiconfigurator 0.12.0 generator/rule_plugin/vllm.rule"
# The rows of these source files are InferenceMAX/InferenceX runs (SemiAnalysis): AIConfigurator's
# InferenceX adapter (sdk/config_adapter/inferencex.py) maps its llama70b and gptoss120b, and the
# rows have its grid (ISL/OSL 1k/1k, 1k/8k, 8k/1k; concurrency 4 to 64; TP 1 to 8). Its benchmark
# scripts (benchmarks/*_slurm.sh, *_docker.sh) run `vllm serve … --max-num-batched-tokens 8192
# --no-enable-prefix-caching --async-scheduling --gpu-memory-utilization 0.9 --max-num-seqs CONC`
# and its client, kimbochen/bench_serving's benchmark_serving.py, with --random-range-ratio 0.8
# (lengths uniform over ⌊0.8·L⌋..L, sample_random_requests), --num-prompts CONC × 10,
# --max-concurrency CONC, --request-rate inf, --ignore-eos. NVIDIA's AISimulate replays the same
# rows so (random_range_ratio 0.8, request_count = concurrency × 10).
INFERENCEMAX_SOURCES = frozenset({"2026-03-25.csv", "2026-04-06.csv"})
INFERENCEMAX_RANGE_RATIO = 0.8
INFERENCEMAX_ROUNDS = 10


def inferencemax_script(model: str, system: str, measured: str, isl: int, osl: int) -> dict[str, Any]:
    """What the InferenceX (InferenceMAX) vLLM script in effect when a row was measured (its
    `measured=` date) passed beyond the settings every one of them shares, as far as kvplan
    expresses it. Read in SemiAnalysisAI/InferenceX: the rows' `image=` and perf-changelog.yaml
    date the scripts. Not expressed: the B200 scripts' fusion passes and the vLLM version each
    ran."""
    # H200 and B200 scripts: CALCULATED_MAX_MODEL_LEN (H100's say 10240, the common setting).
    extra_len = 20 if isl == osl == 1024 else 200
    model_len = {} if system == "h100_sxm" else {"max_model_len": isl + osl + extra_len}
    if not measured:
        raise ValueError(f"an InferenceMAX row of {model} on {system} without a measured= date")
    if model == "meta-llama/Llama-3.1-70B":  # 2025-10-29, vLLM v0.10.2: benchmarks/70b_fp{8,4}_*.sh
        if measured >= "2025-11":
            raise ValueError(f"a Llama row measured {measured}: InferenceX ran Llama until November 2025")
        out: dict[str, Any] = {"kv_cache_dtype": "fp8", **model_len}
        if system == "b200_sxm":  # 70b_fp8_b200_docker.sh, 70b_fp4_b200_docker.sh
            out |= {"max_num_seqs": 512, "cudagraph_mode": "full_decode_only"}
        return out
    if model != "openai/gpt-oss-120b" or measured < "2026":
        return {}  # gpt-oss rows of 2025: their scripts were not found
    # 2026 (H100, H200: 2026-03-27, v0.18.0; B200: 2026-02-25, v0.15.1):
    # benchmarks/single_node/gptoss_fp4_{h100,h200,b200}.sh
    out = {"max_cudagraph_capture_size": 2048, **model_len}
    if system == "b200_sxm":  # and VLLM_USE_FLASHINFER_MOE_MXFP4_MXFP8=1: MXFP8 activations
        return out | {"kv_cache_dtype": "fp8", "max_num_seqs": 512, "flashinfer_moe_mxfp4_mxfp8": True}
    # Hopper: VLLM_MXFP4_USE_MARLIN=1 (from InferenceX PR #327, vLLM 0.13): vLLM (fused_moe/oracle/
    # mxfp4.py) runs the MXFP4 experts on Marlin, not its default OAI Triton kernel; vLLM 0.33
    # spells it --moe-backend marlin.
    return out | {"moe_backend": "marlin"}


def async_by_default(version: str) -> bool:
    """vLLM's default for async scheduling in the version a row names, as the engine profile that
    governs the version says it (on from 0.14.0, vLLM PR #27614: `vllm@0.12` and older off); on
    (0.33's) when unnamed. AIConfigurator's generator passes no --async-scheduling, so its own
    runs had the default."""
    profile = profile_for_version(version) if version else None
    return True if profile is None else profile.async_scheduling_default


class Row(NamedTuple):
    id: str
    gpu: str
    system: str
    model: str
    preset: str
    quantization: str | None
    tp: int
    isl: int
    osl: int
    concurrency: int
    ttft_ms: float
    tpot_ms: float
    source: str  # the measurement's source file or dump (silicon_data_source, first field)
    measured: str  # when (silicon_data_source's measured=, an ISO date; "" if not given)
    version: str = ""  # the vLLM it ran (backend_version; "" if not given)

    @property
    def inferencemax(self) -> bool:
        return self.source in INFERENCEMAX_SOURCES

    def engine_settings(self) -> dict[str, Any]:
        """The vLLM settings the row's deployment had: InferenceMAX's scripts', or the limits
        AIConfigurator's generator writes for the rows its own benchmark measured."""
        if self.inferencemax:
            return {
                "async_scheduling": True,  # the scripts pass --async-scheduling (or ran vLLM ≥ 0.14)
                "max_num_seqs": self.concurrency,
                "max_num_batched_tokens": 8192,
                "enable_prefix_caching": False,
                "gpu_memory_utilization": 0.9,
                "max_model_len": max(10240, self.isl + self.osl),
                **inferencemax_script(self.model, self.system, self.measured, self.isl, self.osl),
            }
        seqs = 512 if self.concurrency < 512 else 2 * self.concurrency
        return {
            "async_scheduling": async_by_default(self.version),
            "max_num_seqs": seqs,
            "max_num_batched_tokens": seqs + self.isl + 1500,
            "max_model_len": self.isl + self.osl + 1500,
        }

    def engine(self) -> str:
        """The vLLM the row ran, as `engine` takes it: its backend_version; else the Llama rows'
        scripts' (v0.10.2, inferencemax_script); else, for the gpt-oss rows of 2025 (no version
        given), the release current at their date, 0.11 (an assumption; every vLLM of those months,
        0.10.2 to 0.12.0, had the same micro-batching tokenizer)."""
        if self.version:
            return self.version
        if self.model == "meta-llama/Llama-3.1-70B":
            return "0.10.2"
        return "0.11"

    def tokenize_us_per_token(self) -> float:
        """How long the server's tokenizer took a token of the prompts the row's client sent."""
        return TOKENIZE_US[(TOKENIZERS[self.model], "random" if self.inferencemax else "text")]

    def workload(self) -> dict[str, Any]:
        """The closed loop the row's benchmark client ran (see INFERENCEMAX_SOURCES, ROUNDS)."""
        if self.inferencemax:
            r = INFERENCEMAX_RANGE_RATIO
            return {
                "count": INFERENCEMAX_ROUNDS * self.concurrency,
                "concurrency": self.concurrency,
                "prompt": {"kind": "uniform", "low": int(self.isl * r), "high": self.isl},
                "output": {"kind": "uniform", "low": int(self.osl * r), "high": self.osl},
            }
        return {
            "count": ROUNDS * self.concurrency,
            "concurrency": self.concurrency,
            "prompt": {"kind": "fixed", "value": self.isl},
            "output": {"kind": "fixed", "value": self.osl},
        }


class Outcome(NamedTuple):
    row: Row
    ttft_ms: float
    tpot_ms: float

    @property
    def ttft_err(self) -> float:
        return (self.ttft_ms - self.row.ttft_ms) / self.row.ttft_ms * 100

    @property
    def tpot_err(self) -> float:
        return (self.tpot_ms - self.row.tpot_ms) / self.row.tpot_ms * 100


def read_rows() -> tuple[list[Row], list[tuple[dict[str, str], str]]]:
    """The rows the presets express, and the others with the reason they are left out."""
    rows: list[Row] = []
    out: list[tuple[dict[str, str], str]] = []
    with ROWS.open() as f:
        table = list(csv.DictReader(f))
    for r in table:
        model = MODELS.get(r["model_path"])
        reason = None
        if r["system"] not in GPUS:
            reason = f"no kvplan GPU preset for {r['system']}"
        elif model is None:
            reason = "no kvplan preset for this model"
        elif r["precision"] not in model[1]:
            reason = f"precision {r['precision'] or 'bf16'} not expressed for this model"
        elif (r["attention_dp_size"] or "1") != "1":
            reason = "attention data parallel (one engine per DP rank) is not in the step-time model"
        elif (r["moe_ep_size"] or "1") not in ("0", "1"):
            reason = "expert parallel is not in the step-time model"
        elif (r["pp_size"] or "1") != "1":
            reason = "pipeline parallel micro-batching is not in the step-time model"
        if reason is not None or model is None:
            out.append((r, reason or ""))
            continue
        rows.append(
            Row(
                id=r["id"],
                gpu=GPUS[r["system"]],
                system=r["system"],
                model=r["model_path"],
                preset=model[0],
                quantization=model[1][r["precision"]],
                tp=int(r["tp_size"]),
                isl=int(r["isl"]),
                osl=int(r["osl"]),
                concurrency=int(r["batch_size"]),
                ttft_ms=float(r["silicon_ttft_ms"]),
                tpot_ms=float(r["silicon_tpot_ms"]),
                source=_source(r["silicon_data_source"]),
                measured=_field(r["silicon_data_source"], "measured"),
                version=r["backend_version"],
            )
        )
    return rows, out


def _field(cell: str, name: str) -> str:
    """`…; measured=2026-03-27T00:00:00.000Z; …` → `2026-03-27T00:00:00.000Z` ("" if absent)."""
    for part in cell.split(";"):
        key, _, value = part.strip().partition("=")
        if key == name:
            return value
    return ""


def _source(cell: str) -> str:
    """`source_file=/a/b/qwen3_32b.csv; model=…` → `qwen3_32b.csv`; `db-dump/2026-04-27; …` as is."""
    first = cell.split(";")[0].strip()
    return first.removeprefix("source_file=").rsplit("/", 1)[-1] if "source_file=" in first else first


def hybrid_pool(registry: Any, body: dict[str, Any]) -> tuple[int, int] | None:
    """A hybrid model's pool (gpt-oss: full and sliding-window groups), given as num_blocks and
    block_size from its budget, the path POST /v1/simulate states for hybrids; None for a model of
    one KV-cache group, whose budget the simulation computes itself. The pool holds every
    group's blocks: the simulator counts the full-attention ones only, so it sees a little more
    room than vLLM (a sliding group holds ≈ window ÷ block_size + 1 blocks a request)."""
    fields = {k: v for k, v in body.items() if k in BudgetRequest.__struct_fields__}
    b = compute_budget(budget_input(registry, msgspec.convert(fields, BudgetRequest))[0])
    if len(b.groups) == 1 and b.groups[0].groups == 1 and b.groups[0].block_size == b.block_size:
        return None
    return (b.num_blocks, b.block_size) if b.num_blocks >= 2 else None


def simulate_row(registry: Any, row: Row) -> Outcome:
    body: dict[str, Any] = {
        "model": row.preset,
        "gpu": row.gpu,
        "tensor_parallel_size": row.tp,
        "engine": row.engine(),
        **row.engine_settings(),
        "tokenize_us_per_token": row.tokenize_us_per_token(),
        "workload": {"generator": row.workload()},
    }
    if row.quantization is not None:
        body["quantization"] = row.quantization
    pool = hybrid_pool(registry, body)
    if pool is not None:
        body["num_blocks"], body["block_size"] = pool
    req = msgspec.convert(body, SimulateRequest)
    result, _ = simulate_answer(registry, req)
    assert isinstance(result, TimedSimResult)
    return Outcome(row, result.latency.ttft_ms.mean, result.latency.tpot_ms.mean)


def run(rows: list[Row]) -> tuple[list[Outcome], list[tuple[Row, str]]]:
    registry = load_registry()
    done: list[Outcome] = []
    failed: list[tuple[Row, str]] = []
    for i, row in enumerate(rows):
        try:
            done.append(simulate_row(registry, row))
        except KvplanError as e:
            failed.append((row, str(e)))
        if i % 50 == 0:
            print(f"{i}/{len(rows)}", file=sys.stderr)
    return done, failed


def _median_abs(values: list[float]) -> float:
    return statistics.median(abs(v) for v in values) if values else float("nan")


def summary(done: list[Outcome]) -> Validation:
    by_gpu: dict[str, list[Outcome]] = defaultdict(list)
    for o in done:
        by_gpu[o.row.system].append(o)
    return Validation(
        source=SOURCE,
        gpus={
            system: GpuValidation(
                rows=len(os),
                tpot_median_abs_pct=round(_median_abs([o.tpot_err for o in os]), 1),
                ttft_median_abs_pct=round(_median_abs([o.ttft_err for o in os]), 1),
                tpot_median_signed_pct=round(statistics.median(o.tpot_err for o in os), 1),
                ttft_median_signed_pct=round(statistics.median(o.ttft_err for o in os), 1),
            )
            for system, os in sorted(by_gpu.items())
        },
    )


def _table(title: str, groups: dict[Any, list[Outcome]], key_names: tuple[str, ...]) -> list[str]:
    head = " | ".join(key_names)
    lines = [
        f"### {title}",
        "",
        f"| {head} | rows | TPOT median abs % | TTFT median abs % | TPOT bias % | TTFT bias % |",
    ]
    lines.append("|" + "---|" * (len(key_names) + 5))
    for key, os in sorted(groups.items()):
        cells = key if isinstance(key, tuple) else (key,)
        lines.append(
            "| "
            + " | ".join(str(c) for c in cells)
            + f" | {len(os)} | {_median_abs([o.tpot_err for o in os]):.1f}"
            + f" | {_median_abs([o.ttft_err for o in os]):.1f}"
            + f" | {statistics.median(o.tpot_err for o in os):+.1f}"
            + f" | {statistics.median(o.ttft_err for o in os):+.1f} |"
        )
    return [*lines, ""]


def document(
    done: list[Outcome], left: list[tuple[dict[str, str], str]], failed: list[tuple[Row, str]]
) -> str:
    tpot, ttft = _median_abs([o.tpot_err for o in done]), _median_abs([o.ttft_err for o in done])
    by_gpu: dict[Any, list[Outcome]] = defaultdict(list)
    by_model: dict[Any, list[Outcome]] = defaultdict(list)
    by_conc: dict[Any, list[Outcome]] = defaultdict(list)
    by_source: dict[Any, list[Outcome]] = defaultdict(list)
    for o in done:
        by_gpu[o.row.system].append(o)
        by_model[(o.row.system, o.row.model, o.row.quantization or "own", o.row.tp)].append(o)
        by_conc[(o.row.system, o.row.concurrency)].append(o)
        by_source[(o.row.source, o.row.model)].append(o)
    reasons: dict[str, int] = defaultdict(int)
    for _, reason in left:
        reasons[reason] += 1
    for _, reason in failed:
        reasons[f"refused: {reason}"] += 1
    out = [
        "# The step-time model against measured vLLM runs",
        "",
        "Generated by `python -m tests.perf.validate_silicon`; do not edit. The measured runs are the vLLM",
        f"aggregated rows of {SOURCE} (Apache-2.0, NVIDIA), kept out of the step-time fit: no",
        "coefficient or prior was fitted on them. Six choices were made after seeing their errors, each",
        "the measuring tool's own script or default, or the defaults of the vLLM a row names, rather than",
        "a fitted value: the engine settings, the lengths and the MoE kernels below (Marlin on Hopper,",
        "MXFP8 activations on B200), the MoE tables' routing, and async scheduling off for the rows of",
        "vLLM 0.12. A seventh, the request path outside the engine (5 ms), was looked for because the",
        "simulated TTFT was the shorter on most rows; its value is public runs' at concurrency 1, not",
        "these rows'. An eighth, the tokenizer's rate on each benchmark's prompts, was measured for the",
        "same reason: its values are tokenizer_rates.py's, timed on the benchmarks' own prompt",
        "generators, not fitted here. A ninth, each row's vLLM as its engine profile (`engine`), which",
        "brings that version's micro-batching tokenizer (2 ms wait, vLLM 0.10–0.22), was made for the",
        "same reason; the wait and the cost of one call on many prompts are vLLM's code and its",
        "maintainers' measurement (PR #45759), not these rows' (docs/steptime.md says which moved what,",
        "and how each was chosen).",
        "Each row is simulated as it was measured, on its GPU,",
        "model, tensor parallel size and precision, by the benchmark that measured it:",
        "",
        "- **InferenceMAX rows** (source files 2026-03-25.csv and 2026-04-06.csv: Llama-3.1-70B and",
        "  gpt-oss-120b; AIConfigurator's InferenceX adapter maps these models, and the rows have",
        "  InferenceMAX's grid): its scripts' `vllm serve` settings (`--max-num-batched-tokens 8192",
        "  --no-enable-prefix-caching --gpu-memory-utilization 0.9 --max-num-seqs CONC`) and its client,",
        "  `benchmark_serving.py --random-range-ratio 0.8 --num-prompts CONC×10 --max-concurrency CONC",
        "  --request-rate inf --ignore-eos`: a closed loop of 10 × concurrency requests whose lengths are",
        "  uniform over ⌊0.8·L⌋..L (kimbochen/bench_serving's sample_random_requests), as NVIDIA's",
        "  AISimulate replays these rows. And what the script in effect when the row was measured",
        "  (the row's `measured=` date) added (`inferencemax_script`): the Llama rows (2025-10-29,",
        "  `benchmarks/70b_fp{8,4}_*.sh`) an fp8 KV cache, on H200 and B200 `--max-model-len`",
        "  isl + osl + 20 (1k/1k) or + 200, and on B200 `--max-num-seqs 512` and `cudagraph_mode",
        "  FULL_DECODE_ONLY`; the gpt-oss rows of 2026 (`benchmarks/single_node/gptoss_fp4_*.sh`)",
        "  `--max-cudagraph-capture-size 2048`, that `--max-model-len` on H200 and B200, an fp8 KV",
        "  cache, `--max-num-seqs 512` and `VLLM_USE_FLASHINFER_MOE_MXFP4_MXFP8=1` (field",
        "  `flashinfer_moe_mxfp4_mxfp8`: MXFP8 activations) on B200, and on Hopper",
        "  `VLLM_MXFP4_USE_MARLIN=1` (`--moe-backend marlin`, vLLM 0.33's spelling; InferenceX added it",
        "  in January 2026, so its gpt-oss rows of 2025, whose scripts were not found, keep the settings",
        "  above only). Not simulated: the B200 scripts' fusion passes. The server tokenizes the",
        f"  client's random-token prompts at {TOKENIZE_US['llama3', 'random']} µs a token (Llama-3) or "
        f"{TOKENIZE_US['o200k', 'random']} (gpt-oss's o200k).",
        f"- **The others** (AIConfigurator's own runs): its benchmark template, aiperf with {ROUNDS} ×",
        "  concurrency requests of the row's fixed lengths (isl/osl stddev 0, ignore_eos; its 2 ×",
        "  concurrency warm-up requests are not simulated apart: identical requests in a closed loop",
        "  repeat the same waves), and the engine limits AIConfigurator's generator writes for an",
        f"  aggregated vLLM worker ({RULE_SOURCE}): `--max-num-seqs` 512 (twice the",
        "  concurrency from 512 up), `--max-num-batched-tokens` = that + isl + 1500, `--max-model-len` =",
        "  isl + osl + 1500 (an assumption: the rows carry no engine settings). The generator passes no",
        "  `--async-scheduling`, and the rows name vLLM 0.12.0, whose default left it off (vLLM turned it",
        "  on by default in 0.14.0, PR #27614): these rows run without it (`async_by_default`). The",
        "  server tokenizes aiperf's prompts, windows of its Shakespeare corpus, at "
        f"{TOKENIZE_US['qwen3', 'text']} µs a token",
        f"  (Qwen3) or {TOKENIZE_US['llama3', 'text']} (Llama-3).",
        "",
        "Each row runs under the engine profile of the vLLM it ran (`Row.engine`: the row's",
        "backend_version; the Llama rows' scripts' v0.10.2; 0.11, the release of their months, for the",
        "gpt-oss rows of 2025 that name none): its rules and defaults for everything not set above, and",
        "its server's micro-batching tokenizer, which every one of these versions had. The request path",
        "outside the engine, the server's tokenizer and async scheduling's step-ahead are simulated",
        '(docs/steptime.md, "What a benchmark run adds"); a hybrid model (gpt-oss) gets its pool as',
        "num_blocks and block_size from its budget.",
        "",
        f"**All {len(done)} rows: median absolute error {tpot:.1f} % for mean TPOT (target ≤ "
        f"{THRESHOLDS['tpot']:.0f} %), {ttft:.1f} % for mean TTFT (target ≤ {THRESHOLDS['ttft']:.0f} %).**",
        "Bias is the median signed error (positive: the model is slower than the silicon): over all rows "
        f"{statistics.median(o.tpot_err for o in done):+.1f} % for TPOT, "
        f"{statistics.median(o.ttft_err for o in done):+.1f} % for TTFT.",
        "",
        *_table("Per GPU", by_gpu, ("GPU",)),
        *_table("Per GPU and model", by_model, ("GPU", "model", "quantization", "TP")),
        *_table("Per GPU and concurrency", by_conc, ("GPU", "concurrency")),
        *_table("Per measurement source and model", by_source, ("source", "model")),
        "### Rows left out",
        "",
        "| reason | rows |",
        "|---|---|",
        *[f"| {reason} | {n} |" for reason, n in sorted(reasons.items(), key=lambda x: -x[1])],
        "",
        "### Every row",
        "",
        "| id | sim TTFT ms | silicon TTFT ms | err % | sim TPOT ms | silicon TPOT ms | err % |",
        "|---|---|---|---|---|---|---|",
        *[
            f"| {o.row.id} | {o.ttft_ms:,.1f} | {o.row.ttft_ms:,.1f} | {o.ttft_err:+.1f} | {o.tpot_ms:.2f} | "
            f"{o.row.tpot_ms:.2f} | {o.tpot_err:+.1f} |"
            for o in sorted(done, key=lambda o: o.row.id)
        ],
        "",
    ]
    return "\n".join(out)


def main() -> None:
    rows, left = read_rows()
    done, failed = run(rows)
    DOC.write_text(document(done, left, failed))
    (PERF_DIR / VALIDATION).write_bytes(
        msgspec.json.format(msgspec.json.encode(summary(done)), indent=2) + b"\n"
    )
    tpot, ttft = _median_abs([o.tpot_err for o in done]), _median_abs([o.ttft_err for o in done])
    print(
        f"{len(done)} rows; TPOT median |err| {tpot:.1f} %, TTFT {ttft:.1f} %; "
        f"left out {len(left)}, refused {len(failed)}"
    )


if __name__ == "__main__":
    main()
