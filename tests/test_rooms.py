"""The house a newcomer walks into (issue 24): core/ by concern, with only the ground floor at its
top; no file too long to hold one concept; every long function saying what it returns and why."""

from __future__ import annotations

import ast
from pathlib import Path

SERVICE = Path(__file__).resolve().parents[1] / "service" / "kvplan"
CORE = SERVICE / "core"

# What every room of core/ may use: errors, warnings, the ledger, limits, units, the one integer
# rule and the bounded memo.
GROUND_FLOOR = {"errors", "warnings", "ledger", "limits", "units", "validate", "memo"}
ROOMS = {"engine", "model", "hf", "kv", "budget", "fleet", "sim", "logs", "autoscale", "perf", "traffic"}
MAX_FILE_LINES = 800
LONG_FUNCTION_LINES = 25


def test_the_core_top_level_holds_only_the_ground_floor_and_the_rooms():
    modules = {p.stem for p in CORE.glob("*.py")} - {"__init__"}
    packages = {p.name for p in CORE.iterdir() if (p / "__init__.py").is_file()}
    assert modules == GROUND_FLOOR
    assert packages == ROOMS


def test_no_python_file_of_the_service_is_over_800_lines():
    long = {
        str(p.relative_to(SERVICE)): n
        for p in SERVICE.rglob("*.py")
        if (n := len(p.read_text().splitlines())) > MAX_FILE_LINES
    }
    assert long == {}


def long_functions_without_a_docstring(root: Path) -> list[str]:
    """Functions of LONG_FUNCTION_LINES lines or more under `root` that have no docstring."""
    out = []
    for path in sorted(root.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                lines = (node.end_lineno or node.lineno) - node.lineno + 1
                if lines >= LONG_FUNCTION_LINES and ast.get_docstring(node) is None:
                    out.append(f"{path.relative_to(root)}:{node.lineno} {node.name} ({lines} lines)")
    return out


def test_every_function_of_25_lines_or_more_says_what_it_returns_and_why():
    assert long_functions_without_a_docstring(SERVICE) == []


def test_the_docstring_check_sees_a_long_function_without_one(tmp_path):
    body = "\n".join(f"    x{i} = {i}" for i in range(LONG_FUNCTION_LINES))
    (tmp_path / "m.py").write_text(f"def long():\n{body}\n\n\ndef short():\n    return 1\n")
    assert long_functions_without_a_docstring(tmp_path) == [f"m.py:1 long ({LONG_FUNCTION_LINES + 1} lines)"]
