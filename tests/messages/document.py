"""docs/messages.md, generated from the code: every warning code with its severity and what it
means, so the list stays current (tests/messages/test_messages.py checks it).

    .venv/bin/python -m tests.messages.document     # rewrite docs/messages.md
"""

from __future__ import annotations

from pathlib import Path

from kvplan.core import warnings as w

DOC = Path(__file__).resolve().parents[2] / "docs" / "messages.md"

HEAD = """# Messages

Generated from the code by `python -m tests.messages.document`; a test fails when it is stale.

## Warnings

Every answer's `warnings` are `{code, message, severity}`. Codes are stable and never change
meaning; a code's severity is stated once, in `core/warnings.py`:

- `info`: how a figure was obtained, or what vLLM did with it. The plan holds as asked.
- `warning`: the plan may not hold as asked. Check it before you rely on it.

Errors are not warnings: they are 4xx answers naming the field and the reason.

| code | severity | what it means |
|---|---|---|
"""


def document() -> str:
    """The text of docs/messages.md: the warning codes in their order in core/warnings.py."""
    rows = [f"| `{code}` | {w.SEVERITY[code].value} | {text} |" for code, text in w.CODES.items()]
    return HEAD + "\n".join(rows) + "\n"


if __name__ == "__main__":
    DOC.write_text(document())
    print(f"wrote {DOC}")
