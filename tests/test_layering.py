"""The layers import downwards only: the core knows no framework, the service layer and the CLI's
one-shot answers know no HTTP, and no two modules of the package import each other, however
indirectly. Imports are read from the source (relative, absolute and function-level ones alike),
and loaded modules are checked in fresh interpreters, so nothing imported by another test can hide
a violation."""

from __future__ import annotations

import ast
import subprocess
import sys
from collections.abc import Iterable
from pathlib import Path

import pytest

SERVICE = Path(__file__).resolve().parents[1] / "service" / "kvplan"


def module_name(path: Path, root: Path = SERVICE) -> str:
    """The dotted name of a source file of the package (a package's `__init__` is the package)."""
    parts = ("kvplan", *path.relative_to(root).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports_of(path: Path, known: Iterable[str], root: Path = SERVICE) -> set[str]:
    """Every module a file imports, wherever the statement stands (module level, inside a
    function, under `if TYPE_CHECKING`), relative imports resolved against the file's package.
    `from pkg import name` counts as importing `pkg.name` when that is a module of `known`."""
    known = set(known)
    here = module_name(path, root)
    package = here if path.name == "__init__.py" else here.rpartition(".")[0]
    out: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            out |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - (node.level - 1)]
                source = ".".join([*base, node.module] if node.module else base)
            else:
                source = node.module or ""
            subs = {f"{source}.{a.name}" for a in node.names} & known
            out |= subs or {source}
            if subs and len(subs) < len(node.names):
                out.add(source)
    return out


def import_graph(root: Path = SERVICE) -> dict[str, set[str]]:
    """Each module of the package and the modules of the package it imports."""
    files = {module_name(p, root): p for p in root.rglob("*.py")}
    return {
        name: {m for m in imports_of(path, files, root) if m in files and m != name}
        for name, path in files.items()
    }


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for u in sorted(graph.get(v, ())):
            if u not in index:
                visit(u)
                low[v] = min(low[v], low[u])
            elif u in on_stack:
                low[v] = min(low[v], index[u])
        if low[v] == index[v]:
            component = []
            while True:
                u = stack.pop()
                on_stack.discard(u)
                component.append(u)
                if u == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def test_no_two_modules_of_the_package_import_each_other_even_indirectly():
    assert cycles(import_graph()) == []


def test_the_cycle_check_sees_a_function_level_import_behind_type_checking(tmp_path):
    pkg = tmp_path / "core"
    (pkg / "kv").mkdir(parents=True)
    for name in ("__init__.py", "kv/__init__.py"):
        (pkg / name).write_text("")
    (pkg / "kv" / "groups.py").write_text("from .layers import LayerBytes\n")
    (pkg / "kv" / "layers.py").write_text("from . import dsv4\n")
    (pkg / "kv" / "dsv4.py").write_text(
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n    from .groups import GroupPlan\n"
        "def plan():\n    from ..kv.groups import packed_plan\n"
    )
    assert cycles(import_graph(tmp_path)) == [
        ["kvplan.core.kv.dsv4", "kvplan.core.kv.groups", "kvplan.core.kv.layers"]
    ]


def test_the_core_imports_only_itself_the_standard_library_and_msgspec():
    allowed_third_party = {"msgspec"}
    files = {module_name(p): p for p in SERVICE.rglob("*.py")}
    for path in (SERVICE / "core").rglob("*.py"):
        for name in imports_of(path, files):
            top = name.split(".")[0]
            if top == "kvplan":
                assert name.startswith("kvplan.core"), (path, name)
            else:
                assert top in sys.stdlib_module_names or top in allowed_third_party, (path, name)


def test_a_relative_import_from_the_core_into_the_api_is_seen(tmp_path):
    core = tmp_path / "core" / "budget"
    core.mkdir(parents=True)
    (core / "compute.py").write_text("def f():\n    from ...api.errors import problem\n")
    (tmp_path / "api").mkdir()
    (tmp_path / "api" / "errors.py").write_text("")
    files = {module_name(p, tmp_path) for p in tmp_path.rglob("*.py")}
    assert imports_of(core / "compute.py", files, tmp_path) == {"kvplan.api.errors"}


@pytest.mark.parametrize("layer", ["services", "schemas", "render.py", "presets", "hub"])
def test_the_layers_below_the_api_import_nothing_from_it(layer):
    files = {module_name(p): p for p in SERVICE.rglob("*.py")}
    target = SERVICE / layer
    paths = [target] if target.is_file() else list(target.rglob("*.py"))
    for path in paths:
        for name in imports_of(path, files):
            assert not name.startswith(("kvplan.api", "litestar")), (path, name)


def _modules_after(code: str) -> set[str]:
    out = subprocess.run(
        [sys.executable, "-c", f"{code}\nimport sys\nprint('\\n'.join(sys.modules))"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return set(out.split())


def test_the_cli_answers_a_budget_without_loading_the_api_or_litestar():
    loaded = _modules_after(
        "import contextlib, io\n"
        "from kvplan.cli import main\n"
        "with contextlib.redirect_stdout(io.StringIO()):\n"
        "    assert main(['budget', 'model=llama-3-70b', 'gpu=pool-160gib', 'weights_bytes=139586437120',"
        " 'context_tokens=8192']) == 0"
    )
    assert "kvplan.services.answers" in loaded
    assert not {m for m in loaded if m.startswith(("kvplan.api", "litestar"))}


def test_importing_the_core_loads_no_framework():
    loaded = _modules_after("import kvplan.core.budget, kvplan.core.fleet.plan, kvplan.core.sim.simulate")
    assert not {
        m for m in loaded if m.startswith(("kvplan.api", "litestar", "prometheus_client", "structlog"))
    }
