"""The Dockerfile read as data, for the deploy tests: what the final stage runs (user, port, CMD,
ENV) and the build stage's steps, which build_stage.py replays in a fresh virtual environment."""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DOCKERFILE = ROOT / "Dockerfile"


def instructions(text: str | None = None) -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) in order: continuation lines joined, comments and blanks dropped."""
    text = DOCKERFILE.read_text() if text is None else text
    out = []
    for line in re.sub(r"\\\n", " ", text).splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            word, _, args = line.partition(" ")
            out.append((word.upper(), " ".join(args.split())))
    return out


def stages() -> list[list[tuple[str, str]]]:
    """Each stage's instructions, its FROM first."""
    out: list[list[tuple[str, str]]] = []
    for word, args in instructions():
        if word == "FROM":
            out.append([])
        out[-1].append((word, args))
    return out


def env_of(stage: list[tuple[str, str]]) -> dict[str, str]:
    """A stage's ENV, as written (a `$PATH` in a value is left for the caller to expand)."""
    env = {}
    for word, args in stage:
        if word == "ENV":
            for pair in shlex.split(args):
                key, _, value = pair.partition("=")
                env[key] = value
    return env


def dockerfile_runtime() -> dict:
    """The final stage's USER, EXPOSE, CMD and ENV; the base image; the virtual environment the
    build stage creates and the final stage copies."""
    build, final = stages()[0], stages()[-1]
    last = {word: args for word, args in final}
    venv = next(
        m.group(1)
        for word, args in build
        if word == "RUN" and (m := re.match(r"python -m venv (\S+)$", args))
    )
    return {
        "user": last["USER"],
        "expose": int(last["EXPOSE"].split("/")[0]),
        "cmd": json.loads(last["CMD"]),
        "env": env_of(final),
        "base": build[0][1].split()[0],
        "venv": venv,
        "copies_venv": f"--from=build {venv} {venv}" in [args for word, args in final if word == "COPY"],
    }
