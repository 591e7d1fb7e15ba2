"""Docker cannot run on these machines, so the image is replayed here from its Dockerfile: the build
stage's COPY and RUN steps, as written, into a fresh virtual environment in place of its venv
path (its apt-get steps are not run: the host must already have what they install); then the
build context is removed (the final stage keeps only the venv) and the final stage's CMD runs
with the final stage's ENV. The CMD must resolve to the venv's console script, run on the venv's
interpreter, serve the seed's answer, and run the simulator compiled in the build stage."""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from tests.conftest import corpus_answers
from tests.deploy.image import ROOT, dockerfile_runtime, env_of, stages
from tests.live import free_port
from tests.seed import A

pytestmark = pytest.mark.server


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


def test_the_images_build_steps_and_cmd_serve_the_seed_answer_from_its_venv(tmp_path, python_source_corpus):
    image = dockerfile_runtime()
    venv = image["venv"]
    assert image["copies_venv"], f"the final stage must copy {venv} to the same path (venvs do not move)"
    prefix = tmp_path / "venv"
    replay_build_stage(tmp_path, venv, prefix)

    port = free_port()
    cmd = list(image["cmd"])
    cmd[cmd.index("--host") + 1] = "127.0.0.1"  # loopback only, a free port: same command otherwise
    cmd[cmd.index("--port") + 1] = str(port)
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "VIRTUAL_ENV", "KVPLAN_"))},
        **image["env"],
        "PATH": image["env"].get("PATH", "$PATH").replace(venv, str(prefix)).replace("$PATH", host_path()),
        "KVPLAN_PORT": str(port),
        "KVPLAN_HOST": "127.0.0.1",
    }
    # The image's PATH puts the venv first: its console script is the CMD's program.
    assert shutil.which(cmd[0], path=env["PATH"]) == str(prefix / "bin" / cmd[0])
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    log = tmp_path / "server.log"
    with log.open("wb") as err:
        proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=err, cwd=run_dir)
    try:
        url = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            assert proc.poll() is None, f"the image's CMD exited: {log.read_text()[-3000:]}"
            try:
                if httpx.get(f"{url}/readyz", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                time.sleep(0.2)
        else:
            pytest.fail("the image's CMD did not become ready")
        # The process serving is the venv's interpreter (the console script's shebang), not this one.
        interpreter = Path(f"/proc/{proc.pid}/cmdline").read_bytes().split(b"\0")[0].decode()
        assert Path(interpreter).parent == prefix / "bin", interpreter
        assert Path(interpreter).name.startswith("python")
        r = httpx.get(f"{url}/v1/budget", params=A)
        assert r.status_code == 200, r.text
        assert r.json()["num_blocks"] == 880
        assert httpx.get(f"{url}/schema/assets/swagger-ui-bundle.js").status_code == 200  # package data
        assert httpx.get(f"{url}/").status_code == 200  # the planner page shipped
        # The build stage compiled the simulator into the venv, the server runs it, and it answers
        # as the Python source does.
        assert 'kvplan_simulator_info{build="compiled"} 1.0' in httpx.get(f"{url}/metrics").text
        image = corpus_answers(str(prefix / "bin" / "python"), PYTHONPATH=str(ROOT))
        assert image["compiled"] is True
        assert {k: v for k, v in image["answers"].items() if python_source_corpus[k] != v} == {}
    finally:
        proc.terminate()
        proc.wait(timeout=30)
