"""The one rule for numbers a caller sends, for GET and POST alike: integers are Python ints
(not bools, not floats such as 8192.0 or 1e3, which JSON and query strings would smuggle in as
"close enough"), within a named limit; ratios are finite floats within their range."""

from __future__ import annotations

import math

from .errors import InvalidInput


def non_negative_int(value: object, field: str, maximum: int) -> int:
    if type(value) is not int:
        raise InvalidInput(field, f"must be an integer, got {value!r}")
    if value < 0:
        raise InvalidInput(field, f"must not be negative, got {value}")
    if value > maximum:
        raise InvalidInput(field, f"must be at most {maximum}, got {value}")
    return value


def positive_int(value: object, field: str, maximum: int) -> int:
    if non_negative_int(value, field, maximum) == 0:
        raise InvalidInput(field, "must be at least 1")
    return value  # type: ignore[return-value]


def utilization(value: object, field: str = "gpu_memory_utilization") -> float:
    """A share of GPU memory in (0, 1]."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise InvalidInput(field, f"must be a number, got {value!r}")
    u = float(value)
    if not math.isfinite(u) or not 0.0 < u <= 1.0:
        raise InvalidInput(field, f"must be in (0, 1], got {value!r}")
    return u
