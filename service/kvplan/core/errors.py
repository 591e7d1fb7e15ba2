"""Errors the core raises. Each names the input field it is about.

Hierarchy:
    KvplanError              every error the core raises
      InvalidInput           a value is out of range or inconsistent (field, reason)
        InvalidLayout        a parallel layout the model's heads cannot take
        InvalidConfig        a Hugging Face config.json that cannot be interpreted
      UnknownName            a name that is not in a closed set (profile, dtype)
        UnknownPreset        a model or GPU preset id the registry does not hold (HTTP 404)
    WorkStopped              the caller's should_stop() said stop (deadline, client gone): HTTP 503
    InternalInconsistency    an answer broke an invariant: a defect, HTTP 500
"""

from __future__ import annotations


class KvplanError(Exception):
    """Base of every error raised by the core."""

    field: str
    reason: str

    def __init__(self, field: str, reason: str) -> None:
        super().__init__(f"{field}: {reason}")
        self.field = field
        self.reason = reason


class InvalidInput(KvplanError):
    """A value is out of range, of the wrong kind, or inconsistent with another."""


class InvalidLayout(InvalidInput):
    """A tensor/pipeline/context-parallel layout that vLLM would reject."""


class InvalidConfig(InvalidInput):
    """A Hugging Face config.json that cannot be turned into a geometry."""


class UnknownName(KvplanError):
    """A name outside a closed set; `valid` lists what is accepted, `suggestions` the close ones."""

    kind: str
    name: str
    valid: tuple[str, ...]
    suggestions: tuple[str, ...]

    def __init__(
        self,
        field: str,
        kind: str,
        name: str,
        valid: tuple[str, ...],
        suggestions: tuple[str, ...] = (),
    ) -> None:
        if suggestions:
            hint = "did you mean " + ", ".join(suggestions) + "?"
        elif len(valid) <= 20:
            hint = "valid: " + ", ".join(valid)
        else:
            hint = f"{len(valid)} are known"
        super().__init__(field, f"unknown {kind} {name!r}; {hint}")
        self.kind = kind
        self.name = name
        self.valid = valid
        self.suggestions = suggestions


class UnknownPreset(UnknownName):
    """A model or GPU id the preset registry does not hold: a missing resource, not a bad value."""


class InternalInconsistency(Exception):
    """An answer broke an invariant (budget/invariants.py): a bug, never the caller's fault.
    Deliberately not a KvplanError, so it maps to a 500 that is logged and counted."""

    def __init__(self, what: str, failures: list[str]) -> None:
        super().__init__(f"{what}: " + "; ".join(failures))
        self.failures = failures


class WorkStopped(Exception):
    """Long work (a simulation, a batch) polls a should_stop() the caller passes in; when it turns
    true the work raises this: no answer, through no fault of the input."""

    def __init__(self, reason: str = "stopped") -> None:
        super().__init__(reason)
        self.reason = reason
