"""The ledger: every figure with its formula, inputs, value, unit and vLLM source."""

from __future__ import annotations

import msgspec

# float admits ints (exact: Python ints stay ints when encoded); one JSON number type, no overlap.
Scalar = float | str | bool | None


# gc=False here and below: a value that cannot be in a cycle (see core/budget/types.py).
class Step(msgspec.Struct, frozen=True, gc=False):
    name: str
    formula: str
    inputs: dict[str, Scalar]
    value: Scalar
    unit: str
    source: str


class LedgerBuilder:
    """Collects steps in order; `build()` freezes them."""

    __slots__ = ("_steps",)

    def __init__(self) -> None:
        self._steps: list[Step] = []

    def add(
        self,
        name: str,
        formula: str,
        value: Scalar,
        unit: str,
        source: str = "",
        **inputs: Scalar,
    ) -> None:
        self._steps.append(Step(name, formula, inputs, value, unit, source))

    def build(self) -> tuple[Step, ...]:
        return tuple(self._steps)
