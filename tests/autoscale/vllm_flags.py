"""Every option of vLLM 0.33's `vllm serve`, as three files of data/ list them, made from vLLM's
source read as text (importing vLLM would need torch and a GPU build):

    unzip vllm-0.33.0-*.whl 'vllm/*' -d /tmp/vllm
    cd tests/autoscale/data
    python -m tests.autoscale.vllm_flags /tmp/vllm engine > vllm-0.33.0-engine-flags.txt
    python -m tests.autoscale.vllm_flags /tmp/vllm frontend > vllm-0.33.0-frontend-flags.txt
    python -m tests.autoscale.vllm_flags /tmp/vllm types > vllm-0.33.0-flag-types.txt

The flags files hold one argument a line: its option strings, then `value` (it takes a value) or
`switch` (it takes none). `flags()` reads one (what generated vllm-args may use); the engine file
is EngineArgs' and AsyncEngineArgs' arguments, the frontend file the OpenAI server's own
(vllm/entrypoints/common/cli_args.py make_arg_parser and FrontendArgs). The types file gives each
argument's canonical option, how vLLM parses its value, its default, its choices and the file that
defines it (`types()` reads it), which service/kvplan/core/engine/flags.py's table must match.

How a value is parsed mirrors vllm/engine/arg_utils.py _compute_kwargs over the field's type, read
from the annotations of the config dataclasses (the names they use resolved through each file's
imports), then the changes add_cli_args and FrontendArgs._customize_cli_kwargs make to them."""

from __future__ import annotations

import ast
import json
import ssl
import sys
from functools import cache
from pathlib import Path
from typing import Any, NamedTuple

DATA = Path(__file__).parent / "data"
FLAGS_FILE = DATA / "vllm-0.33.0-engine-flags.txt"
FRONTEND_FILE = DATA / "vllm-0.33.0-frontend-flags.txt"
TYPES_FILE = DATA / "vllm-0.33.0-flag-types.txt"
WHEEL = """\
# Source: vllm-0.33.0-cp38-abi3-manylinux_2_28_x86_64.whl from PyPI
#   (sha256 4b6bdec4ab269990bf70d45a3c1e94c3760a27064513760193b26d6f0da883aa),"""
SWITCHES = """\
# One argument a line: its option strings, then `value` (it takes a value) or `switch` (it takes
# none). A bool field of a config dataclass is an argparse.BooleanOptionalAction, --x and --no-x
# (_compute_kwargs in arg_utils.py), which FlexibleArgumentParser turns into an EnableDisableAction
# (vllm/utils/argparse_utils.py, sha256 f0ad2c5e6bac21e3b7369bcc92efcca624afd345e319d9fb367d8efbe72fbf71):
# --enable-x also takes --disable-x, and --disable-x --enable-x."""
HEADERS = {
    "engine": f"""\
# vLLM 0.33.0's engine flags: every option string that EngineArgs.add_cli_args and
# AsyncEngineArgs.add_cli_args register, which `vllm serve [model_tag]` takes besides its frontend's
# own (host, port, …; vllm-0.33.0-frontend-flags.txt).
{SWITCHES}
#
{WHEEL}
#   vllm/engine/arg_utils.py (sha256 f97af20917395ae717976f6022a78dd996a63c564a31db98567dd979cf0e2aa8)
#   and the field types of vllm/config/*.py, read as text.
# Made by: python -m tests.autoscale.vllm_flags <the unzipped wheel> engine
#   (tests/autoscale/vllm_flags.py).""",
    "frontend": f"""\
# vLLM 0.33.0's frontend flags: every option string that `vllm serve` takes besides the engine's
# (vllm-0.33.0-engine-flags.txt): make_arg_parser's own and FrontendArgs.add_cli_args' (its fields
# and BaseFrontendArgs'), in vllm/entrypoints/common/cli_args.py, and argparse's -h/--help.
{SWITCHES}
#
{WHEEL}
#   vllm/entrypoints/common/cli_args.py
#   (sha256 4e9843cfc6c3c24338ff0510f8e3fbaec2c5390451eb27060d14f4f16c72924c)
#   and the field types it names, read as text.
# Made by: python -m tests.autoscale.vllm_flags <the unzipped wheel> frontend
#   (tests/autoscale/vllm_flags.py).""",
    "types": f"""\
# How vLLM 0.33.0's `vllm serve` parses each option (engine and frontend): one argument a line,
# tab-separated: its canonical option, the kind of value (int, human_int (human_readable_int),
# human_int_or_auto, float, str, json (json.loads or a config dataclass's JSON), str_or_json (a JSON
# object, else the text), str_or_true (a bare flag is True), bool (BooleanOptionalAction), switch
# (store_true), choice, list (nargs="+"), append (repeatable)), its default as JSON (null where
# vLLM computes it; a JSON kind's as JSON text), its choices as a JSON list ([] if none), `open` if
# the type is `Literal | str` (the choices are the built-in ones, the config may accept more) else
# `closed`, and the vLLM file that defines it. Kinds mirror vllm/engine/arg_utils.py _compute_kwargs.
#
{WHEEL}
#   vllm/engine/arg_utils.py, vllm/entrypoints/common/cli_args.py and the types they name.
# Made by: python -m tests.autoscale.vllm_flags <the unzipped wheel> types
#   (tests/autoscale/vllm_flags.py).""",
}


def flags(path: Path = FLAGS_FILE) -> dict[str, bool]:
    """Every option string of a flags file, and whether it takes a value."""
    out: dict[str, bool] = {}
    for line in path.read_text().splitlines():
        if line.strip() and not line.startswith("#"):
            *options, kind = line.split()
            assert kind in ("value", "switch"), line
            out |= dict.fromkeys(options, kind == "value")
    return out


def arguments(path: Path = FLAGS_FILE) -> list[list[str]]:
    """Each argument of a flags file: its option strings, the canonical one first."""
    return [line.split()[:-1] for line in path.read_text().splitlines() if line.strip() and line[0] != "#"]


class Types(NamedTuple):
    kind: str
    default: Any
    choices: tuple[str, ...]
    open: bool
    source: str


def types(path: Path = TYPES_FILE) -> dict[str, Types]:
    """The types file: each canonical option's kind, default, choices, openness and source."""
    out = {}
    for line in path.read_text().splitlines():
        if line.strip() and not line.startswith("#"):
            option, kind, default, choices, openness, source = line.split("\t")
            out[option] = Types(
                kind, json.loads(default), tuple(json.loads(choices)), openness == "open", source
            )
    return out


# ---- reading vLLM's source ----------------------------------------------------------------------


class Module(NamedTuple):
    path: Path
    values: dict[str, ast.expr]  # top-level NAME = value (type aliases, constants)
    classes: dict[str, ast.ClassDef]
    imports: dict[str, tuple[str, str]]  # local name → (module, name there)
    stars: list[str]  # modules it imports * from


ROOT = Path()  # the unzipped wheel, set by main()


def _module_path(name: str) -> Path | None:
    base = ROOT.joinpath(*name.split("."))
    for p in (base.with_suffix(".py"), base / "__init__.py"):
        if p.is_file():
            return p
    return None


@cache
def _module(name: str) -> Module | None:
    path = _module_path(name)
    if path is None:
        return None
    values: dict[str, ast.expr] = {}
    classes: dict[str, ast.ClassDef] = {}
    imports: dict[str, tuple[str, str]] = {}
    stars: list[str] = []
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    todo = list(ast.parse(path.read_text()).body)
    while todo:
        node = todo.pop(0)
        if isinstance(node, ast.If | ast.Try):  # `if TYPE_CHECKING:` and try/except imports
            todo += (
                node.body
                + getattr(node, "orelse", [])
                + [s for h in getattr(node, "handlers", []) for s in h.body]
            )
        elif (
            isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name)
        ):
            values.setdefault(node.targets[0].id, node.value)
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and node.value is not None:
            values.setdefault(node.target.id, node.value)
        elif isinstance(node, ast.ClassDef):
            classes[node.name] = node
        elif isinstance(node, ast.ImportFrom):
            source = node.module or ""
            if node.level:
                parts = package.split(".")
                source = ".".join([*parts[: len(parts) - node.level + 1], *([source] if source else [])])
            for a in node.names:
                if a.name == "*":
                    stars.append(source)
                else:
                    imports[a.asname or a.name] = (source, a.name)
        elif isinstance(node, ast.Import):
            for a in node.names:
                imports[a.asname or a.name.split(".")[0]] = (a.name, "")
    return Module(path, values, classes, imports, stars)


def _resolve(module: str, name: str, depth: int = 0) -> tuple[str, ast.expr | ast.ClassDef] | None:
    """Where `name`, as `module` sees it, is defined: (its module, its value or class)."""
    m = _module(module)
    if m is None or depth > 8:
        return None
    if name in m.classes:
        return module, m.classes[name]
    if name in m.values:
        return module, m.values[name]
    if name in m.imports and m.imports[name][1]:
        source, original = m.imports[name]
        return _resolve(source, original, depth + 1)
    for source in m.stars:
        if found := _resolve(source, name, depth + 1):
            return found
    return None


BUILTINS = {"int", "float", "str", "bool", "dict", "list", "tuple", "set", "bytes", "object", "type"}
DATACLASS_DECORATORS = {"config", "dataclass"}


def _class_hint(module: str, node: ast.ClassDef) -> tuple[Any, ...]:
    """A class as _compute_kwargs sees it: a dataclass (JSON), a dict subclass (a dict) or another
    class (not a builtin: a string)."""
    decorators = {
        ast.unparse(d.func if isinstance(d, ast.Call) else d).rpartition(".")[2] for d in node.decorator_list
    }
    if decorators & DATACLASS_DECORATORS:
        return ("dataclass", node.name)
    bases = {ast.unparse(b.value if isinstance(b, ast.Subscript) else b) for b in node.bases}
    if "dict" in bases and "TypedDict" not in bases:
        return ("builtin", "dict")
    return ("other", node.name)


def hints(module: str, a: ast.expr) -> frozenset[tuple[Any, ...]]:
    """The type hints of an annotation as vLLM's get_type_hints flattens them (Annotated and
    unions opened), each a tuple: ("builtin", name), ("none",), ("literal", values),
    ("list" | "set", element hints), ("tuple", element hints, has ...), ("dataclass", name),
    ("other", name)."""
    if isinstance(a, ast.Constant) and a.value is None:
        return frozenset({("none",)})
    if isinstance(a, ast.Constant) and isinstance(a.value, str):  # a forward reference
        return hints(module, ast.parse(a.value, mode="eval").body)
    if isinstance(a, ast.BinOp) and isinstance(a.op, ast.BitOr):
        return hints(module, a.left) | hints(module, a.right)
    if isinstance(a, ast.Subscript):
        base = ast.unparse(a.value).rpartition(".")[2]
        args = list(a.slice.elts) if isinstance(a.slice, ast.Tuple) else [a.slice]
        if base == "Annotated":
            return hints(module, args[0])
        if base == "Optional":
            return hints(module, args[0]) | {("none",)}
        if base == "Union":
            return frozenset().union(*(hints(module, x) for x in args))
        if base == "Literal":
            return frozenset({("literal", _literal_values(module, args))})
        if base in ("list", "List", "set", "Set"):
            return frozenset({(base.lower(), hints(module, args[0]))})
        if base in ("tuple", "Tuple"):
            ellipsis = any(isinstance(x, ast.Constant) and x.value is Ellipsis for x in args)
            return frozenset({("tuple", hints(module, args[0]), ellipsis or len(args))})
        if base in ("dict", "Dict"):
            return frozenset({("builtin", "dict")})
        if base == "type":
            return frozenset({("builtin", "type")})
        return frozenset({("other", base)})  # Callable[...], Mapping[...], …
    if isinstance(a, ast.Name):
        if a.id in BUILTINS:
            return frozenset({("builtin", a.id)})
        found = _resolve(module, a.id)
        if found is None:
            return frozenset({("other", a.id)})
        where, value = found
        if isinstance(value, ast.ClassDef):
            return frozenset({_class_hint(where, value)})
        th = hints(where, value)
        checked = _module(where).imports.get(a.id)  # type: ignore[union-attr]
        if th == {("builtin", "str")} and checked and (typed := _resolve(*checked)):
            # `if TYPE_CHECKING: from … import Methods` / `else: Methods = str`: argparse takes any
            # text and the config checks it against the Literal's values (and registered ones).
            literal = hints(*typed) if not isinstance(typed[1], ast.ClassDef) else frozenset()
            return th | {h for h in literal if h[0] == "literal"}
        return th
    return frozenset({("other", ast.unparse(a))})  # torch.dtype and the like


def _literal_values(module: str, args: list[ast.expr]) -> tuple[Any, ...]:
    """A Literal's values, nested Literals (by name) flattened as typing does."""
    out: list[Any] = []
    for x in args:
        if isinstance(x, ast.Constant):
            out.append(x.value)
        else:
            (inner,) = hints(module, x)
            assert inner[0] == "literal", ast.unparse(x)
            out += inner[1]
    return tuple(out)


def value(module: str, e: ast.expr) -> Any:
    """A default or a constant as Python data: literals, names of constants, an enum's member
    (its value), int(ssl.X); None for what vLLM computes (a factory of a config, a call)."""
    if isinstance(e, ast.Constant | ast.List | ast.Tuple | ast.Set | ast.Dict | ast.UnaryOp):
        try:
            return ast.literal_eval(e)
        except ValueError:
            return None
    if isinstance(e, ast.BinOp) and isinstance(e.op, ast.Mult | ast.Add | ast.Pow):
        left, right = value(module, e.left), value(module, e.right)
        if isinstance(left, int | float) and isinstance(right, int | float):
            return {ast.Mult: left * right, ast.Add: left + right, ast.Pow: left**right}[type(e.op)]
        return None
    if isinstance(e, ast.Name):
        found = _resolve(module, e.id)
        return value(found[0], found[1]) if found and not isinstance(found[1], ast.ClassDef) else None
    if isinstance(e, ast.Attribute) and isinstance(e.value, ast.Name):
        if e.value.id == "ssl":
            return getattr(ssl, e.attr)
        found = _resolve(module, e.value.id)
        if found and isinstance(found[1], ast.ClassDef):  # an enum's member
            for s in found[1].body:
                if isinstance(s, ast.Assign) and ast.unparse(s.targets[0]) == e.attr:
                    return value(found[0], s.value)
        return None
    if isinstance(e, ast.Call):
        f = ast.unparse(e.func)
        kw = {k.arg: k.value for k in e.keywords}
        if f == "int" and e.args:
            v = value(module, e.args[0])
            return None if v is None else int(v)
        if f in ("Field", "field", "PydanticField"):
            if "default" in kw:
                return value(module, kw["default"])
            if e.args:
                return value(module, e.args[0])
            factory = kw.get("default_factory")
            if isinstance(factory, ast.Name) and factory.id in ("list", "dict", "set"):
                return {"list": [], "dict": {}, "set": set()}[factory.id]
            if isinstance(factory, ast.Lambda):
                return value(module, factory.body)
            found = _resolve(module, factory.id) if isinstance(factory, ast.Name) else None
            if found and isinstance(found[1], ast.ClassDef) and _class_hint(*found) == ("builtin", "dict"):
                return {}  # an empty dict subclass (MultiModalDummyOptions)
    return None


# ---- what argparse is given ---------------------------------------------------------------------


class Argument(NamedTuple):
    options: list[str]
    kind: str
    default: Any
    choices: tuple[str, ...]
    open: bool
    source: str  # the file that defines it
    switch: str = ""  # "negatable" (BooleanOptionalAction) or "store" (store_true); "" takes a value


def _field_kwargs(module: str, cls: str, field: str, human: dict[str, str]) -> dict[str, Any]:
    """What _compute_kwargs gives a field of a config dataclass (or of its bases): kind, choices,
    openness, default, and the file that defines it."""
    found = _resolve(module, cls)
    assert found is not None and isinstance(found[1], ast.ClassDef), cls
    where, node = found
    for s in node.body:
        if isinstance(s, ast.AnnAssign) and isinstance(s.target, ast.Name) and s.target.id == field:
            th = hints(where, s.annotation)
            default = value(where, s.value) if s.value is not None else None
            out = {"default": default, "source": str(_module_path(where).relative_to(ROOT))} | _kind(
                th, field, human
            )
            return out
    for b in node.bases:
        base = ast.unparse(b)
        if _resolve(where, base) is not None:
            try:
                return _field_kwargs(where, base, field, human)
            except LookupError:
                pass
    raise LookupError(f"{cls}.{field}")


def _kind(th: frozenset[tuple[Any, ...]], name: str, human: dict[str, str]) -> dict[str, Any]:
    """_compute_kwargs' branches, in its order."""
    kinds = {h[0] for h in th}
    builtins = {h[1] for h in th if h[0] == "builtin"}
    literal = next((h[1] for h in th if h[0] == "literal"), None)
    collection = next((h for h in th if h[0] in ("tuple", "list", "set")), None)
    if "dataclass" in kinds:
        return {"kind": "json"}
    if th == {("builtin", "bool"), ("builtin", "str"), ("none",)}:
        return {"kind": "str_or_true"}
    if "bool" in builtins:
        return {"kind": "bool", "switch": "negatable"}
    if literal is not None:
        return {
            "kind": "choice",
            "choices": tuple(str(v) for v in sorted(literal)),
            "open": "str" in builtins,
        }
    if collection is not None:
        elem = collection[1]
        inner = next((h[1] for h in elem if h[0] == "literal"), None)
        return {"kind": "list", "choices": () if inner is None else tuple(str(v) for v in sorted(inner))}
    if "int" in builtins:
        return {"kind": human.get(name, "int")}
    if "float" in builtins:
        return {"kind": "float"}
    if "dict" in builtins and ("str" in builtins or kinds & {"other", "literal"}):
        return {"kind": "str_or_json"}
    if "dict" in builtins:
        return {"kind": "json"}
    if "str" in builtins or "other" in kinds:
        return {"kind": "str"}
    raise ValueError(f"unsupported type {th} for {name}")


def _human_readable_fields(module: str) -> dict[str, str]:
    """The int fields _compute_kwargs parses with human_readable_int (and max_model_len with
    human_readable_int_or_auto), read from its source."""
    m = _module(module)
    assert m is not None
    fn = next(
        n for n in ast.walk(ast.parse(m.path.read_text())) if getattr(n, "name", "") == "_compute_kwargs"
    )
    out = {"max_model_len": "human_int_or_auto"}
    for node in ast.walk(fn):
        if isinstance(node, ast.Assign) and ast.unparse(node.targets[0]) == "human_readable_int_args":
            out |= dict.fromkeys(ast.literal_eval(node.value), "human_int")
    return out


def _explicit(module: str, call: ast.Call, base: dict[str, Any]) -> dict[str, Any]:
    """An argument's kind, default and choices from add_argument's own keywords over `base`
    (the field's, when the call spreads one)."""
    out = dict(base)
    kw = {k.arg: k.value for k in call.keywords if k.arg is not None}
    if "default" in kw:
        d = ast.unparse(kw["default"])
        out["default"] = None if "SUPPRESS" in d else value(module, kw["default"])
        if d.startswith("AsyncEngineArgs."):
            out["default"] = False  # enable_log_requests: bool = False, AsyncEngineArgs' own field
    action = ast.unparse(kw.get("action", ast.Constant("")))
    if "BooleanOptionalAction" in action:
        out |= {"kind": "bool", "switch": "negatable"}
    elif "store_true" in action:
        out |= {"kind": "switch", "switch": "store", "default": out.get("default") or False}
    elif "choices" in kw:
        c = kw["choices"]
        if isinstance(c, ast.Call) and ast.unparse(c.func) == "get_args":
            (lit,) = hints(module, c.args[0])
            choices, is_open = tuple(str(v) for v in lit[1]), False
        elif isinstance(c, ast.BinOp):  # ["auto", "cpu"] + the platform's device type
            choices, is_open = tuple(ast.literal_eval(c.left)), True
        else:
            choices, is_open = tuple(ast.literal_eval(c)), False
        out |= {"kind": "choice", "choices": choices, "open": is_open}
    elif "type" in kw:
        t = ast.unparse(kw["type"])
        out["kind"] = {"int": "int", "float": "float"}.get(t, "str")
    elif "kind" not in out:
        out["kind"] = "str"
    return out


def _changes(
    fn: ast.FunctionDef, kwargs_of: dict[str, tuple[str, str | None]]
) -> dict[tuple[str, str], dict]:
    """What a function does to the kwargs get_kwargs gave before they reach add_argument:
    (config class, field) → {"type": its new type's text, "action": …, "default": …,
    "remove": [choices taken out], "nargs": deleted}."""
    out: dict[tuple[str, str], dict[str, Any]] = {}

    def target(e: ast.expr) -> tuple[tuple[str, str], str] | None:
        chain = []
        while isinstance(e, ast.Subscript) and isinstance(e.slice, ast.Constant):
            chain.insert(0, e.slice.value)
            e = e.value
        if not isinstance(e, ast.Name) or e.id not in kwargs_of:
            return None
        cls, field = kwargs_of[e.id]
        if field is None and chain:
            field, *chain = chain
        return ((cls, field), chain[0]) if field is not None and len(chain) == 1 else None

    for node in ast.walk(fn):
        if isinstance(node, ast.Assign) and (t := target(node.targets[0])):
            out.setdefault(t[0], {})[t[1]] = node.value
        elif isinstance(node, ast.Delete) and (t := target(node.targets[0])):
            out.setdefault(t[0], {})[t[1]] = None
        elif (
            isinstance(node, ast.Call)
            and getattr(node.func, "attr", "") == "remove"
            and (t := target(node.func.value))  # type: ignore[attr-defined]
        ):
            out.setdefault(t[0], {}).setdefault("remove", []).append(node.args[0])
    return out


def _apply(module: str, kw: dict[str, Any], change: dict[str, Any]) -> dict[str, Any]:
    """A field's kwargs after the changes the function made to them."""
    kw = dict(kw)
    for c in change.get("remove", []):
        kw["choices"] = tuple(x for x in kw["choices"] if x != value(module, c))
    if "type" in change:
        t = ast.unparse(change["type"])
        if "json.loads" in t:
            kw |= {"kind": "json", "choices": ()}
        elif t.startswith("lambda") and kw.get("choices"):
            pass  # normalizes the text (lower case, _ for -) before the choices are checked
        else:
            kw["kind"] = "list" if kw["kind"] == "list" else "str"
    if "nargs" in change and kw["kind"] == "list":
        kw["kind"] = "json" if "json.loads" in ast.unparse(change.get("type", ast.Constant(""))) else "str"
    if "action" in change and ast.unparse(change["action"]) == "'append'":
        kw["kind"] = "append"
    if "default" in change and "SUPPRESS" in ast.unparse(change["default"]):
        kw["default"] = None
    elif "default" in change:
        kw["default"] = value(module, change["default"])
    return kw


def _calls(module: str, fns: list[ast.FunctionDef], kwargs_of: dict, human: dict[str, str]) -> list[Argument]:
    """The arguments the add_argument calls of these functions register, in the source's order."""
    here = str(_module_path(module).relative_to(ROOT))
    changes: dict[tuple[str, str], dict] = {}
    for fn in fns:
        changes |= _changes(fn, kwargs_of)
    out = []
    for fn in fns:
        for call in ast.walk(fn):
            if not (isinstance(call, ast.Call) and getattr(call.func, "attr", "") == "add_argument"):
                continue
            options = [a.value for a in call.args if isinstance(a, ast.Constant)]
            assert len(options) == len(call.args), ast.unparse(call)
            if not options[0].startswith("-"):
                continue  # the positional model_tag
            base: dict[str, Any] = {}
            for k in call.keywords:
                if k.arg is not None:
                    continue
                given, extra = k.value, {}
                if isinstance(given, ast.Dict):  # **{**x_kwargs["field"], "default": …}
                    extra = {
                        ast.literal_eval(key): v
                        for key, v in zip(given.keys, given.values, strict=True)
                        if key
                    }
                    given = next(v for key, v in zip(given.keys, given.values, strict=True) if key is None)
                if isinstance(given, ast.Subscript):
                    cls, field = kwargs_of[ast.unparse(given.value)][0], ast.literal_eval(given.slice)
                else:
                    cls, field = kwargs_of[ast.unparse(given)]
                base = _apply(module, _field_kwargs(module, cls, field, human), changes.get((cls, field), {}))
                if "default" in extra:
                    base["default"] = value(module, extra["default"])
            kw = {"default": None, "choices": (), "open": False, "source": here, "switch": ""} | base
            kw = _explicit(module, call, kw)
            canonical = next(o for o in options if o.startswith("--"))
            options = [canonical, *(o for o in options if o != canonical)]
            out.append((call.lineno, Argument(options, **kw)))
    return [a for _, a in sorted(out, key=lambda x: x[0])]


def _add_cli_args(tree: ast.Module) -> list[ast.FunctionDef]:
    return [n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef) and n.name == "add_cli_args"]


def engine_arguments() -> list[Argument]:
    """EngineArgs.add_cli_args' and AsyncEngineArgs.add_cli_args' arguments."""
    module = "vllm.engine.arg_utils"
    fns = _add_cli_args(ast.parse(_module(module).path.read_text()))  # type: ignore[union-attr]
    kwargs_of: dict[str, tuple[str, str | None]] = {}  # x_kwargs = get_kwargs(XConfig)[...]
    for fn in fns:
        for node in ast.walk(fn):
            if isinstance(node, ast.Assign) and isinstance(node.targets[0], ast.Name):
                v, field = node.value, None
                if isinstance(v, ast.Subscript) and isinstance(v.slice, ast.Constant):
                    v, field = v.value, v.slice.value
                if isinstance(v, ast.Call) and getattr(v.func, "id", "") == "get_kwargs":
                    kwargs_of[node.targets[0].id] = (ast.unparse(v.args[0]), field)
                elif isinstance(v, ast.Name) and v.id in kwargs_of:
                    kwargs_of[node.targets[0].id] = (kwargs_of[v.id][0], field)
    return _calls(module, fns, kwargs_of, _human_readable_fields(module))


def frontend_arguments() -> list[Argument]:
    """make_arg_parser's own arguments, then FrontendArgs' fields (BaseFrontendArgs' first, as
    dataclasses.fields orders them), each as `--<field>` after _customize_cli_kwargs' changes."""
    module = "vllm.entrypoints.common.cli_args"
    m = _module(module)
    assert m is not None
    here = str(m.path.relative_to(ROOT))
    tree = ast.parse(m.path.read_text())
    make = next(n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "make_arg_parser")
    out = _calls(module, [make], {}, {})
    human = _human_readable_fields("vllm.engine.arg_utils")
    for cls in ("BaseFrontendArgs", "FrontendArgs"):
        node = m.classes[cls]
        custom = next(
            n for n in node.body if isinstance(n, ast.FunctionDef) and n.name == "_customize_cli_kwargs"
        )
        changes = _changes(custom, {"frontend_kwargs": (cls, None)})
        for s in node.body:
            if isinstance(s, ast.AnnAssign) and isinstance(s.target, ast.Name):
                field = s.target.id
                kw = _field_kwargs(module, cls, field, human) | {"source": here}
                kw = {"choices": (), "open": False, "switch": ""} | _apply(
                    module, kw, changes.get((cls, field), {})
                )
                out.append(Argument([f"--{field.replace('_', '-')}"], **kw))
    # argparse's own, on the subparser vllm/entrypoints/cli/serve.py adds
    out.append(
        Argument(["--help", "-h"], "switch", None, (), False, "vllm/entrypoints/cli/serve.py", "store")
    )
    return out


def option_strings(a: Argument) -> list[str]:
    """Every option string argparse registers for the argument: a BooleanOptionalAction's --no-x,
    and EnableDisableAction's --disable-x for --enable-x (and --enable-x for --disable-x)."""
    if a.switch != "negatable":
        return a.options
    negated = [f"--no-{o[2:]}" for o in a.options if o.startswith("--")]
    inverse = {"--enable-": "--disable-", "--disable-": "--enable-"}
    inverses = [inverse[p] + o.removeprefix(p) for o in a.options for p in inverse if o.startswith(p)]
    return [*a.options, *negated, *inverses]


def main(root: str, which: str = "engine") -> None:
    global ROOT
    ROOT = Path(root)
    engine, frontend = engine_arguments(), frontend_arguments()
    every = [o for a in engine + frontend for o in option_strings(a)]
    assert len(every) == len(set(every)), "an option string registered twice"
    print(HEADERS[which])
    for a in {"engine": engine, "frontend": frontend, "types": engine + frontend}[which]:
        if which == "types":
            default = a.default
            if a.kind in ("json", "str_or_json") and not isinstance(default, str | None):
                default = json.dumps(default)
            elif isinstance(default, set | tuple):
                default = sorted(default)
            fields = [a.options[0], a.kind, json.dumps(default), json.dumps(list(a.choices))]
            print("\t".join([*fields, "open" if a.open else "closed", a.source]))
        else:
            print(" ".join([*option_strings(a), "switch" if a.switch else "value"]))


if __name__ == "__main__":
    main(*sys.argv[1:])
