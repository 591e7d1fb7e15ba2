"""Reading what a vLLM engine printed at start-up: every figure it states about its memory, its
blocks and its settings, each with the line it came from (docs/reconcile.md).

Logs from vLLM 0.6 to 0.33, V0 and V1, raw or as people paste them: log prefixes
(`INFO 11-30 12:00:01 [gpu_worker.py:298]`), process tags (`(EngineCore_DP0 pid=123)`,
`(Worker_TP1 pid=…)`), container timestamps and ANSI colours are skipped, figures are found
anywhere in a line (a paste may join several log lines into one).

Bounded: a line is read up to MAX_LINE_CHARS, a log up to MAX_LOG_LINES lines; every pattern
starts with literal text and has no nested repetition, so reading is linear in the input."""

from __future__ import annotations

import ast
import re
from collections.abc import Callable, Iterator

import msgspec

from ..engine.command import Command, read_command
from ..errors import InvalidInput, WorkStopped
from ..limits import (
    MAX_ARGS_CHARS,
    MAX_ARGS_TRIES,
    MAX_FIGURES,
    MAX_FIGURES_PER_LINE,
    MAX_FIGURES_PER_NAME,
    MAX_LINE_CHARS,
    MAX_LOG_LINES,
)


class Figure(msgspec.Struct, frozen=True, kw_only=True):
    """One figure the log states. `decimals` is how many the log printed (its rounding)."""

    name: str
    value: float | int | str | bool
    unit: str = ""
    decimals: int = 0
    line: int  # 1-based line number in what was sent
    text: str  # the line, cleaned of colours, at most 300 characters
    rank: str = ""  # the worker that printed it, where the line says (Worker_TP1, …)


def rank_order(rank: str) -> int:
    """0 for rank 0 (every number in the tag is 0), 1 for the driver or engine (no tag, or no
    number), 2 for any other worker: the figure a log's reader wants first is rank 0's."""
    numbers = re.findall(r"\d+", rank)
    if not rank or (not numbers and rank != "VllmWorkerProcess"):
        return 1
    return 0 if numbers and all(int(n) == 0 for n in numbers) else 2


class EngineLog(msgspec.Struct, frozen=True, kw_only=True):
    figures: tuple[Figure, ...]
    lines: int
    vllm_lines: int  # lines that looked like vLLM's
    figures_dropped: int = 0  # past the caps (MAX_FIGURES_PER_LINE, _PER_NAME, MAX_FIGURES)
    # The engine's command (`vllm serve …` or `non-default args`) read whole, and its line: every
    # flag the engine ran with, as /v1/plan reads it.
    command: Command | None = None
    command_line: int = 0

    def first(self, name: str) -> Figure | None:
        """The figure as rank 0 states it, else the driver, else the first worker to print it."""
        found = [f for f in self.figures if f.name == name]
        return min(found, key=lambda f: rank_order(f.rank)) if found else None

    def value(self, name: str) -> float | int | str | bool | None:
        f = self.first(name)
        return None if f is None else f.value


_ANSI = re.compile(r"\x1b\[[0-9;]{0,20}[A-Za-z]")
_RANK = re.compile(
    r"\((EngineCore(?:_DP\d{1,4}|_\d{1,4})?|Worker(?:_[A-Z]{2}\d{1,4}){1,3}|"
    r"VllmWorker(?: [A-Za-z]{2}\d{1,4}| rank=\d{1,4})?|VllmWorkerProcess|RayWorkerWrapper)"
    r"(?: pid=\d{1,10})?(?:, ip=[\d.]{7,15})?\)"
)
# Cheap first test: a line without any of these says nothing kvplan reads.
_INTERESTING = re.compile(
    r"GiB|GB|blocks|concurrency|KV cache|non-default args|LLM engine|vllm serve|version|"
    r"max_num_batched_tokens|max model len|--[a-z]|vLLM"
)

_N = r"(-?\d[\d,]{0,20}(?:\.\d{1,12})?)"  # a number as vLLM prints it, thousands separated or not
_G = _N + r" ?(GiB|GB)"

# (name, pattern, unit): the first group is the value.
_PATTERNS: tuple[tuple[str, re.Pattern[str], str], ...] = tuple(
    (name, re.compile(pattern), unit)
    for name, pattern, unit in (
        ("weights_gib", r"Model loading took:? " + _G, "GiB"),
        ("weights_gib", r"Loading model weights took " + _G, "GiB"),
        ("weights_gib", r"model weights take " + _G, "GiB"),
        ("weights_gib", r"weights memory: " + _G, "GiB"),
        ("non_torch_gib", r"non_torch_memory takes " + _G, "GiB"),
        ("non_torch_gib", r"non_torch_memory " + _G, "GiB"),
        ("non_torch_gib", r"non-torch forward increase memory: " + _G, "GiB"),
        ("non_torch_gib", r"non_torch_memory=" + _G, "GiB"),
        ("activation_peak_gib", r"PyTorch activation peak memory takes " + _G, "GiB"),
        ("activation_peak_gib", r"PyTorch activation peak memory " + _G, "GiB"),
        ("activation_peak_gib", r"torch peak memory increase: " + _G, "GiB"),
        ("non_kv_gib", r"Total non KV cache memory: " + _G, "GiB"),
        ("available_kv_gib", r"the rest of the memory reserved for KV Cache is " + _G, "GiB"),
        ("available_kv_gib", r"Available KV cache memory: " + _G, "GiB"),
        ("available_kv_gib", r"available_kv_cache_memory " + _G, "GiB"),
        ("available_kv_gib", r" kv_cache_size=" + _G, "GiB"),
        ("requested_gib", r"Requested memory: [\d.]{1,12} \(util\), " + _G, "GiB"),
        ("requested_gib", r"gpu_memory_utilization \([\d.]{1,12}\) = " + _G, "GiB"),
        ("requested_gib", r"the current vLLM instance can use " + _G, "GiB"),
        ("gpu_memory_utilization", r"Requested memory: " + _N + r" \(util\)", ""),
        ("gpu_memory_utilization", r"gpu_memory_utilization \(" + _N + r"\)", ""),
        ("gpu_memory_utilization", r"gpu_memory_utilization[ =]" + _N + r"\b", ""),
        ("gpu_total_gib", r"total_gpu_memory \(" + _G, "GiB"),
        ("gpu_total_gib", r"total_gpu_memory[ =]" + _G, "GiB"),
        ("gpu_total_gib", r"Free memory on device:? [\d.]{1,12} ?/ ?" + _G, "GiB"),
        ("gpu_kv_cache_tokens", r"GPU KV cache size: " + _N + r" tokens", "tokens"),
        ("max_concurrency", r"Maximum concurrency for [\d,]{1,12} tokens per request: " + _N + r"x", "×"),
        (
            "concurrency_tokens_per_request",
            r"Maximum concurrency for " + _N + r" tokens per request",
            "tokens",
        ),
        ("num_gpu_blocks", r"# (?:GPU|CUDA|cuda|gpu) blocks: " + _N, "blocks"),
        ("cudagraph_gib", r"Graph capturing finished in [\d.]{1,12} secs?, took " + _G, "GiB"),
        ("cudagraph_gib", r"CUDA graph pool memory: " + _G + r" \(actual\)", "GiB"),
        ("cudagraph_estimate_gib", r"Estimated CUDA graph memory: " + _G, "GiB"),
        ("max_num_batched_tokens", r"max_num_batched_tokens=" + _N, "tokens"),
        ("max_model_len", r"Using max model len " + _N, "tokens"),
        ("max_model_len", r"max_seq_len=" + _N, "tokens"),
        ("block_size", r"block_size=" + _N, "tokens"),
        ("tensor_parallel_size", r"tensor_parallel_size=" + _N, ""),
        ("pipeline_parallel_size", r"pipeline_parallel_size=" + _N, ""),
        ("data_parallel_size", r"data_parallel_size=" + _N, ""),
        ("version", r"vLLM API server version v?(\d{1,3}\.\d{1,3}[\w.+-]{0,40})", ""),
        ("version", r"Initializing an? (?:V[01] )?LLM engine \(v(\d{1,3}\.\d{1,3}[\w.+-]{0,40})\)", ""),
        ("version", r"vLLM:? v?(\d{1,3}\.\d{1,3}\.\d{1,3}[\w.+-]{0,40})", ""),
        ("engine", r"Initializing an? (V[01]) LLM engine", ""),
        ("model", r"vllm serve (?!-)(\S{1,300})", ""),
        ("model", r"Starting to load model (\S{1,300}?)\.{3}", ""),
        ("model", r"with config: model='([^']{1,300})'", ""),
        ("kv_cache_dtype", r"kv_cache_dtype=(\w{1,20})", ""),
        ("dtype", r"dtype=torch\.(\w{1,20})", ""),
        ("enforce_eager", r"enforce_eager=(True|False)", ""),
    )
)
_ARGS = re.compile(r"non-default args: \{")
_FLAG = re.compile(r"--([a-z][a-z-]{1,40})(?:[ =]([^\s-][^\s]{0,200}))?")
# Engine arguments as vLLM names them (dict keys and --flags alike), and the figure each gives.
_ARG_FIGURES: dict[str, tuple[str, str]] = {
    "model": ("model", ""),
    "tensor_parallel_size": ("tensor_parallel_size", ""),
    "pipeline_parallel_size": ("pipeline_parallel_size", ""),
    "data_parallel_size": ("data_parallel_size", ""),
    "max_model_len": ("max_model_len", "tokens"),
    "max_num_seqs": ("max_num_seqs", ""),
    "max_num_batched_tokens": ("max_num_batched_tokens", "tokens"),
    "gpu_memory_utilization": ("gpu_memory_utilization", ""),
    "block_size": ("block_size", "tokens"),
    "enforce_eager": ("enforce_eager", ""),
    "kv_cache_dtype": ("kv_cache_dtype", ""),
    "dtype": ("dtype", ""),
    "quantization": ("quantization", ""),
    "enable_prefix_caching": ("enable_prefix_caching", ""),
}
_INT_FIGURES = frozenset(
    {"gpu_kv_cache_tokens", "num_gpu_blocks", "concurrency_tokens_per_request", "max_num_batched_tokens",
     "max_model_len", "block_size", "tensor_parallel_size", "pipeline_parallel_size", "data_parallel_size",
     "max_num_seqs"}
)  # fmt: skip


def _number(text: str, name: str) -> tuple[float | int, int] | None:
    """A printed number and its decimals; None when it is not one (`10k`)."""
    plain = text.replace(",", "")
    try:
        if name in _INT_FIGURES:
            return int(plain), 0
        value = float(plain)
    except ValueError:
        return None
    return value, len(plain.partition(".")[2])


def _arg_value(name: str, raw: object) -> tuple[float | int | str | bool, int] | None:
    if name in ("enforce_eager", "enable_prefix_caching"):
        if isinstance(raw, bool):
            return raw, 0
        return (str(raw).lower() in ("", "true", "1")), 0
    if name in ("model", "kv_cache_dtype", "dtype", "quantization"):
        return str(raw)[:300], 0
    if isinstance(raw, bool):
        return None
    if isinstance(raw, (int, float)):
        raw = str(raw)
    return _number(str(raw), name) if isinstance(raw, str) else None


def _clean(line: str) -> tuple[str, str]:
    """The line without colours, and the worker tag it carries."""
    line = _ANSI.sub("", line[:MAX_LINE_CHARS])
    m = _RANK.search(line)
    return line, (m.group(1).replace(" ", "_") if m else "")


def _args_dict(line: str, start: int, should_stop: Callable[[], bool]) -> object:
    """The printed dict that opens at `start`: each closing brace from the left is tried (a paste
    may put more braces after it on the same line), within MAX_ARGS_CHARS and MAX_ARGS_TRIES.
    should_stop() is asked before each try but the first: one line can cost MAX_ARGS_TRIES parses of
    MAX_ARGS_CHARS (0.3 s), and a log of such lines minutes, between two per-line checks."""
    end, tries = start, 0
    while tries < MAX_ARGS_TRIES:
        end = line.find("}", end + 1, start + MAX_ARGS_CHARS)
        if end == -1:
            return None
        if tries and should_stop():  # a dict vLLM printed parses at its first try
            raise WorkStopped(f"stopped reading the engine arguments, try {tries + 1}")
        tries += 1
        try:
            return ast.literal_eval(line[start : end + 1])
        except (ValueError, SyntaxError, MemoryError, RecursionError, TypeError):
            continue
    return None


def _from_command(line: str, add: Callable[..., None]) -> Command | None:
    """The engine arguments of a `non-default args` or `vllm serve` line, read by the one command
    parser /v1/plan uses (core/engine/command.py); None when it cannot read the line whole (a
    paste cut short, an older engine's flag), which the tolerant readers below then try."""
    at = max(line.find("non-default args:"), line.find("vllm serve"))
    if at < 0:
        return None
    try:
        command = read_command(line[at:])
    except InvalidInput:
        return None
    if command.model is not None:
        add("model", command.model)
    for f in command.flags:
        key = f.option[2:].replace("-", "_")
        if key in _ARG_FIGURES and f.value is not None:
            add(key, f.value)
    return command


def _from_args(line: str, add: Callable[..., None], should_stop: Callable[[], bool]) -> Command | None:
    command = _from_command(line, add)
    if command is not None:
        return command
    m = _ARGS.search(line)
    if m is not None:
        args = _args_dict(line, m.end() - 1, should_stop)
        if isinstance(args, dict):
            for key, raw in args.items():
                if isinstance(key, str) and key in _ARG_FIGURES:
                    add(key, raw)
    if "--" in line:
        for fm in _FLAG.finditer(line):
            key = fm.group(1).replace("-", "_")
            if key in _ARG_FIGURES:
                add(key, fm.group(2) if fm.group(2) is not None else "")
    return None


# should_stop() is asked once per this many lines: a line of a start-up log is read in ~3 µs
# (a line vLLM prints at start-up, every pattern tried), ~0.2 µs when it is not one, so ~3 ms apart.
STOP_CHECK_LINES = 1024


def read_log(text: str, should_stop: Callable[[], bool] = lambda: False) -> EngineLog:
    """Every figure the log states, in the order printed. InvalidInput (field `log`) when no line
    looks like vLLM's."""
    figures: list[Figure] = []
    per_name: dict[str, int] = {}
    count = vllm_lines = dropped = command_line = 0
    command: Command | None = None
    for count, raw in enumerate(_lines(text), start=1):
        if count > MAX_LOG_LINES:
            raise InvalidInput("log", f"more than {MAX_LOG_LINES:,} lines: send the start-up part")
        if count % STOP_CHECK_LINES == 0 and should_stop():  # past the deadline: no answer from half a log
            raise WorkStopped(f"{count:,} lines read")
        if not _INTERESTING.search(raw[:MAX_LINE_CHARS]):
            continue
        line, rank = _clean(raw)
        shown = line.strip()[:300]
        before = len(figures)

        def add(
            name: str, raw_value: object, _line: int = count, _shown: str = shown, _rank: str = rank
        ) -> None:
            parsed = _arg_value(name, raw_value)
            if parsed is not None:
                unit = _ARG_FIGURES.get(name, ("", ""))[1]
                figures.append(Figure(name=name, value=parsed[0], unit=unit, decimals=parsed[1],
                                      line=_line, text=_shown, rank=_rank))  # fmt: skip

        for name, pattern, unit in _PATTERNS:
            for m in pattern.finditer(line):
                value = m.group(1)
                if name in ("version", "model", "kv_cache_dtype", "dtype", "engine"):
                    figures.append(Figure(name=name, value=value, line=count, text=shown, rank=rank))
                elif name == "enforce_eager":
                    figures.append(
                        Figure(name=name, value=value == "True", line=count, text=shown, rank=rank)
                    )
                else:
                    parsed = _number(value, name)
                    if parsed is not None:
                        figures.append(Figure(name=name, value=parsed[0], unit=unit, decimals=parsed[1],
                                              line=count, text=shown, rank=rank))  # fmt: skip
        read = _from_args(line, add, should_stop)
        if read is not None:
            command, command_line = read, count
        if len(figures) > before:
            vllm_lines += 1
            kept: list[Figure] = []
            for f in figures[before:]:
                n = per_name.get(f.name, 0)
                if (
                    len(kept) < MAX_FIGURES_PER_LINE
                    and n < MAX_FIGURES_PER_NAME
                    and before + len(kept) < MAX_FIGURES
                ):
                    per_name[f.name] = n + 1
                    kept.append(f)
            dropped += len(figures) - before - len(kept)
            del figures[before:]
            figures.extend(kept)
    if vllm_lines == 0:
        raise InvalidInput(
            "log",
            "no line of it is one vLLM prints at start-up (model loading, memory profiling, KV cache "
            "size, maximum concurrency, engine arguments): paste the engine's start-up log",
        )
    return EngineLog(
        figures=tuple(figures),
        lines=count,
        vllm_lines=vllm_lines,
        figures_dropped=dropped,
        command=command,
        command_line=command_line,
    )


def _lines(text: str) -> Iterator[str]:
    """Lines without building a list of them all (a log may be millions of lines)."""
    start = 0
    while start <= len(text):
        end = text.find("\n", start)
        if end == -1:
            if start < len(text):
                yield text[start:]
            return
        yield text[start:end]
        start = end + 1
