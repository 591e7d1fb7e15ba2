"""key=value pairs (GET query strings, CLI arguments) into a request type, under the same rules
as a JSON body: an integer field takes digits only (8192.0, 1e3 and '²' are not integers, as
they are not in a POST body), lists are comma-separated, nested fields are dotted. One
convenience a body does not have: an integer field reads a size as `vllm serve` reads
--max-model-len (32k = 32,000; 32K = 32,768; 25.6k = 25,600; 80G = 80 × 1024³)."""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any, TypeVar

import msgspec

from kvplan.core.engine.flags import human_readable_int
from kvplan.core.errors import InvalidInput
from kvplan.core.limits import MAX_NAME_LENGTH, MAX_QUERY_DEPTH
from kvplan.schemas import request_fields, unknown_field

T = TypeVar("T")
RESERVED = frozenset({"format", "explain", "width"})
LIST_FIELDS = frozenset({"kv_cache_dtype_skip_layers", "cudagraph_capture_sizes", "lora_target_modules"})
# Up to 30 digits: past int64 a figure is refused by its field's bound, and Python's int() of
# thousands of digits would be slow or raise.
_INTEGER = re.compile(r"-?[0-9]{1,30}\Z", re.ASCII)
# A size as vLLM writes one (core/engine/flags.py human_readable_int reads it), in ASCII digits.
_HUMAN = re.compile(r"([0-9]{1,30}(?:\.[0-9]{1,30})?)([kKmMgGtT])\Z", re.ASCII)
_NOT_BOOL = "Expected `bool`, got `str`"


def integer_text(value: str, key: str) -> str:
    """An integer field's value in digits: as given, or as vLLM's human_readable_int reads it
    (its float product for a decimal suffix, as vLLM computes it; no decimals with a binary one)."""
    human = _HUMAN.match(value)
    if human:
        number, suffix = human.groups()
        if suffix.isupper() and "." in number:
            raise InvalidInput(
                key, f"decimals are not allowed with the binary suffix {suffix}; {number}{suffix.lower()}?"
            )
        return str(human_readable_int(value))
    if value == "null" or _INTEGER.match(value):
        return value
    raise InvalidInput(
        key,
        f"must be an integer in digits or with vLLM's suffixes (32k = 32,000; 32K = 32,768), "
        f"got {value[:40]!r}",
    )


def decode_pairs(pairs: Iterable[tuple[str, str]], t: type[T]) -> T:
    """The request of type `t` the pairs spell, decoded by the wire's own rules (msgspec, not
    strict: numbers come as text). One rule for GET query strings and the CLI's arguments: a
    dotted key is a nested field, the last of a repeated key wins (a list field gathers them
    all, comma-separated), an integer field's text is checked as an integer, the presentation
    keys (RESERVED) are skipped. An over-long or over-deep name and a key clashing with a nested
    one are refused naming the key, an unknown field naming the closest one (unknown_field)."""
    grouped: dict[str, list[str]] = {}
    for key, value in pairs:
        grouped.setdefault(key, []).append(value)
    data: dict[str, Any] = {}
    integers = request_fields(t).integers
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
            if parts in integers:
                value = integer_text(value, key)
        node = data
        for part in parts[:-1]:
            child = node.setdefault(part, {})
            if not isinstance(child, dict):
                raise InvalidInput(key, f"conflicts with parameter {part}")
            node = child
        if isinstance(node.get(parts[-1]), dict):
            raise InvalidInput(key, "conflicts with nested parameters")
        node[parts[-1]] = value
    try:
        return msgspec.convert(data, t, strict=False)
    except msgspec.ValidationError as e:
        text = str(e)
        if text.startswith(_NOT_BOOL) and " - at `$." in text:  # every query value is text: say which
            at = text.rpartition(" - at `$.")[2].rstrip("`")
            raise InvalidInput(at, "must be true or false (or 1, 0)") from None
        raise unknown_field(e, t) or e from None
