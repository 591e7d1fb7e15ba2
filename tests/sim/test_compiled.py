"""The simulator compiled by mypyc (kvplan/compiled.py) is the one make test runs, and it answers
byte for byte as its Python source does; a build is used only while every file it was compiled
from is unchanged, and one that will not load leaves the source in use."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any

import pytest

from kvplan import compiled
from tests.processes import run_python
from tests.sim import compiled_corpus as corpus

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def built() -> Path:
    files, why = compiled.check()
    if files is None:
        pytest.skip(why)
    return compiled.BUILD_DIR


def a_copy_of(build: Path, tmp_path: Path, **changes: object) -> Path:
    copy = tmp_path / "build"
    shutil.copytree(build, copy)
    manifest = json.loads((copy / compiled.MANIFEST).read_text())
    (copy / compiled.MANIFEST).write_text(json.dumps({**manifest, **changes}))
    return copy


def test_make_test_runs_the_compiled_simulator() -> None:
    if not compiled.active():
        if os.environ.get("KVPLAN_REQUIRE_COMPILED") == "1":
            pytest.fail(f"make test must run the compiled simulator, but this process runs {compiled.STATUS}")
        pytest.skip(compiled.STATUS)
    assert compiled.STATUS.startswith("compiled by mypyc")


def test_the_compiled_simulator_answers_every_workload_as_the_python_source_does(
    compiled_corpus: dict[str, Any], python_source_corpus: dict[str, str]
) -> None:
    if not compiled.active():
        pytest.skip(compiled.STATUS)
    assert compiled_corpus["compiled"] is True  # the build this process runs, in a process of its own
    now = compiled_corpus["answers"]
    traces = 2
    queries = len(corpus.JSON_QUERIES) + len(corpus.FORMATS) + traces
    assert len(now) == len(corpus.GOLDEN_CASES) + queries
    assert all(v.startswith("200 ") for k, v in now.items() if not k.startswith("golden")), now
    assert {k: v for k, v in now.items() if python_source_corpus[k] != v} == {}


def test_a_build_is_stale_once_a_module_it_imports_changed(built: Path, tmp_path: Path) -> None:
    manifest = json.loads((built / compiled.MANIFEST).read_text())
    assert "kvplan.core.sim.workload" in manifest["sources"]  # not compiled, but its NamedTuples are
    sources = {**manifest["sources"], "kvplan.core.sim.workload": "0" * 64}
    files, why = compiled.check(a_copy_of(built, tmp_path, sources=sources))
    assert files is None
    assert why == "the build is stale: kvplan.core.sim.workload changed since (make compiled rebuilds it)"


def test_a_build_for_another_interpreter_or_machine_is_not_used(built: Path, tmp_path: Path) -> None:
    files, why = compiled.check(a_copy_of(built, tmp_path, ext_suffix=".cpython-39-aarch64-linux-gnu.so"))
    assert files is None
    assert why.startswith("the build is for .cpython-39-aarch64-linux-gnu.so")


def test_a_manifest_kvplan_did_not_write_is_refused_not_a_crash(tmp_path: Path) -> None:
    (tmp_path / compiled.MANIFEST).write_text("[1, 2]")
    files, why = compiled.check(tmp_path)
    assert files is None
    assert why.startswith("the build's manifest is not one kvplan wrote")


def test_a_build_anyone_can_write_to_is_not_loaded(built: Path, tmp_path: Path) -> None:
    copy = a_copy_of(built, tmp_path)
    copy.chmod(0o777)
    files, why = compiled.check(copy)
    assert files is None
    assert why.endswith("is writable by anyone: its code is not loaded")


def test_a_missing_build_is_reported_as_missing(tmp_path: Path) -> None:
    files, why = compiled.check(tmp_path)
    assert files is None
    assert why.startswith(f"no compiled build in {tmp_path}")


def test_a_build_that_will_not_load_leaves_the_python_source_in_use(built: Path, tmp_path: Path) -> None:
    copy = a_copy_of(built, tmp_path)
    shared = next(copy.glob(f"{compiled.GROUP}*"))
    shared.write_bytes(b"not a shared library")  # (a file cut short would crash dlopen: builds swap whole)
    code = "from kvplan import compiled; print(compiled.active()); print(compiled.STATUS)"
    active, status = run_python(code, KVPLAN_COMPILED_DIR=str(copy)).splitlines()[-2:]
    assert active == "False"
    assert status.startswith(f"pure Python: the compiled build in {copy} would not load (ImportError")


def test_a_build_never_replaces_a_directory_that_is_not_one(tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("mine")
    with pytest.raises(compiled.BuildError, match="holds something other than a kvplan build"):
        compiled.build(tmp_path)
    assert (tmp_path / "notes.txt").read_text() == "mine"


def test_the_python_source_runs_when_compiled_is_off() -> None:
    code = "from kvplan import compiled; print(compiled.active(), compiled.STATUS)"
    assert run_python(code, KVPLAN_COMPILED="0") == "False pure Python: KVPLAN_COMPILED is off"
