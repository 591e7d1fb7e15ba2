"""Musgrave's public vLLM 0.23.0 closed loops against kvplan's simulation of them
(docs/real-bench-comparison.md, "Compared"): `python -m tests.perf.public_sweep` prints the
document's rows. Not a fit: no figure of this run is used by the step-time model.

Source: tests/sim/data/real/README.md (Musgrave): Llama-3.1-8B-Instruct BF16 on one A100 40GB,
`vllm bench serve` with random 1024-token prompts and 128-token outputs, 20 prompts a unit of
`--max-concurrency`. Its figures are read from the post's prose (its table was not in the stored
copy): "about 75 tokens/sec" at concurrency 1 and "a 6.6x gain" at 8."""

from __future__ import annotations

from typing import Any

from litestar.testing import TestClient

from kvplan.api.app import create_app
from tests.perf.public_runs import pct

SWEEP = (1, 2, 4, 8, 16, 32, 64)
PROMPTS = 20  # a unit of --max-concurrency
RATE_1 = 75  # theirs: decode rate at concurrency 1, tok/s ("about 75 tokens/sec")
GAIN_8 = 6.6  # theirs: output throughput at concurrency 8 over concurrency 1's decode rate


def simulated(client: TestClient, concurrency: int) -> dict[str, Any]:
    body = {
        "model": "llama-3.1-8b",
        "gpu": "a100-40gb",
        "engine": "0.23.0",
        "workload": {
            "generator": {
                "count": PROMPTS * concurrency,
                "concurrency": concurrency,
                "prompt": {"kind": "fixed", "value": 1024},
                "output": {"kind": "fixed", "value": 128},
            }
        },
    }
    r = client.post("/v1/simulate?format=vllm-bench", json=body)
    assert r.status_code == 200, r.text
    answer: dict[str, Any] = r.json()
    return answer


def rows(client: TestClient) -> list[str]:
    """The two compared rows, then the sweep's three rows."""
    runs = {c: simulated(client, c) for c in SWEEP}
    tpot_1 = runs[1]["mean_tpot_ms"]
    rate_1, out_8 = 1000 / tpot_1, runs[8]["output_throughput"]
    theirs_8 = GAIN_8 * RATE_1
    run = "| Musgrave (vLLM 0.23.0) |"
    return [
        f"{run} Llama-3.1-8B-Instruct BF16, A100 40GB, TP 1 | 1024/128 | 1 ({PROMPTS} prompts) | decode "
        f'rate (1000 ÷ TPOT), tok/s | ≈ {RATE_1} ("about {RATE_1} tokens/sec") | {rate_1:.1f} (TPOT '
        f"{tpot_1:.2f} ms) | {pct(rate_1, RATE_1)} (TPOT {pct(tpot_1, 1000 / RATE_1)}) |",
        f"{run} same | 1024/128 | 8 ({8 * PROMPTS} prompts) | output throughput, tok/s | ≈ {theirs_8:.0f} "
        f'("a {GAIN_8}x gain" over ≈ {RATE_1}) | {out_8:.1f} | {pct(out_8, theirs_8)} |',
        _row("mean TTFT (ms)", [f"{runs[c]['mean_ttft_ms']:.1f}" for c in SWEEP]),
        _row("mean TPOT (ms)", [f"{runs[c]['mean_tpot_ms']:.2f}" for c in SWEEP]),
        _row("output throughput (tok/s)", [f"{runs[c]['output_throughput']:.1f}" for c in SWEEP]),
    ]


def _row(figure: str, cells: list[str]) -> str:
    return f"| {figure} | " + " | ".join(cells) + " |"


if __name__ == "__main__":
    with TestClient(create_app()) as c:
        print("\n".join(rows(c)))
