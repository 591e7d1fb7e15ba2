"""Real inputs as people posted them (tests/sim/data/real, provenance in its README.md), POSTed to
/v1/simulate as pasted: each is answered, or refused with a 4xx naming the problem (issue 28)."""

from __future__ import annotations

from pathlib import Path

import pytest

REAL = Path(__file__).parents[1] / "sim" / "data" / "real"
POOL = "/v1/simulate?model=llama-3.1-8b&gpu=h100-sxm-80gb"

# file → (format read, requests), or (status, field) when refused
ANSWERED = {
    "azure-2023-code-head.csv": ("azure-csv", 30),
    "azure-2024-code-head.csv": ("azure-csv", 5),
    "azure-2024-conv-head.csv": ("azure-csv", 5),
    "burstgpt-head.csv": ("burstgpt-csv", 3),
    "mooncake-synthetic-head.jsonl": ("mooncake-jsonl", 12),
    "bailian-aiperf-example.jsonl": ("bailian-jsonl", 2),
    "bailian-thinking-example.jsonl": ("bailian-jsonl", 1),
}
REFUSED = {
    # Azure OpenAI's usage export: not a trace format kvplan reads; the header is named.
    "azure-openai-usage-export.csv": "trace[line 1].header",
    # The Bailian README's annotated record (comments, "...") is not JSONL.
    "bailian-readme-example.jsonl": "trace[line 1].json",
}


def _media(name: str) -> str:
    return "text/csv" if name.endswith(".csv") else "application/x-ndjson"


def test_every_real_trace_file_is_listed_here_and_in_the_provenance():
    files = {p.name for p in REAL.iterdir() if p.suffix in (".csv", ".jsonl")}
    assert files == set(ANSWERED) | set(REFUSED)
    provenance = (REAL / "README.md").read_text()
    for p in REAL.iterdir():
        if p.name != "README.md":
            assert p.name in provenance, p.name


@pytest.mark.parametrize("media", ["own", "application/x-www-form-urlencoded"])
@pytest.mark.parametrize("name", sorted(ANSWERED))
def test_a_real_trace_as_pasted_is_answered(client, name, media):
    r = client.post(
        POOL,
        content=(REAL / name).read_bytes(),
        headers={"content-type": _media(name) if media == "own" else media},
    )
    assert r.status_code == 200, r.text[:400]
    fmt, count = ANSWERED[name]
    assert (r.json()["trace"], r.json()["completed"]) == (fmt, count)


@pytest.mark.parametrize("name", sorted(REFUSED))
def test_a_real_input_kvplan_does_not_read_is_a_400_naming_the_problem(client, name):
    r = client.post(POOL, content=(REAL / name).read_bytes(), headers={"content-type": _media(name)})
    assert r.status_code == 400, r.text[:400]
    assert r.json()["field"] == REFUSED[name]
