"""What people paste around vLLM's own log lines, taken off before a line is read: ANSI colours,
container and orchestrator prefixes (docker-compose `vllm-1  | `, `kubectl logs --prefix`
`[pod/x/c] `, k9s and other boxes `│ … │`, ISO timestamps), indents, and the worker tag vLLM puts
before a line (`(Worker_TP1 pid=…)`, `(VllmWorkerProcess pid=…)`, `(RayWorkerWrapper pid=…, ip=…)`),
which is kept as the line's rank.

Every pattern is anchored or starts with literal text and has bounded repetition: linear."""

from __future__ import annotations

import re

_ANSI = re.compile(r"\x1b\[[0-9;]{0,20}[A-Za-z]")
# A worker tag as vLLM's multiprocessing, Ray and V1 engine-core processes print it (vllm/logger.py
# and the executors name their processes: VllmWorkerProcess (V0 mp), RayWorkerWrapper (Ray),
# VllmWorker rank=N (V1 0.8–0.9), Worker_TPn / Worker_PPm_TPn / EngineCore_DPn (V1 0.10 on)).
_RANK = re.compile(
    r"\((EngineCore(?:_DP\d{1,4}|_\d{1,4})?|Worker(?:_[A-Z]{2,3}\d{1,4}){0,4}|"
    r"VllmWorker(?: [A-Za-z]{2}\d{1,4}| rank=\d{1,4})?|VllmWorkerProcess|RayWorkerWrapper)"
    r"(?: pid=\d{1,10})?(?:, ip=[\d.:a-f]{3,45})?\)"
)
_PID = re.compile(
    r"\((?:VllmWorkerProcess|RayWorkerWrapper|Worker[\w]{0,30}|VllmWorker[ \w=]{0,12}) pid=(\d{1,10})"
    r"(?:, ip=([\d.:a-f]{3,45}))?\)"
)
# Prefixes a paste puts before the line, taken off from the left one after another (at most 6).
_PREFIX = re.compile(
    r"[ \t]{1,64}"  # an indent
    r"|[│┃║|]\s{0,8}"  # a box's left edge
    r"|[\w.-]{1,80}\s{1,16}\|\s"  # docker-compose: `vllm-1  | `
    r"|\[(?:pod/)?[\w./-]{1,200}\]\s"  # kubectl logs --prefix: `[pod/vllm-0/vllm] `
    r"|\d{4}-\d\d-\d\d[T ]\d\d:\d\d:\d\d(?:[.,]\d{1,9})?(?:Z|[+-]\d\d:?\d\d)?\s"  # an ISO timestamp
)
_BOX_RIGHT = re.compile(r"\s{0,64}[│┃║]\s{0,8}$")


def strip_paste(line: str) -> str:
    """The line without colours and without what a terminal, a container runtime or an
    orchestrator put around it."""
    line = _ANSI.sub("", line)
    for _ in range(6):
        m = _PREFIX.match(line)
        if m is None or m.end() == 0:
            break
        line = line[m.end() :]
    m = _BOX_RIGHT.search(line, max(0, len(line) - 80))
    return line[: m.start()] if m else line


def rank_of(line: str) -> str:
    """The worker tag the line carries (`Worker_TP1`, `VllmWorker_rank=1`), or ''."""
    m = _RANK.search(line)
    return m.group(1).replace(" ", "_") if m else ""


def worker_process(line: str) -> str:
    """A worker process's identity (`pid` or `pid@ip`) when the line's tag names one, or ''."""
    m = _PID.search(line)
    if m is None:
        return ""
    return m.group(1) + ("@" + m.group(2) if m.group(2) else "")
