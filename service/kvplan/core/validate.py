"""The rules for what a caller or a file gives the core, for GET and POST alike, in one place.

One integer rule (`integer`): an integer is a Python int (not a bool, not a float such as 8192.0
or 1e3, which JSON, query strings and config files would smuggle in as "close enough"), within
named bounds. The wire schemas state the same bounds as msgspec constraints (schemas/, from the
core's own types), so a request's numbers are refused at decoding; the core applies the rule at
its own entries (compute_budget, the config reader, the presets) for values that reach it another
way. A ratio is a finite float within its range (`utilization`).

`Input` is the one base of every struct a caller's JSON decodes into: frozen, unknown fields
refused."""

from __future__ import annotations

import math
from typing import NamedTuple

import msgspec

from .errors import InvalidInput


class Input(msgspec.Struct, frozen=True, forbid_unknown_fields=True, kw_only=True):
    """The msgspec options every request struct shares: a misspelt field is an error (a 400 that
    names it and the closest field), never silently ignored; a decoded request cannot change.
    (A subclass inherits both; msgspec applies kw_only to a class's own fields only, so a struct
    with a required field after an optional one says kw_only=True itself.)"""


class Wording(NamedTuple):
    """How a broken integer rule reads. Answers are compared byte for byte across releases, so
    each entry keeps the words its answers have always used; the rule itself is the same."""

    not_integer: str
    negative: str  # below the minimum and below 0
    below: str  # below the minimum, not negative
    above: str


# A setting of a request (the budget's inputs, a sweep's values).
SETTING = Wording(
    not_integer="must be an integer, got {value!r}",
    negative="must not be negative, got {value}",
    below="must be at least {minimum}",
    above="must be at most {maximum}, got {value}",
)
# A count read from a model's config or its inline geometry (core/model/geometry.py, core/hf/).
COUNT = Wording(
    not_integer="must be a positive integer, got {value!r}",
    negative="must be at least 1, got {value}",
    below="must be at least 1, got {value}",
    above="must be at most {maximum}, got {value}",
)
# A parallel size (core/kv/parallel.py).
SIZE = Wording(
    not_integer="must be a positive integer, got {value!r}",
    negative="must be a positive integer, got {value!r}",
    below="must be a positive integer, got {value!r}",
    above="must be at most {maximum}, got {value}",
)


def integer(
    value: object,
    field: str,
    maximum: float,
    minimum: int = 0,
    err: type[InvalidInput] = InvalidInput,
    wording: Wording = SETTING,
) -> int:
    """`value` when it is an int (not a bool) from `minimum` to `maximum` (math.inf: no upper
    bound); else `err` naming `field`, worded as `wording` says."""
    if type(value) is not int:
        raise err(field, wording.not_integer.format(value=value))
    if value < minimum:
        said = wording.negative if value < 0 else wording.below
        raise err(field, said.format(value=value, minimum=minimum))
    if value > maximum:
        raise err(field, wording.above.format(value=value, maximum=maximum))
    return value


def non_negative_int(value: object, field: str, maximum: int) -> int:
    return integer(value, field, maximum, 0)


def positive_int(value: object, field: str, maximum: int) -> int:
    return integer(value, field, maximum, 1)


def utilization(value: object, field: str = "gpu_memory_utilization") -> float:
    """A share of GPU memory in (0, 1]."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise InvalidInput(field, f"must be a number, got {value!r}")
    u = float(value)
    if not math.isfinite(u) or not 0.0 < u <= 1.0:
        raise InvalidInput(field, f"must be above 0 and at most 1, got {value!r}")
    return u
