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


@dataclass(frozen=True)
class RequestFields:
    names_at: dict[Path, tuple[str, ...]]  # the field names of the object at each path
    integers: frozenset[Path]  # the paths that hold an integer


@cache
def request_fields(t: type) -> RequestFields:
    names: dict[Path, list[str]] = {}
    integers: set[Path] = set()

    def walk(info: Any, path: Path, seen: frozenset[type]) -> None:
        if isinstance(info, mi.Metadata):  # an Annotated type: its constraints around the type
            walk(info.type, path, seen)
        elif isinstance(info, mi.UnionType):
            for u in info.types:
                walk(u, path, seen)
        elif isinstance(info, mi.IntType):
            integers.add(path)
        elif isinstance(info, mi.ListType | mi.SetType | mi.FrozenSetType | mi.VarTupleType):
            walk(info.item_type, path, seen)  # an item's fields sit under its list's path
        elif isinstance(info, mi.StructType) and info.cls not in seen:
            at = names.setdefault(path, [])
            for f in info.fields:
                at.append(f.encode_name)
                walk(f.type, (*path, f.encode_name), seen | {info.cls})

    walk(mi.type_info(t), (), frozenset())
    return RequestFields({p: tuple(dict.fromkeys(n)) for p, n in names.items()}, frozenset(integers))


def unknown_field(exc: msgspec.ValidationError, t: type) -> UnknownName | None:
    """A misspelt field as a 400 that names it and the closest field the object at its path
    takes (none for a name nothing resembles); None for any other validation error."""
    message = str(exc)
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
