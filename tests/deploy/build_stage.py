"""The Dockerfile's build stage replayed for test_image_steps (Docker cannot run on these machines):
its COPY and RUN steps, as written, into a fresh virtual environment in place of its venv path (its
apt-get steps are not run: the host must already have what they install); then the build context
is removed, as the final stage keeps only the venv.

`python -m tests.deploy.build_stage DIR` replays it into DIR/venv and prints, as JSON on its last
line, the venv and the compiled corpus's answers from the venv's interpreter (tests/sim/
compiled_corpus.py), or why the replay was skipped. It takes a minute and a half, most of it
compiling the simulator: tests/conftest.py starts it as soon as the session knows it will run the
image test, at idle CPU priority (tests/processes.py's Job), so it runs beside the tests before it."""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.deploy.image import ROOT, dockerfile_runtime, env_of, stages
from tests.processes import corpus_answers


def host_path() -> str:
    """This machine's PATH without any directory that holds a `kvplan` (the project's own venv):
    if the replayed venv lacked the console script, the CMD must fail, not find another one."""
    dirs = os.environ["PATH"].split(os.pathsep)
    return os.pathsep.join(d for d in dirs if d and not (Path(d) / "kvplan").exists())


def replay_build_stage(tmp_path: Path, venv: str, prefix: Path) -> None:
    """The build stage's WORKDIR, COPY and RUN steps with `venv` read as `prefix`; `python` is the
    base interpreter, as in the python base image."""
    base_bin = tmp_path / "base-bin"
    base_bin.mkdir()
    (base_bin / "python").symlink_to(getattr(sys, "_base_executable", sys.executable))
    build = stages()[0]
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "VIRTUAL_ENV", "KVPLAN_"))},
        "PATH": f"{base_bin}{os.pathsep}{host_path()}",
    }
    workdir = tmp_path / "build"
    ran = []
    for word, args in build[1:]:
        if word == "ENV":
            env.update(env_of([(word, args)]))
        elif word == "WORKDIR":
            workdir = tmp_path / "build" / args.lstrip("/")
            workdir.mkdir(parents=True, exist_ok=True)
        elif word == "COPY":
            *sources, dest = shlex.split(args)
            target = workdir / dest
            for src in sources:
                path = ROOT / src
                into = target / path.name if dest.endswith("/") else target
                if path.is_dir():  # as .dockerignore leaves it: no bytecode, no local compiled build
                    shutil.copytree(path, into, ignore=shutil.ignore_patterns("__pycache__", "_compiled"))
                else:
                    into.parent.mkdir(parents=True, exist_ok=True)
                    shutil.copy2(path, into)
        elif word == "RUN" and args.startswith("apt-get "):
            if shutil.which("dpkg") is None:
                pytest.skip("the build stage installs Debian packages; this host has no dpkg to check them")
            packages = [w for w in re.search(r" install ([^&]+)", args)[1].split() if not w.startswith("-")]
            missing = [
                p for p in packages if subprocess.run(["dpkg", "-s", p], capture_output=True).returncode
            ]
            assert not missing, (
                f"the build stage installs {missing}, which this host lacks (make compiler-deps)"
            )
        elif word == "RUN":
            command = args.replace(venv, str(prefix))
            done = subprocess.run(command, shell=True, cwd=workdir, env=env, capture_output=True, text=True)
            assert done.returncode == 0, f"RUN {args}\n{done.stderr[-3000:]}"
            ran.append(args)
        else:
            raise AssertionError(f"the build stage has a step this replay does not know: {word} {args}")
    assert any("--require-hashes -r requirements.lock" in r for r in ran), ran  # locked, with hashes
    shutil.rmtree(tmp_path / "build")  # the final stage copies the venv alone


def replayed(root: Path) -> dict[str, Any]:
    """The build stage replayed under `root`: its venv and the corpus's answers from the venv's
    interpreter, or why it was skipped."""
    prefix = root / "venv"
    try:
        replay_build_stage(root, dockerfile_runtime()["venv"], prefix)
    except pytest.skip.Exception as e:
        return {"skipped": e.msg}
    corpus = corpus_answers(str(prefix / "bin" / "python"), PYTHONPATH=str(ROOT))
    return {"venv": str(prefix), "corpus": corpus}


if __name__ == "__main__":
    print(json.dumps(replayed(Path(sys.argv[1]))))
