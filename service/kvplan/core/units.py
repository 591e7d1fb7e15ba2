"""Binary units and exact integer helpers. GiB is 1024³ everywhere."""

from __future__ import annotations

KiB = 1024
MiB = 1024**2
GiB = 1024**3


def cdiv(a: int, b: int) -> int:
    """Ceiling division of non-negative ints, as vLLM's `cdiv`."""
    return -(-a // b)


def fmt_bytes(n: int | float) -> str:
    """Human-readable binary size, exact where the value is a round number of units."""
    a = abs(n)
    for unit, size in (("GiB", GiB), ("MiB", MiB), ("KiB", KiB)):
        if a >= size:
            v = n / size
            return f"{v:,.0f} {unit}" if v == int(v) else f"{v:,.4f}".rstrip("0") + f" {unit}"
    return f"{n:,} B" if isinstance(n, int) else f"{n:,.2f} B"
