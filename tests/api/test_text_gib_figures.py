"""Every GiB figure in a text answer has two decimals ("51.40 GiB"), as vLLM's logs print memory:
one scan over each whole body, so a figure formatted any other way, anywhere, fails it."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

# A number before "GiB" (a space or none), or after a ledger gloss "GiB=". Whitespace is folded
# first, so a figure wrapped across lines is still seen.
NUMBER = r"\d+(?:,\d{3})*(?:\.\d+)?"
GIB_FIGURE = re.compile(rf"(?<![\w.,])(?P<before>{NUMBER}) ?GiB\b|\bGiB=(?P<after>{NUMBER})")
TWO_DECIMALS = re.compile(r"\d{1,3}(?:,\d{3})*\.\d\d")
# Exact by definition, not figures: an engine profile's threshold ("GPUs ≥ 70 GiB") names a rule.
THRESHOLD = "≥ "

LOG = (Path(__file__).parents[1] / "reconcile" / "data" / "engine-0.33-tp2.log").read_text()
FLEET = {
    "model": "deepseek-v3",
    "workload": {"context_tokens": 32768},
    "fleet": [{"gpu": "h200-141gb", "count": 16, "cost_per_hour": 3.5},
              {"gpu": "h100-sxm-80gb", "count": 16, "cost_per_hour": 2.5}],
    "target_concurrency": 100,
}  # fmt: skip

# (name, method, path, JSON body or query, whether the answer must state GiB figures)
H100 = {"gpu": "h100-sxm-80gb"}
ANSWERS = [
    ("budget: estimate, band, pooled, ledger", "GET", "/v1/budget",
     {"model": "llama-3-70b", **H100, "tensor_parallel_size": 2, "explain": "true"}, True),
    ("budget: weights do not fit", "GET", "/v1/budget", {"model": "llama-3-70b", **H100}, True),
    ("budget: memory given in bytes", "POST", "/v1/budget",
     {"model": "deepseek-v3", "gpu_memory_bytes": 141 * 2**30, "tensor_parallel_size": 8,
      "context_tokens": 32768, "weights_bytes": 625 * 2**30, "non_kv_bytes": 0}, True),
    ("per-token", "GET", "/v1/per-token",
     {"model": "llama-3-70b", "context_tokens": 8192, "explain": "true"}, True),
    ("fleet: reasons, ranks, cheapest mix", "POST", "/v1/fleet", FLEET, True),
    ("sweep", "GET", "/v1/sweep",
     {"model": "llama-3-70b", **H100, "tensor_parallel_size": 4, "vary": "context_tokens"}, False),
    ("simulate", "POST", "/v1/simulate",
     {"model": "llama-3.1-8b", "gpu": "h100-sxm-80gb",
      "workload": {"requests": [{"prompt_tokens": 1000, "output_tokens": 24}]}}, False),
    ("reconcile", "POST", "/v1/reconcile", {"log": LOG, "overrides": {"model": "llama-3.1-70b"}}, True),
]  # fmt: skip


def gib_figures(text: str) -> list[str]:
    """Every GiB figure in the text, as written, thresholds of rules left out."""
    flat = " ".join(text.split())
    out = []
    for m in GIB_FIGURE.finditer(flat):
        if m["before"] is not None and flat[: m.start()].endswith(THRESHOLD):
            continue
        out.append(m["before"] or m["after"])
    return out


def test_the_scan_sees_every_form_and_tells_two_decimals_apart():
    text = "x 131.4 GiB a\n  GPU, (51.40 GiB), 2GiB, [DCP=1, GiB=72.8534], 1,234.50 GiB, GPUs ≥ 70 GiB"
    figures = gib_figures(text)
    assert figures == ["131.4", "51.40", "2", "72.8534", "1,234.50"]
    assert [f for f in figures if TWO_DECIMALS.fullmatch(f)] == ["51.40", "1,234.50"]


@pytest.mark.parametrize(
    ("name", "method", "path", "data", "states_gib"), ANSWERS, ids=[a[0] for a in ANSWERS]
)
def test_every_gib_figure_in_a_text_answer_has_two_decimals(client, name, method, path, data, states_gib):
    if method == "GET":
        r = client.get(path, params={**data, "format": "text"})
    else:
        r = client.post(path, params={"format": "text"}, json=data)
    assert r.status_code == 200 and r.headers["content-type"].startswith("text/plain"), r.text
    figures = gib_figures(r.text)
    assert bool(figures) == states_gib, figures  # the answers chosen state GiB figures to check
    assert [f for f in figures if not TWO_DECIMALS.fullmatch(f)] == [], r.text


def test_the_fleet_text_says_per_node_per_hour_and_counts_replicas_in_words(client):
    text = " ".join(client.post("/v1/fleet", params={"format": "text"}, json=FLEET).text.split())
    assert "h200-141gb ×16 (8 per node)" in text
    assert "for 100: 1 replica of DP8-attention+EP = 8 GPUs" in text
    assert "cheapest for 100: 1 replica of DP8-attention+EP on h200-141gb — 112 concurrent, " in text
    assert "28.00 per hour (proven cheapest)" in text
    assert "92.07 GiB of weights per rank" in text
