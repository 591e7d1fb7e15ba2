"""Docker cannot run on these machines, so the image's install and start steps run here in a
fresh virtual environment, exactly as the Dockerfile does them: the locked requirements with
hashes, the package without dependencies, then the image's CMD."""

from __future__ import annotations

import os
import subprocess
import sys
import time
import venv
from pathlib import Path

import httpx
import pytest

from tests.deploy.test_deploy import dockerfile_runtime
from tests.live import free_port

pytestmark = pytest.mark.server
ROOT = Path(__file__).resolve().parents[2]


def test_the_images_install_and_start_steps_serve_the_seed_answer(tmp_path):
    env_dir = tmp_path / "kvplan"
    venv.create(env_dir, with_pip=True)
    pip = [str(env_dir / "bin" / "python"), "-m", "pip", "install", "-q", "--disable-pip-version-check"]
    subprocess.run([*pip, "--require-hashes", "-r", str(ROOT / "requirements.lock")], check=True)
    subprocess.run([*pip, "--no-deps", str(ROOT)], check=True)
    image = dockerfile_runtime()
    port = free_port()
    cmd = list(image["cmd"])
    cmd[cmd.index("--host") + 1] = "127.0.0.1"  # loopback only, a free port: same command otherwise
    cmd[cmd.index("--port") + 1] = str(port)
    env = {
        "PATH": f"{env_dir / 'bin'}:{os.environ['PATH']}",
        **image["env"],
        "KVPLAN_PORT": str(port),
        "KVPLAN_HOST": "127.0.0.1",
    }
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=tmp_path)
    try:
        url = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            try:
                if httpx.get(f"{url}/readyz", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                time.sleep(0.2)
        else:
            pytest.fail("the image's CMD did not become ready")
        r = httpx.get(
            f"{url}/v1/budget",
            params={
                "model": "llama-3-70b",
                "gpu": "pool-160gib",
                "weights_bytes": 130 * 1024**3,
                "context_tokens": 8192,
            },
        )
        assert r.json()["num_blocks"] == 880
        assert (
            httpx.get(f"{url}/schema/assets/swagger-ui-bundle.js").status_code == 200
        )  # package data shipped
        assert httpx.get(f"{url}/").status_code == 200  # the planner page shipped
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    assert sys.executable  # the test ran with the project's own interpreter, the image with its venv
