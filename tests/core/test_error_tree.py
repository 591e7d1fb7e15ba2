"""Every error the core raises is defined in core/errors.py, and that module's docstring draws
the tree as it is: each class under its nearest base."""

from __future__ import annotations

import importlib
import pkgutil
import re
from types import ModuleType

import kvplan.core
from kvplan.core import errors


def core_modules() -> list[ModuleType]:
    return [
        importlib.import_module(m.name) for m in pkgutil.walk_packages(kvplan.core.__path__, "kvplan.core.")
    ]


def defined_errors(module: ModuleType) -> dict[str, type[BaseException]]:
    return {
        name: obj
        for name, obj in vars(module).items()
        if isinstance(obj, type) and issubclass(obj, BaseException) and obj.__module__ == module.__name__
    }


def test_every_public_error_class_of_the_core_is_defined_in_core_errors():
    # A private control-flow signal that never leaves its module (hf/params.py) may stay there.
    elsewhere = [
        f"{m.__name__}.{name}"
        for m in core_modules()
        if m is not errors
        for name in defined_errors(m)
        if not name.startswith("_")
    ]
    assert elsewhere == []


def test_the_docstring_draws_every_core_error_under_its_nearest_base():
    classes = defined_errors(errors)
    drawn: dict[str, str | None] = {}
    stack: list[tuple[int, str]] = []
    for line in (errors.__doc__ or "").splitlines():
        m = re.match(r"( +)([A-Z]\w+)\b", line)
        if not m or m.group(2) not in classes:
            continue
        depth = len(m.group(1))
        while stack and stack[-1][0] >= depth:
            stack.pop()
        drawn[m.group(2)] = stack[-1][1] if stack else None
        stack.append((depth, m.group(2)))
    actual = {
        name: next((b.__name__ for b in cls.__mro__[1:] if b.__name__ in classes), None)
        for name, cls in classes.items()
    }
    assert drawn == actual
