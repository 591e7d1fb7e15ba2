"""The engine's arguments as a log states them: a `vllm serve …` command line, or the
`non-default args: {…}` dict vLLM prints from it (entrypoints/common/startup.py in 0.33,
entrypoints/utils.py before). Read whole by the one command parser /v1/plan uses
(core/engine/command.py); when it cannot read the line (a paste cut short, an older engine's flag),
a tolerant reader takes what is whole: each complete `'key': value` of a dict cut short, each flag
of a command as a shell would split it (`--model="/p/"`, `--model  /p`, `'--model' 'name'`)."""

from __future__ import annotations

import ast
import re
from collections.abc import Callable

from ..engine.command import Command, read_command
from ..errors import InvalidInput, WorkStopped
from ..limits import MAX_ARGS_CHARS, MAX_ARGS_TRIES, MAX_LOG_ARGS_TRIES, MAX_LOG_COMMANDS
from .lines import BOOL_FIGURES, number

_ARGS = re.compile(r"non-default args: \{")
# One `'key': value` of a printed dict whose value is a scalar, followed by `, ` or `}`.
_PAIR = re.compile(r"'(\w{1,60})': ('[^']{0,300}'|\"[^\"]{0,300}\"|-?[\d.]{1,24}|True|False|None)(?=, |\})")
_FLAG = re.compile(
    r"['\"]?--([a-z][a-z0-9_-]{1,40})['\"]?"
    r"(?:(?:=| {1,8})(?:\"([^\"]{0,300})\"|'([^']{0,300})'|([^\s'\"│-][^\s│]{0,300})))?"
)
# vLLM's own advice names flags it did not run with (`… is equivalent to --gpu-memory-utilization=…`).
_ADVICE = re.compile(r"CUDA graph memory profiling|Replace gpu_memory_utilization|--help")
# Engine arguments as vLLM names them (dict keys and --flags alike), and the unit of each figure.
ARG_FIGURES: dict[str, str] = {
    "model": "", "tensor_parallel_size": "", "pipeline_parallel_size": "", "data_parallel_size": "",
    "max_model_len": "tokens", "max_num_seqs": "", "max_num_batched_tokens": "tokens",
    "gpu_memory_utilization": "", "block_size": "tokens", "enforce_eager": "", "kv_cache_dtype": "",
    "dtype": "", "quantization": "", "enable_prefix_caching": "", "served_model_name": "",
    "distributed_executor_backend": "",
}  # fmt: skip
_TEXT_ARGS = frozenset(
    {"model", "kv_cache_dtype", "dtype", "quantization", "served_model_name", "distributed_executor_backend"}
)
_SHORT = {"tp": "tensor_parallel_size", "pp": "pipeline_parallel_size", "dp": "data_parallel_size"}

Add = Callable[[str, object], None]


class ArgsBudget:
    """What one log may spend reading engine arguments: closing braces tried, command lines read."""

    __slots__ = ("commands", "tries")

    def __init__(self) -> None:
        self.tries = MAX_LOG_ARGS_TRIES
        self.commands = MAX_LOG_COMMANDS


def arg_value(name: str, raw: object) -> tuple[float | int | str | bool, int] | None:
    """An argument's value as a figure (and the decimals printed); None when it is not one."""
    if name in BOOL_FIGURES:
        if isinstance(raw, bool):
            return raw, 0
        return (str(raw).lower() in ("", "true", "1")), 0
    if name in _TEXT_ARGS:
        if isinstance(raw, list | tuple) and raw:  # served_model_name is a list
            raw = raw[0]
        text = str(raw).strip("'\"")[:300]
        return (text, 0) if text and text != "None" else None
    if isinstance(raw, bool) or raw is None:
        return None
    if isinstance(raw, (int, float)):
        raw = str(raw)
    return number(str(raw), name) if isinstance(raw, str) else None


def _args_dict(line: str, start: int, should_stop: Callable[[], bool], budget: ArgsBudget) -> object:
    """The printed dict that opens at `start`: each closing brace from the left is tried (a paste
    may put more braces after it on the same line), within MAX_ARGS_CHARS and MAX_ARGS_TRIES.
    should_stop() is asked before each try but the first: one line can cost MAX_ARGS_TRIES parses of
    MAX_ARGS_CHARS (0.3 s), and a log of such lines minutes, between two per-line checks."""
    end, tries = start, 0
    while tries < MAX_ARGS_TRIES and budget.tries > 0:
        end = line.find("}", end + 1, start + MAX_ARGS_CHARS)
        if end == -1:
            return None
        if tries and should_stop():  # a dict vLLM printed parses at its first try
            raise WorkStopped(f"stopped reading the engine arguments, try {tries + 1}")
        tries += 1
        budget.tries -= 1
        try:
            return ast.literal_eval(line[start : end + 1])
        except (ValueError, SyntaxError, MemoryError, RecursionError, TypeError):
            continue
    return None


def _from_command(line: str, add: Add, budget: ArgsBudget) -> Command | str | None:
    """The engine arguments of a `non-default args` or `vllm serve` line, read by the one command
    parser /v1/plan uses (core/engine/command.py); why not when it cannot read the line whole (a
    flag it refuses: the tolerant readers below then take what they can); None without one."""
    at = max(line.find("non-default args:"), line.find("vllm serve"))
    if at < 0 or budget.commands <= 0:
        return None
    budget.commands -= 1
    try:
        command = read_command(line[at:])
    except InvalidInput as e:
        return e.reason
    if command.model is not None:
        add("model", command.model)
    for f in command.flags:
        key = f.option[2:].replace("-", "_")
        if key in ARG_FIGURES and f.value is not None:
            add(key, f.value)
    return command


def read_arguments(
    line: str, add: Add, should_stop: Callable[[], bool], budget: ArgsBudget
) -> Command | str | None:
    """Add each engine argument the line states; the command when the line reads whole, else why
    the command parser refused it (the arguments read here are then all the plan has). The log's
    budget bounds the parses: past it, only the tolerant readers below run."""
    command = _from_command(line, add, budget)
    if isinstance(command, Command):
        return command
    m = _ARGS.search(line)
    if m is not None:
        args = _args_dict(line, m.end() - 1, should_stop, budget)
        if isinstance(args, dict):
            for key, raw in args.items():
                if isinstance(key, str) and key in ARG_FIGURES:
                    add(key, raw)
        else:  # cut short: the pairs that are whole
            for pm in _PAIR.finditer(line, m.end(), m.end() + MAX_ARGS_CHARS):
                key, raw = pm.group(1), pm.group(2)
                if key in ARG_FIGURES:
                    add(key, raw.strip("'\"") if raw[0] in "'\"" else raw)
    if "--" in line and not _ADVICE.search(line):
        for fm in _FLAG.finditer(line):
            key = fm.group(1).replace("-", "_")
            key = _SHORT.get(key, key)
            value = next((g for g in fm.groups()[1:] if g is not None), "")
            if key in ARG_FIGURES:
                add(key, value)
    return command  # why the parser refused the line, or None
