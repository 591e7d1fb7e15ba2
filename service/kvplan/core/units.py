"""Binary units and exact integer helpers. GiB is 1024³ everywhere."""

from __future__ import annotations

KiB = 1024
MiB = 1024**2
GiB = 1024**3


def cdiv(a: int, b: int) -> int:
    """Ceiling division of non-negative ints, as vLLM's `cdiv`."""
    return -(-a // b)


# Every GiB figure a person reads has this many decimals: the precision vLLM's own logs print
# memory with ("Available KV cache memory: 51.40 GiB"), so a figure reads against the log's. Where
# a figure must be exact, the bytes stand beside it.
GIB_DECIMALS = 2


def gib(n: int | float) -> str:
    """Bytes as GiB, the number alone (for a column headed GiB): "51.40"."""
    return f"{n / GiB:,.{GIB_DECIMALS}f}"


def fmt_gib(n: int | float) -> str:
    """Bytes as GiB with the unit: "51.40 GiB"."""
    return f"{gib(n)} GiB"


def fmt_bytes(n: int | float) -> str:
    """Human-readable binary size: GiB as `fmt_gib`; MiB and KiB whole where the value is a round
    number of units, else to the same two decimals."""
    a = abs(n)
    if a >= GiB:
        return fmt_gib(n)
    for unit, size in (("MiB", MiB), ("KiB", KiB)):
        if a >= size:
            v = n / size
            return f"{v:,.0f} {unit}" if v == int(v) else f"{v:,.{GIB_DECIMALS}f} {unit}"
    return f"{n:,} B" if isinstance(n, int) else f"{n:,.2f} B"
