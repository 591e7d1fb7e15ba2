"""The recording replayed and compared, for test_replay.py: each recorded request sent in order to the
app under test (harness.py), its answer compared with the recorded one; those answered differently
counted by endpoint, the first SHOWN in full with a diff of their bodies.

`python -m tests.replay.compare` prints, as JSON on its last line, how many requests the recording
holds and that report (empty when every answer is the recorded one). Seven thousand requests take
about twenty seconds: tests/conftest.py starts it as soon as the session knows it will run
test_replay, at idle CPU priority (tests/processes.py's Job), so it runs beside the tests before."""

from __future__ import annotations

import difflib
import json
from collections import Counter
from typing import Any

from tests.replay.harness import Answer, decode_bytes, read_recording, req_from_json, service, sha256

SHOWN = 5  # mismatches shown in full
DIFF_LINES = 40


def _pretty(body: bytes) -> list[str]:
    """A body as lines to diff: JSON indented (one figure a line), text as it is."""
    try:
        return json.dumps(json.loads(body), indent=1, ensure_ascii=False).splitlines()
    except ValueError:
        return body.decode("utf-8", "replace").splitlines()


def _differences(rec: dict[str, Any], got: Answer) -> list[str]:
    out = []
    if got.status != rec["status"]:
        out.append(f"status: expected {rec['status']}, got {got.status}")
    if got.content_type != rec["content_type"]:
        out.append(f"content-type: expected {rec['content_type']!r}, got {got.content_type!r}")
    expected_headers = [tuple(h) for h in rec["response_headers"]]
    if got.headers != expected_headers:
        missing = sorted(set(expected_headers) - set(got.headers))
        extra = sorted(set(got.headers) - set(expected_headers))
        out.append(f"headers: expected but not sent {missing}; sent but not expected {extra}")
    expected = decode_bytes(rec.get("response_body"))  # kept whole unless recorded with --sha-only
    if sha256(got.body) != rec["sha256"]:
        out.append(f"body: expected {rec['length']:,} bytes (sha256 {rec['sha256'][:12]}…), "
                   f"got {len(got.body):,} (sha256 {sha256(got.body)[:12]}…)")  # fmt: skip
    elif expected is not None and got.body != expected:
        out.append("body: the recorded body differs from its own sha256 (the recording was edited?)")
    return out


def _shown(i: int, rec: dict[str, Any], got: Answer, differences: list[str]) -> str:
    req = req_from_json(rec)
    body = b"" if req.body is None else req.body
    sent = body[:300].decode("utf-8", "replace") + ("…" if len(body) > 300 else "")
    lines = [
        f"#{i} {req.method} {req.url[:300]}" + (f" [{req.phase}]" if req.phase != "online" else ""),
        *(f"  header {k}: {v[:100]}" for k, v in req.headers),
        *([f"  body: {sent}"] if body else []),
        *(f"  {d}" for d in differences),
    ]
    expected = decode_bytes(rec.get("response_body"))
    if expected is not None and expected != got.body:
        diff = difflib.unified_diff(_pretty(expected), _pretty(got.body), "expected", "got", n=2, lineterm="")
        lines += [f"    {line[:200]}" for line in list(diff)[:DIFF_LINES]]
    elif expected is None and got.body != b"":
        lines.append(f"  got body: {got.body[:300].decode('utf-8', 'replace')}")
    return "\n".join(lines)


def replayed() -> dict[str, Any]:
    """How many requests the recording holds, and the report of those answered differently."""
    records = read_recording()
    mismatches: list[tuple[int, dict[str, Any], Answer, list[str]]] = []
    with service() as svc:
        for i, rec in enumerate(records):
            got = svc.send(i, req_from_json(rec))
            differences = _differences(rec, got)
            if differences:
                mismatches.append((i, rec, got, differences))
    report = ""
    if mismatches:
        by_endpoint = Counter(rec["endpoint"] for _, rec, _, _ in mismatches)
        report = "\n\n".join([
            f"{len(mismatches)} of {len(records)} recorded requests answered differently "
            f"({', '.join(f'{ep}: {n}' for ep, n in by_endpoint.most_common())}); the first {SHOWN}:",
            *(_shown(*m) for m in mismatches[:SHOWN]),
        ])  # fmt: skip
    return {"requests": len(records), "report": report}


if __name__ == "__main__":
    print(json.dumps(replayed()))
