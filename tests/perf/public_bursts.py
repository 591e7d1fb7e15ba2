"""GPUStack's public vLLM 0.11 bursts against kvplan's simulation of them (docs/real-bench-comparison.md,
"Bursts"): `python -m tests.perf.public_bursts` prints the document's table rows. Not a fit: no
figure of these runs is used by the step-time model.

Source: gpustack/gpustack @7ae332aaf05783e657560ef927c527b156e2536d, docs/performance-lab/
qwen3-14b/h100.md ("A single NVIDIA H100 SXM GPU", vLLM v0.11.0) and deepseek-r1/h200.md (8 × H200,
`-tp 8`), "Baseline benchmark results": `vllm bench serve --backend openai-chat --dataset-name random
--random-input-len ISL --random-output-len OSL --num-prompts N --seed 42`, no --max-concurrency (every
prompt at once), the server's defaults."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, NamedTuple

from litestar.testing import TestClient

from kvplan.api.app import create_app
from tests.perf.public_runs import first_cell, pct

QWEN3_14B = Path(__file__).parents[1] / "sim" / "data" / "real" / "Qwen--Qwen3-14B-config.json"


class Burst(NamedTuple):
    setup: str  # the table's first column, on a setup's first row
    model: str  # a preset, or "qwen3-14b-config" for the config.json beside the traces
    gpu: str
    tp: int
    isl: int
    osl: int
    prompts: int
    ttft_ms: float  # theirs: Mean TTFT (ms)
    tpot_ms: float  # theirs: Mean TPOT (ms)


QWEN = "Qwen3-14B, one H100 SXM"
DSR1 = "DeepSeek-R1-0528 (FP8), 8 × H200, TP 8"
BURSTS = (
    Burst(QWEN, "qwen3-14b-config", "h100-sxm-80gb", 1, 32000, 100, 100, 191024.43, 277.44),
    Burst(QWEN, "qwen3-14b-config", "h100-sxm-80gb", 1, 4000, 200, 500, 112716.92, 132.45),
    Burst(QWEN, "qwen3-14b-config", "h100-sxm-80gb", 1, 2000, 100, 500, 50716.13, 206.51),
    Burst(QWEN, "qwen3-14b-config", "h100-sxm-80gb", 1, 128, 4, 1000, 18282.75, 525.31),
    Burst(DSR1, "deepseek-r1", "h200-141gb", 8, 32000, 100, 100, 101351.99, 365.79),
    Burst(DSR1, "deepseek-r1", "h200-141gb", 8, 4000, 200, 500, 63058.71, 164.23),
    Burst(DSR1, "deepseek-r1", "h200-141gb", 8, 2000, 100, 500, 28911.90, 237.02),
    Burst(DSR1, "deepseek-r1", "h200-141gb", 8, 128, 4, 1000, 19392.11, 351.83),
)


def simulated(client: TestClient, b: Burst) -> dict[str, Any]:
    """kvplan's answer, in vllm bench serve's names, for the same burst on vLLM 0.11's defaults."""
    model: Any = (
        {"hf_config": json.loads(QWEN3_14B.read_text())} if b.model == "qwen3-14b-config" else b.model
    )
    fixed = {"kind": "fixed"}
    body = {
        "model": model,
        "gpu": b.gpu,
        "tensor_parallel_size": b.tp,
        "engine": "0.11.0",
        "workload": {
            "generator": {
                "count": b.prompts,
                "concurrency": b.prompts,
                "prompt": {**fixed, "value": b.isl},
                "output": {**fixed, "value": b.osl},
            }
        },
    }
    r = client.post("/v1/simulate?format=vllm-bench", json=body)
    assert r.status_code == 200, r.text
    answer: dict[str, Any] = r.json()
    return answer


def rows(client: TestClient) -> list[str]:
    """The document's table rows, one a burst."""
    out: list[str] = []
    shown: set[str] = set()
    for b in BURSTS:
        a = simulated(client, b)
        ttft, tpot = a["mean_ttft_ms"], a["mean_tpot_ms"]
        out.append(
            f"|{first_cell(b.setup, shown)}| {b.isl}/{b.osl}, {b.prompts:,} | {b.ttft_ms / 1000:.1f} s → "
            f"{ttft / 1000:.1f} s ({pct(ttft, b.ttft_ms)}) | {b.tpot_ms:.1f} → {tpot:.1f} ms "
            f"({pct(tpot, b.tpot_ms)}) |"
        )
    return out


if __name__ == "__main__":
    with TestClient(create_app()) as c:
        print("\n".join(rows(c)))
