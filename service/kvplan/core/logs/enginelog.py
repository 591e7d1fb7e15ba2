"""Reading what a vLLM engine printed at start-up: every figure it states about its memory, its
blocks and its settings, each with the line it came from (docs/reconcile.md); what the log implies
(infer.py), and whether the engine failed to start (failure.py).

Logs from vLLM 0.4 to 0.33, V0 and V1, raw or as people paste them: log prefixes
(`INFO 11-30 12:00:01 [gpu_worker.py:298]`), process tags (`(EngineCore_DP0 pid=123)`,
`(Worker_TP1 pid=…)`), container and terminal prefixes (prefixes.py) and ANSI colours are skipped,
figures are found anywhere in a line (a paste may join several log lines into one).

Bounded: a line is read up to MAX_LINE_CHARS, a log up to MAX_LOG_LINES lines; every pattern
starts with literal text and has no nested repetition, so reading is linear in the input."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import msgspec

from ..engine.command import Command
from ..errors import InvalidInput, WorkStopped
from ..limits import MAX_FIGURES, MAX_FIGURES_PER_LINE, MAX_FIGURES_PER_NAME, MAX_LINE_CHARS, MAX_LOG_LINES
from .arguments import ARG_FIGURES, ArgsBudget, arg_value, read_arguments
from .failure import Failure, failure_in, first_cause
from .figure import Figure, rank_order
from .infer import Evidence, Inference, infer
from .lines import (
    BOOL_FIGURES,
    INTERESTING,
    MEMORY_PATTERNS,
    OTHER_PATTERNS,
    TEXT_FIGURES,
    VLLM_PREFIX,
    number,
)
from .prefixes import rank_of, strip_paste, worker_process

__all__ = ["EngineLog", "Failure", "Figure", "Inference", "rank_order", "read_log"]


class EngineLog(msgspec.Struct, frozen=True, kw_only=True):
    figures: tuple[Figure, ...]
    lines: int
    vllm_lines: int  # lines that looked like vLLM's (a figure read, or vLLM's log prefix)
    figures_dropped: int = 0  # past the caps (MAX_FIGURES_PER_LINE, _PER_NAME, MAX_FIGURES)
    # The engine's command (`vllm serve …` or `non-default args`) read whole, and its line: every
    # flag the engine ran with, as /v1/plan reads it.
    command: Command | None = None
    command_line: int = 0
    # Else why the command parser refused the engine's arguments (a flag it cannot plan), and the
    # line: only the arguments the tolerant readers took reach the plan.
    command_refused: str = ""
    command_refused_line: int = 0
    # What the log implies, each with how and the line (infer.py); the start-up's failure, if any.
    inferred: tuple[Inference, ...] = ()
    failure: Failure | None = None

    def first(self, name: str) -> Figure | None:
        """The figure as rank 0 states it, else the driver, else the first worker to print it."""
        found = [f for f in self.figures if f.name == name]
        return min(found, key=lambda f: rank_order(f.rank)) if found else None

    def value(self, name: str) -> float | int | str | bool | None:
        f = self.first(name)
        return None if f is None else f.value

    def inference(self, name: str) -> Inference | None:
        """The inference of that name (a /v1/budget field, `engine` or `gpu`), if the log gives one."""
        return next((i for i in self.inferred if i.name == name), None)


# should_stop() is asked once per this many lines: a line vLLM prints at start-up is read in ~30 µs
# (every pattern whose literal text it holds tried), ~0.2 µs when it is not one, so ~30 ms apart.
STOP_CHECK_LINES = 1024


class _Reader:
    """The state of one read: figures kept within the caps, evidence, failures, the command."""

    def __init__(self, should_stop: Callable[[], bool]) -> None:
        self.should_stop = should_stop
        self.args_budget = ArgsBudget()
        self.figures: list[Figure] = []
        self.per_name: dict[str, int] = {}
        self.vllm_lines = self.dropped = self.command_line = self.command_refused_line = 0
        self.command_refused = ""
        self.command: Command | None = None
        self.evidence = Evidence()
        self.failures: list[Failure] = []

    def read(self, raw: str, count: int) -> None:
        """Read one line: its figures, its arguments, its rank and format, a failure it reports."""
        line = strip_paste(raw[:MAX_LINE_CHARS])
        rank = rank_of(line)
        shown = line.strip()[:300]
        new: list[Figure] = []

        def add(name: str, raw_value: object) -> None:
            parsed = arg_value(name, raw_value)
            if parsed is not None:
                new.append(Figure(name=name, value=parsed[0], unit=ARG_FIGURES.get(name, ""),
                                  decimals=parsed[1], line=count, text=shown, rank=rank))  # fmt: skip

        patterns = MEMORY_PATTERNS + OTHER_PATTERNS if "GiB" in line or "GB" in line else OTHER_PATTERNS
        for name, pattern, unit, literal in patterns:
            if literal not in line:
                continue
            for m in pattern.finditer(line):
                value = m.group(1)
                if name in TEXT_FIGURES:
                    new.append(Figure(name=name, value=value, line=count, text=shown, rank=rank))
                elif name in BOOL_FIGURES:
                    new.append(Figure(name=name, value=value == "True", line=count, text=shown, rank=rank))
                elif (parsed := number(value, name)) is not None:
                    new.append(Figure(name=name, value=parsed[0], unit=unit, decimals=parsed[1],
                                      line=count, text=shown, rank=rank))  # fmt: skip
        command = read_arguments(line, add, self.should_stop, self.args_budget)
        if isinstance(command, str):
            self.command_refused, self.command_refused_line = command, count
        elif command is not None:
            self.command, self.command_line = command, count
        self.evidence.see(line, count, rank, worker_process(line))
        failure = failure_in(line, count)
        if failure is not None and len(self.failures) < 64:
            self.failures.append(failure)
        if new or failure is not None or VLLM_PREFIX.search(line):
            self.vllm_lines += 1
        self._keep(new)

    def note(self, raw: str, count: int) -> None:
        """A line that states no figure: what its format and worker tag say of the engine."""
        line = strip_paste(raw[:MAX_LINE_CHARS])
        self.evidence.see(line, count, rank_of(line), worker_process(line))
        if VLLM_PREFIX.search(line):
            self.vllm_lines += 1

    def _keep(self, new: list[Figure]) -> None:
        kept = 0
        for f in new:
            n = self.per_name.get(f.name, 0)
            if kept < MAX_FIGURES_PER_LINE and n < MAX_FIGURES_PER_NAME and len(self.figures) < MAX_FIGURES:
                self.per_name[f.name] = n + 1
                self.figures.append(f)
                kept += 1
        self.dropped += len(new) - kept


def read_log(text: str, should_stop: Callable[[], bool] = lambda: False) -> EngineLog:
    """Every figure the log states, in the order printed, what it implies and whether the engine
    failed to start. InvalidInput (field `log`) when no line looks like vLLM's."""
    reader = _Reader(should_stop)
    count = 0
    for count, raw in enumerate(_lines(text), start=1):
        if count > MAX_LOG_LINES:
            raise InvalidInput("log", f"more than {MAX_LOG_LINES:,} lines: send the start-up part")
        if count % STOP_CHECK_LINES == 0 and should_stop():  # past the deadline: no answer from half a log
            raise WorkStopped(f"{count:,} lines read")
        if INTERESTING.search(raw[:MAX_LINE_CHARS]):
            reader.read(raw, count)
        elif ".py:" in (head := raw[:MAX_LINE_CHARS]) or "Worker" in head or "rank" in head:
            # a line with no figure: its format, its worker tag and the ranks it names still tell
            reader.note(raw, count)
    if reader.vllm_lines == 0:
        raise InvalidInput(
            "log",
            "no line of it is one vLLM prints at start-up (model loading, memory profiling, KV cache "
            "size, maximum concurrency, engine arguments): paste the engine's start-up log",
        )
    figures = tuple(reader.figures)
    return EngineLog(
        figures=figures,
        lines=count,
        vllm_lines=reader.vllm_lines,
        figures_dropped=reader.dropped,
        command=reader.command,
        command_line=reader.command_line,
        command_refused=reader.command_refused if reader.command is None else "",
        command_refused_line=reader.command_refused_line if reader.command is None else 0,
        inferred=infer(figures, reader.evidence),
        failure=first_cause(reader.failures),
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
