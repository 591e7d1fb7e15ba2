"""The service answers every request of tests/replay/recording.jsonl.gz exactly as the code it was
recorded against did (commit 97a9f16, before the refactor of the service's modules): the same
status, content type, response headers and body, byte for byte. What the recording covers, how it
is made and what is normalised: tests/replay/record.py and harness.py.

A behaviour change meant on purpose is recorded anew, against the code that makes it:
`PYTHONPATH=service:. .venv/bin/python -m tests.replay.record`."""

from __future__ import annotations

from typing import Any

import pytest


def test_every_recorded_request_answers_byte_identically(replayed_recording: dict[str, Any]) -> None:
    """Replayed in a process of its own (compare.py), started as soon as the session knew it would
    run this test."""
    requests = replayed_recording["requests"]
    assert requests >= 2000, f"the recording holds {requests} requests; record it anew"
    if replayed_recording["report"]:
        pytest.fail(replayed_recording["report"], pytrace=False)
