"""docs/messages.md, generated from the code: every warning code with its severity and what it
means, and every error text kvplan can answer with, where it is raised, so the list stays current
(tests/messages/test_messages.py checks it and the rules the texts keep).

    .venv/bin/python -m tests.messages.document     # rewrite docs/messages.md
"""

from __future__ import annotations

import ast
import inspect
from pathlib import Path
from typing import NamedTuple

from kvplan.api import errors as api_errors
from kvplan.core import errors as core_errors
from kvplan.core import warnings as w
from kvplan.hub import errors as hub_errors
from kvplan.presets import registry

ROOT = Path(__file__).resolve().parents[2]
SERVICE = ROOT / "service" / "kvplan"
DOC = ROOT / "docs" / "messages.md"
# How many leading arguments name the field, per error family (the text follows them).
FIELD_ARGS = {
    core_errors.KvplanError: 1,
    hub_errors.HubError: 0,
    api_errors.ApiError: 1,
    registry.PresetError: 2,
}
# Generic raisers take the error class as a parameter named so (err(field, reason)).
GENERIC = {"err": 1, "error": 1}


def _error_classes() -> dict[str, int]:
    """Every error class's name and how many arguments precede its text."""
    out = dict(GENERIC)
    for module in (core_errors, hub_errors, api_errors, registry):
        for name, cls in inspect.getmembers(module, inspect.isclass):
            for base, n in FIELD_ARGS.items():
                if issubclass(cls, base):
                    out[name] = n
    return out


def template(node: ast.expr) -> str | None:
    """The text a string expression writes, with each interpolated value as {…}; None when it is
    not a string built in place."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.JoinedStr):
        return "".join(v.value if isinstance(v, ast.Constant) else "{…}" for v in node.values)
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        left, right = template(node.left), template(node.right)
        return None if left is None or right is None else left + right
    if isinstance(node, ast.IfExp):
        yes, no = template(node.body), template(node.orelse)
        return None if yes is None or no is None else f"{yes} | {no}"
    return None


class ErrorText(NamedTuple):
    where: str  # module and function
    error: str
    text: str


def error_texts() -> list[ErrorText]:
    """Every error text raised in the service, in file order: the class (or generic raiser) called
    and the text, found in the source so that no raise is missed."""
    classes = _error_classes()
    out: list[ErrorText] = []

    class Calls(ast.NodeVisitor):
        def __init__(self, module: str) -> None:
            self.module, self.where = module, ["<module>"]

        def visit_FunctionDef(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
            self.where.append(node.name)
            self.generic_visit(node)
            self.where.pop()

        visit_AsyncFunctionDef = visit_FunctionDef

        def visit_Call(self, node: ast.Call) -> None:
            f = node.func
            called = f.id if isinstance(f, ast.Name) else f.attr if isinstance(f, ast.Attribute) else ""
            if called in classes and len(node.args) > classes[called]:
                text = template(node.args[classes[called]])
                if text is not None:
                    out.append(ErrorText(f"{self.module}.{self.where[-1]}", called, text))
            self.generic_visit(node)

    for path in sorted(SERVICE.rglob("*.py")):
        module = ".".join(path.relative_to(SERVICE.parent).with_suffix("").parts)
        Calls(module).visit(ast.parse(path.read_text()))
    return sorted(set(out), key=out.index)


HEAD = """# Messages

Generated from the code by `python -m tests.messages.document`; a test fails when it is stale,
and another keeps the rules every text follows: it does not start with a code, and its
parentheses balance and do not nest. `{…}` stands for a value filled in at run time.

## Warnings

Every answer's `warnings` are `{code, message, severity}`. Codes are stable and never change
meaning; a code's severity is stated once, in `core/warnings.py`:

- `info`: how a figure was obtained, or what vLLM did with it. The plan holds as asked.
- `warning`: the plan may not hold as asked. Check it before you rely on it.

Errors are not warnings: they are 4xx answers naming the field and the reason (below).

| code | severity | what it means |
|---|---|---|
"""

ERRORS = """
## Errors

Each error answer names the field and the reason; the reason is one of these texts. The HTTP
status follows from the error's class (`api/errors.py`).

| raised in | error | text |
|---|---|---|
"""


def _cell(text: str) -> str:
    return text.replace("|", "\\\\|").replace("\\n", " ")


def document() -> str:
    """The text of docs/messages.md: the warning codes in their order in core/warnings.py, then
    the error texts in file order."""
    rows = [f"| `{code}` | {w.SEVERITY[code].value} | {text} |" for code, text in w.CODES.items()]
    errors = [f"| `{e.where}` | {e.error} | {_cell(e.text)} |" for e in error_texts()]
    return HEAD + "\n".join(rows) + "\n" + ERRORS + "\n".join(errors) + "\n"


if __name__ == "__main__":
    DOC.write_text(document())
    print(f"wrote {DOC}: {len(w.CODES)} warning codes, {len(error_texts())} error texts")
