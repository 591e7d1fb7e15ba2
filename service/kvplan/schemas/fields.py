"""The fields of a request type as msgspec sees them, nested Structs included: which names each
object takes (for "did you mean" answers to a misspelt one) and which hold an integer (for the
query strings' suffixes)."""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass
from functools import cache
from typing import Any

import msgspec
from msgspec import inspect as mi

from kvplan.core.errors import UnknownName

Path = tuple[str, ...]
_UNKNOWN = "Object contains unknown field `"
_AT = "` - at `$"
_INDEX = re.compile(r"\[[0-9]+\]")
_ENUM = "Invalid enum value "


@dataclass(frozen=True)
class RequestFields:
    names_at: dict[Path, tuple[str, ...]]  # the field names of the object at each path
    integers: frozenset[Path]  # the paths that hold an integer
    choices: dict[Path, tuple[str, ...]]  # the values a closed set (a Literal, an Enum) takes


@cache
def request_fields(t: type) -> RequestFields:
    """The names each object of `t` takes, the paths that hold an integer, and the values each
    closed set (Literal, Enum) takes, walked once per type through msgspec's type info."""
    names: dict[Path, list[str]] = {}
    integers: set[Path] = set()
    choices: dict[Path, list[str]] = {}

    def walk(info: Any, path: Path, seen: frozenset[type]) -> None:
        if isinstance(info, mi.Metadata):  # an Annotated type: its constraints around the type
            walk(info.type, path, seen)
        elif isinstance(info, mi.UnionType):
            for u in info.types:
                walk(u, path, seen)
        elif isinstance(info, mi.IntType):
            integers.add(path)
        elif isinstance(info, mi.LiteralType):
            choices.setdefault(path, []).extend(str(v) for v in info.values)
        elif isinstance(info, mi.EnumType):
            choices.setdefault(path, []).extend(str(m.value) for m in info.cls)
        elif isinstance(info, mi.ListType | mi.SetType | mi.FrozenSetType | mi.VarTupleType):
            walk(info.item_type, path, seen)  # an item's fields sit under its list's path
        elif isinstance(info, mi.StructType) and info.cls not in seen:
            at = names.setdefault(path, [])
            for f in info.fields:
                at.append(f.encode_name)
                walk(f.type, (*path, f.encode_name), seen | {info.cls})

    walk(mi.type_info(t), (), frozenset())
    return RequestFields(
        {p: tuple(dict.fromkeys(n)) for p, n in names.items()},
        frozenset(integers),
        {p: tuple(dict.fromkeys(c)) for p, c in choices.items()},
    )


def unknown_field(exc: msgspec.ValidationError, t: type) -> UnknownName | None:
    """A misspelt field as a 400 that names it and the closest field the object at its path
    takes (none for a name nothing resembles); a value outside a closed set likewise, with the
    values it takes; None for any other validation error."""
    message = str(exc)
    if message.startswith(_ENUM):
        return _unknown_value(message[len(_ENUM) :], t)
    if not message.startswith(_UNKNOWN):
        return None
    key, _, at = (
        message[len(_UNKNOWN) :].rpartition(_AT) if _AT in message else (message[len(_UNKNOWN) :], "", "")
    )
    key, at = key.rstrip("`"), at.rstrip("`").lstrip(".")
    path = tuple(p for p in _INDEX.sub("", at).split(".") if p)
    valid = request_fields(t).names_at.get(path, ())
    near = difflib.get_close_matches(key, [n for n in valid if n != key], n=1, cutoff=0.6)
    return UnknownName(f"{at}.{key}" if at else key, "field", key, valid, tuple(near))


def _unknown_value(rest: str, t: type) -> UnknownName | None:
    """`' marlin' - at `$.moe_backend``: the value, and the values its path takes (the closest
    first: a case or a stray space is the usual slip)."""
    raw, _, at = rest.rpartition(" - at `$")
    if not raw:
        return None
    at = at.rstrip("`").lstrip(".")
    value = raw[1:-1] if len(raw) >= 2 and raw[0] == raw[-1] == "'" else raw
    valid = request_fields(t).choices.get(tuple(p for p in _INDEX.sub("", at).split(".") if p), ())
    if not valid:
        return None
    folded = {v.lower(): v for v in valid}
    key = value.strip().lower()
    close = [key] if key in folded else difflib.get_close_matches(key, list(folded), n=3, cutoff=0.6)
    near = [folded[k] for k in close]
    if any("," in v or " " in v for v in valid):  # "namespace,deployment": quoted, to read the list
        valid, near = tuple(f'"{v}"' for v in valid), [f'"{v}"' for v in near]
    return UnknownName(at or "body", "value", value, valid, tuple(near))
