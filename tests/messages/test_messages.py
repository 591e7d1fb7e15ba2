"""The warnings' codes, severities and texts: documented, and written as a person would say them."""

from __future__ import annotations

import msgspec
import pytest

from kvplan.core import warnings as w
from tests.messages.document import DOC, document, error_texts
from tests.replay.harness import RECORDING, decode_bytes, read_recording


def test_the_messages_document_is_current():
    assert DOC.read_text() == document(), "run: python -m tests.messages.document"


def test_every_warning_code_has_one_severity():
    assert set(w.SEVERITY) == set(w.CODES)
    assert set(w.SEVERITY.values()) <= set(w.Severity)


@pytest.mark.parametrize("code", sorted(w.CODES))
def test_a_warning_carries_its_codes_severity_whatever_it_was_given(code):
    warning = w.Warning(
        code, "text", w.Severity.INFO if w.SEVERITY[code] is w.Severity.WARNING else w.Severity.WARNING
    )
    assert warning.severity is w.SEVERITY[code]
    assert msgspec.json.decode(msgspec.json.encode(warning))["severity"] == w.SEVERITY[code].value


def nesting(text: str) -> int:
    """How deep the text's parentheses go; -1 when they do not balance."""
    depth = deepest = 0
    for ch in text:
        depth += {"(": 1, ")": -1}.get(ch, 0)
        if depth < 0:
            return -1
        deepest = max(deepest, depth)
    return deepest if depth == 0 else -1


@pytest.mark.parametrize("code, text", sorted(w.CODES.items()))
def test_a_warnings_summary_does_not_start_with_a_code_nor_nest_parentheses(code, text):
    said = text.lower()
    assert not any(said.startswith((c, c.replace("_", " "))) for c in w.CODES), "starts with a code"
    assert nesting(text) in (0, 1), "parentheses unbalanced or nested"


@pytest.mark.parametrize(
    "text, depth", [("plain", 0), ("one (aside)", 1), ("nested (a (b))", 2), ("open (", -1), (") closed", -1)]
)
def test_the_nesting_rule_sees_nested_and_unbalanced_parentheses(text, depth):
    assert nesting(text) == depth


@pytest.mark.parametrize("e", error_texts(), ids=lambda e: f"{e.where}:{e.error}")
def test_an_error_text_does_not_start_with_a_code_nor_nest_parentheses(e):
    said = e.text.lower()
    assert not any(said.startswith((c, c.replace("_", " "))) for c in w.CODES), "starts with a code"
    assert nesting(e.text.replace("{…}", "")) in (0, 1), "parentheses unbalanced or nested"


def recorded_messages() -> list[str]:
    """Every warning message and error detail the replay recording holds, as answered."""
    out: set[str] = set()

    def walk(x: object) -> None:
        if isinstance(x, dict):
            if isinstance(x.get("message"), str) and "code" in x:
                out.add(x["message"])
            if isinstance(x.get("detail"), str) and "status" in x:
                out.add(x["detail"])
            for v in x.values():
                walk(v)
        elif isinstance(x, list):
            for v in x:
                walk(v)

    for record in read_recording(RECORDING):
        body = decode_bytes(record.get("response_body"))
        if body and body[:1] in (b"{", b"["):
            walk(msgspec.json.decode(body))
    return sorted(out)


def test_every_message_kvplan_answered_with_keeps_the_rules():
    broken = [m for m in recorded_messages() if nesting(m) not in (0, 1)]
    assert broken == []
