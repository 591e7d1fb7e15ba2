"""Other Python processes the tests run: this repository's code in a fresh interpreter
(run_python), the compiled corpus's answers from one (corpus_answers), and the slow ones some tests
wait for (Job), started early at idle CPU priority so that they run beside the other tests.

Nothing here imports kvplan: `python -m tests.deploy.build_stage` uses it in a process of its own."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
CORPUS = "import runpy; runpy.run_module('tests.sim.compiled_corpus', run_name='__main__')"


def environment(**env: str) -> dict[str, str]:
    """This process's environment but for kvplan's settings (KVPLAN_COMPILED and the like), and
    `env` on top."""
    return {**{k: v for k, v in os.environ.items() if not k.startswith("KVPLAN_")}, **env}


def run_python(code: str, python: str = sys.executable, **env: str) -> str:
    """What `python -c code` prints, run from the repository's root with environment(**env)."""
    env = environment(**env)
    out = subprocess.run([python, "-c", code], env=env, cwd=ROOT, capture_output=True, text=True)
    assert out.returncode == 0, out.stderr[-2000:]
    return out.stdout.strip()


def printed_json(printed: str) -> dict[str, Any]:
    """The JSON object a process printed on its last line."""
    return json.loads(printed.splitlines()[-1])  # type: ignore[no-any-return]


def corpus_answers(python: str, **env: str) -> dict[str, Any]:
    """tests/sim/compiled_corpus.py's answers as `python` gives them, in a process of its own
    (`compiled`: whether it ran the compiled simulator)."""
    return printed_json(run_python(CORPUS, python, **env))


def process_tree(pid: int) -> set[int]:
    """`pid` and every process descended from it (read from Linux's /proc; elsewhere `pid` alone)."""
    children: dict[int, list[int]] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        with contextlib.suppress(OSError, IndexError, ValueError):
            parent = int(stat.read_text().rsplit(")", 1)[1].split()[1])  # the field after the name
            children.setdefault(parent, []).append(int(stat.parent.name))
    tree: set[int] = set()
    todo = [pid]
    while todo:
        tree.add(found := todo.pop())
        todo.extend(children.get(found, []))
    return tree


class Job:
    """`argv(directory)` run from the repository's root with environment(**env), in a directory
    of its own that keeps what it prints, at idle CPU priority (Linux's SCHED_IDLE, which its
    children inherit: it gets only the CPU the other processes leave, and a test's process that
    wakes takes the CPU back from it at once). Like the suite's servers, it stays in the suite's
    process group: what stops the suite (Ctrl-C, a runner's timeout) stops it too."""

    def __init__(self, name: str, argv: Callable[[Path], list[str]], **env: str) -> None:
        self.dir = Path(tempfile.mkdtemp(prefix=f"kvplan-job-{name}-"))
        with (self.dir / "stdout").open("wb") as out, (self.dir / "stderr").open("wb") as err:
            self.proc = subprocess.Popen(
                argv(self.dir), env=environment(**env), cwd=ROOT, stdout=out, stderr=err
            )
        with contextlib.suppress(AttributeError, OSError):  # not Linux: it runs as any process does
            os.sched_setscheduler(self.proc.pid, os.SCHED_IDLE, os.sched_param(0))

    def output(self) -> str:
        """What it printed, once it has ended; it must have succeeded."""
        self.proc.wait()
        assert self.proc.returncode == 0, (self.dir / "stderr").read_text()[-3000:]
        return (self.dir / "stdout").read_text().strip()

    def stop(self) -> None:
        """Ended with everything it started if still running (the session ended first), its
        directory removed. Its processes are all paused first, so that none starts another."""
        if self.proc.poll() is None:
            paused: set[int] = set()
            while more := process_tree(self.proc.pid) - paused:
                for pid in more:
                    with contextlib.suppress(ProcessLookupError):
                        os.kill(pid, signal.SIGSTOP)
                paused |= more
            for pid in paused:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
            self.proc.wait()
        shutil.rmtree(self.dir, ignore_errors=True)
