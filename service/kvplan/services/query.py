"""key=value pairs (GET query strings, CLI arguments) into a request type, under the same rules
as a JSON body: an integer field takes digits only (8192.0, 1e3 and '²' are not integers, as
they are not in a POST body), lists are comma-separated, nested fields are dotted. One
convenience a body does not have: an integer field takes a binary K, M or G suffix, as people
type context lengths and sizes (8k = 8,192; 128K = 131,072; 80G = 80 × 1024³)."""

from __future__ import annotations

import re
from collections.abc import Iterable
from functools import cache
from typing import Any, TypeVar

import msgspec
from msgspec import inspect as mi

from kvplan.core.errors import InvalidInput
from kvplan.core.limits import MAX_NAME_LENGTH, MAX_QUERY_DEPTH

T = TypeVar("T")
RESERVED = frozenset({"format", "explain", "width"})
LIST_FIELDS = frozenset({"kv_cache_dtype_skip_layers"})
_INTEGER = re.compile(r"-?[0-9]+\Z", re.ASCII)
_SUFFIXED = re.compile(r"([0-9]+)([kKmMgG])\Z", re.ASCII)
_SUFFIX = {"k": 1 << 10, "m": 1 << 20, "g": 1 << 30}


@cache
def _integer_fields(t: type) -> frozenset[tuple[str, ...]]:
    """The (dotted) fields of t that hold an integer, nested Structs included."""
    out: set[tuple[str, ...]] = set()

    def walk(info: Any, path: tuple[str, ...], seen: frozenset[type]) -> None:
        if isinstance(info, mi.Metadata):
            walk(info.type, path, seen)
        elif isinstance(info, mi.UnionType):
            for u in info.types:
                walk(u, path, seen)
        elif isinstance(info, mi.IntType):
            out.add(path)
        elif isinstance(info, mi.StructType) and info.cls not in seen:
            for f in info.fields:
                walk(f.type, (*path, f.encode_name), seen | {info.cls})

    walk(mi.type_info(t), (), frozenset())
    return frozenset(out)


def _integer_text(value: str, key: str) -> str:
    """An integer field's value in digits: as given, or with its K, M or G suffix multiplied out."""
    suffixed = _SUFFIXED.match(value)
    if suffixed:
        return str(int(suffixed.group(1)) * _SUFFIX[suffixed.group(2).lower()])
    if not _INTEGER.match(value):
        raise InvalidInput(
            key, f"must be an integer written in digits (or with K, M, G: 8k = 8,192), got {value[:40]!r}"
        )
    return value


def decode_pairs(pairs: Iterable[tuple[str, str]], t: type[T]) -> T:
    grouped: dict[str, list[str]] = {}
    for key, value in pairs:
        grouped.setdefault(key, []).append(value)
    data: dict[str, Any] = {}
    scalars: dict[tuple[str, ...], str] = {}
    for key, values in grouped.items():
        if key in RESERVED:
            continue
        if len(key) > MAX_NAME_LENGTH or key.count(".") > MAX_QUERY_DEPTH:
            raise InvalidInput(key[:60], "query parameter name too long or too deep")
        value: Any
        parts = tuple(key.split("."))
        if key in LIST_FIELDS:
            items = [v.strip() for raw in values for v in raw.split(",") if v.strip()]
            value = [int(v) if _INTEGER.match(v) else v for v in items]
        else:
            value = values[-1]
            if parts in _integer_fields(t):
                value = _integer_text(value, key)
            scalars[parts] = value
        node = data
        for part in parts[:-1]:
            child = node.setdefault(part, {})
            if not isinstance(child, dict):
                raise InvalidInput(key, f"conflicts with parameter {part}")
            node = child
        if isinstance(node.get(parts[-1]), dict):
            raise InvalidInput(key, "conflicts with nested parameters")
        node[parts[-1]] = value
    decoded = msgspec.convert(data, t, strict=False)
    for parts, raw in scalars.items():
        got = _lookup(decoded, parts)
        if type(got) is int and not _INTEGER.match(raw):
            raise InvalidInput(".".join(parts), f"must be an integer written in digits, got {raw[:40]!r}")
    return decoded


def _lookup(value: Any, parts: tuple[str, ...]) -> Any:
    for part in parts:
        value = getattr(value, part, None)
    return value
