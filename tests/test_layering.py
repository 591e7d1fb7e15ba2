"""The layers import downwards only: the core knows no framework, the service layer and the CLI's
one-shot answers know no HTTP. Checked in fresh interpreters, so nothing imported by another test
can hide a violation."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

SERVICE = Path(__file__).resolve().parents[1] / "service" / "kvplan"


def _imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text())
    out: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            out.add(node.module)
    return out


def test_the_core_imports_only_the_standard_library_and_msgspec():
    allowed_third_party = {"msgspec"}
    for path in (SERVICE / "core").rglob("*.py"):
        for name in _imports(path):
            top = name.split(".")[0]
            if top == "kvplan":
                assert name.startswith("kvplan.core"), (path, name)
            else:
                assert top in sys.stdlib_module_names or top in allowed_third_party, (path, name)


def test_the_service_layer_schemas_and_text_answers_import_nothing_from_the_api():
    paths = [
        *(SERVICE / "services").rglob("*.py"),
        *(SERVICE / "schemas").rglob("*.py"),
        SERVICE / "render.py",
    ]
    for path in paths:
        for name in _imports(path):
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
