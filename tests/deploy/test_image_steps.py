"""Docker cannot run on these machines, so the image is replayed here from its Dockerfile: the build
stage's COPY and RUN steps, as written, into a fresh virtual environment in place of its venv
path (tests/deploy/build_stage.py: the `image_build_stage` fixture, started early beside the
other tests); then the final stage's CMD runs with the final stage's ENV. The CMD must resolve to
the venv's console script, run on the venv's interpreter, serve the seed's answer, and run the
simulator compiled in the build stage, which answers the corpus as the Python source does."""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.deploy.build_stage import host_path
from tests.deploy.image import dockerfile_runtime
from tests.live import free_port
from tests.seed import A

pytestmark = pytest.mark.server


def test_the_images_build_steps_and_cmd_serve_the_seed_answer_from_its_venv(
    tmp_path: Path, image_build_stage: dict[str, Any], python_source_corpus: dict[str, str]
) -> None:
    if "skipped" in image_build_stage:
        pytest.skip(image_build_stage["skipped"])
    image = dockerfile_runtime()
    venv = image["venv"]
    assert image["copies_venv"], f"the final stage must copy {venv} to the same path (venvs do not move)"
    prefix = Path(image_build_stage["venv"])

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
        # as the Python source does (the corpus run on the venv's interpreter after the build).
        assert 'kvplan_simulator_info{build="compiled"} 1.0' in httpx.get(f"{url}/metrics").text
        corpus = image_build_stage["corpus"]
        assert corpus["compiled"] is True
        assert {k: v for k, v in corpus["answers"].items() if python_source_corpus[k] != v} == {}
    finally:
        proc.terminate()
        proc.wait(timeout=30)
