"""docs/vllm-flags.md lists every flag as the parser's table has it, not as it once did."""

from __future__ import annotations

from tests.engine.document import DOC, render


def test_the_flags_document_is_current():
    assert DOC.read_text() == render(), "run: python -m tests.engine.document"
