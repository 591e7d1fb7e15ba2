"""The engine flags of vLLM 0.33's `vllm serve`, as data/vllm-0.33.0-engine-flags.txt lists them:
what generated vllm-args may use. `flags()` reads the file; `main()` makes it from vLLM's source,
read as text (importing vLLM would need torch and a GPU build):

    unzip vllm-0.33.0-*.whl 'vllm/engine/arg_utils.py' 'vllm/config/*' -d /tmp/vllm
    python -m tests.autoscale.vllm_flags /tmp/vllm > tests/autoscale/data/vllm-0.33.0-engine-flags.txt

Each line of the file is one argument: its option strings, then `value` (it takes a value) or
`switch` (it takes none: a bool field's argparse.BooleanOptionalAction gives --x and --no-x)."""

from __future__ import annotations

import ast
import sys
from pathlib import Path

FLAGS_FILE = Path(__file__).parent / "data" / "vllm-0.33.0-engine-flags.txt"
HEADER = """\
# vLLM 0.33.0's engine flags: every option string that EngineArgs.add_cli_args and
# AsyncEngineArgs.add_cli_args register, which `vllm serve [model_tag]` takes besides its frontend's
# own (host, port, …). One argument a line: its option strings, then `value` (it takes a value) or
# `switch` (it takes none). A bool field of a config dataclass is an argparse.BooleanOptionalAction,
# --x and --no-x (_compute_kwargs in arg_utils.py).
#
# Source: vllm-0.33.0-cp38-abi3-manylinux_2_28_x86_64.whl from PyPI
#   (sha256 4b6bdec4ab269990bf70d45a3c1e94c3760a27064513760193b26d6f0da883aa),
#   vllm/engine/arg_utils.py (sha256 f97af20917395ae717976f6022a78dd996a63c564a31db98567dd979cf0e2aa8)
#   and the field types of vllm/config/*.py, read as text.
# Made by: python -m tests.autoscale.vllm_flags <the unzipped wheel> (tests/autoscale/vllm_flags.py)."""


def flags(path: Path = FLAGS_FILE) -> dict[str, bool]:
    """Every option string of the file, and whether it takes a value."""
    out: dict[str, bool] = {}
    for line in path.read_text().splitlines():
        if line.strip() and not line.startswith("#"):
            *options, kind = line.split()
            assert kind in ("value", "switch"), line
            out |= dict.fromkeys(options, kind == "value")
    return out


def _config_fields(root: Path) -> dict[str, tuple[dict[str, ast.expr], list[str]]]:
    """Each class of vllm/config/*.py: its annotated fields and its bases' names."""
    classes = {}
    for path in sorted((root / "vllm" / "config").glob("*.py")):
        for node in ast.parse(path.read_text()).body:
            if isinstance(node, ast.ClassDef):
                fields = {
                    s.target.id: s.annotation
                    for s in node.body
                    if isinstance(s, ast.AnnAssign) and isinstance(s.target, ast.Name)
                }
                classes[node.name] = (fields, [ast.unparse(b) for b in node.bases])
    return classes


def _is_bool_field(classes: dict, cls: str, field: str) -> bool:
    """Whether get_kwargs() makes the field a BooleanOptionalAction: its type holds bool, and is not
    `bool | str | None` (an optional-valued flag)."""
    todo = [cls]
    while todo:
        fields, bases = classes.get(todo.pop(0), ({}, []))
        if field in fields:
            a = fields[field]
            names = {n.id for n in ast.walk(a) if isinstance(n, ast.Name)}
            names |= {"None" for n in ast.walk(a) if isinstance(n, ast.Constant) and n.value is None}
            return "bool" in names and names != {"bool", "str", "None"}
        todo += bases
    raise LookupError(f"{cls}.{field}")


def _arguments(root: Path) -> list[tuple[list[str], str]]:
    """(option strings, how it takes a value) of each add_argument call in the add_cli_args of
    arg_utils.py, whose keyword arguments are given directly or as `**<config>_kwargs["field"]`:
    "value", "switch" (store_true) or "negatable" (BooleanOptionalAction: --x and --no-x)."""
    classes = _config_fields(root)
    out = []  # (line, options, kind): in the order of the source
    tree = ast.parse((root / "vllm" / "engine" / "arg_utils.py").read_text())
    for fn in ast.walk(tree):
        if not (isinstance(fn, ast.FunctionDef) and fn.name == "add_cli_args"):
            continue
        kwargs_of: dict[str, tuple[str, str | None]] = {}  # x_kwargs = get_kwargs(XConfig)[...]
        for node in ast.walk(fn):
            if isinstance(node, ast.Assign) and isinstance(node.targets[0], ast.Name):
                v, field = node.value, None
                if isinstance(v, ast.Subscript) and isinstance(v.slice, ast.Constant):
                    v, field = v.value, v.slice.value
                if isinstance(v, ast.Call) and getattr(v.func, "id", "") == "get_kwargs":
                    kwargs_of[node.targets[0].id] = (ast.unparse(v.args[0]), field)
                elif isinstance(v, ast.Name) and v.id in kwargs_of:
                    kwargs_of[node.targets[0].id] = (kwargs_of[v.id][0], field)
        for call in ast.walk(fn):
            if not (isinstance(call, ast.Call) and getattr(call.func, "attr", "") == "add_argument"):
                continue
            options = [a.value for a in call.args if isinstance(a, ast.Constant)]
            assert len(options) == len(call.args), ast.unparse(call)
            kind = "value"
            for k in call.keywords:
                given = k.value
                if k.arg == "action" and "BooleanOptionalAction" in ast.unparse(given):
                    kind = "negatable"
                elif k.arg == "action" and "store_" in ast.unparse(given):
                    kind = "switch"
                if k.arg is not None:
                    continue
                if isinstance(given, ast.Dict):  # **{**x_kwargs["field"], "default": …}
                    given = next(v for key, v in zip(given.keys, given.values, strict=True) if key is None)
                if isinstance(given, ast.Subscript):
                    cls, field = kwargs_of[ast.unparse(given.value)][0], ast.literal_eval(given.slice)
                else:
                    cls, field = kwargs_of[ast.unparse(given)]
                if _is_bool_field(classes, cls, field):
                    kind = "negatable"
            out.append((call.lineno, options, kind))
    return [(options, kind) for _, options, kind in sorted(out)]


def main(root: str) -> None:
    print(HEADER)
    for options, kind in _arguments(Path(root)):
        negated = [f"--no-{o[2:]}" for o in options if o.startswith("--")] if kind == "negatable" else []
        print(" ".join([*options, *negated, "value" if kind == "value" else "switch"]))


if __name__ == "__main__":
    main(sys.argv[1])
