"""The simulator compiled by mypyc (kvplan/compiled.py) is the one make test runs, and it answers
byte for byte as its Python source does; a build is used only while its sources are unchanged."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from kvplan import compiled
from tests.sim import compiled_corpus

ROOT = Path(__file__).resolve().parents[2]


def test_make_test_runs_the_compiled_simulator() -> None:
    if not compiled.active():
        if os.environ.get("KVPLAN_REQUIRE_COMPILED") == "1":
            pytest.fail(f"make test must run the compiled simulator, but this process runs {compiled.STATUS}")
        pytest.skip(compiled.STATUS)
    assert compiled.STATUS.startswith("compiled by mypyc")


def test_the_compiled_simulator_answers_every_workload_as_the_python_source_does() -> None:
    if not compiled.active():
        pytest.skip(compiled.STATUS)
    env = {**os.environ, "KVPLAN_COMPILED": "0"}
    out = subprocess.run(
        [sys.executable, "-m", "tests.sim.compiled_corpus"], env=env, cwd=ROOT, capture_output=True, text=True
    )
    assert out.returncode == 0, out.stderr[-2000:]
    source = json.loads(out.stdout.splitlines()[-1])  # after the app's start-up log
    now = compiled_corpus.answers()
    assert len(now) == len(compiled_corpus.GOLDEN_CASES) + len(compiled_corpus.JSON_QUERIES) + 4
    assert all(v.startswith("200 ") for k, v in now.items() if not k.startswith("golden")), now
    assert {k: v for k, v in now.items() if source[k] != v} == {}


def test_a_build_whose_source_changed_is_not_used(tmp_path: Path) -> None:
    files, why = compiled.check()
    if files is None:
        pytest.skip(why)
    build = compiled.BUILD_DIR
    stale = tmp_path / "build"
    stale.mkdir()
    manifest = json.loads((build / compiled.MANIFEST).read_text())
    manifest["sources"]["kvplan.core.sim.scheduler"] = "0" * 64
    (stale / compiled.MANIFEST).write_text(json.dumps(manifest))
    files, why = compiled.check(stale)
    assert files is None
    assert why == "the build is stale: kvplan.core.sim.scheduler changed since (make compiled rebuilds it)"


def test_a_build_for_another_python_is_not_used(tmp_path: Path) -> None:
    (tmp_path / compiled.MANIFEST).write_text(json.dumps({"cache_tag": "cpython-39"}))
    files, why = compiled.check(tmp_path)
    assert files is None
    assert why.startswith("the build is for cpython-39")


def test_no_build_is_said_so(tmp_path: Path) -> None:
    files, why = compiled.check(tmp_path)
    assert files is None
    assert why.startswith(f"no compiled build in {tmp_path}")


def test_the_python_source_runs_when_compiled_is_off() -> None:
    env = {**os.environ, "KVPLAN_COMPILED": "0"}
    code = "from kvplan import compiled; print(compiled.active(), compiled.STATUS)"
    out = subprocess.run([sys.executable, "-c", code], env=env, cwd=ROOT, capture_output=True, text=True)
    assert out.stdout.strip() == "False pure Python: KVPLAN_COMPILED is off"
