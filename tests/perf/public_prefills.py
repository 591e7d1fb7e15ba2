"""Public single-prompt prefill timings against kvplan's simulation of them (docs/real-bench-comparison.md,
"Prefills"): `python -m tests.perf.public_prefills` prints the document's table rows. Not a fit: no
figure of these runs is used by the step-time model.

Sources (gathered 2026-12-06):
- yizhongzoe-cloud/my-vllm-serving-system @33738872637fde1bca66cc6f93133ab2c88c8b28,
  experiments_v2/docs/validation_steps.md, Steps 2 and 3.5 (one L40S, 2026-04-25/26, a fork of vLLM
  main): `vllm bench latency --input-len L --output-len 1 --batch-size 1 --num-iters 5
  --num-iters-warmup 3`, the "Avg" of each "Detailed L40S percentiles" table. Llama-3.1-8B-Instruct
  with `--max-model-len 131072 --gpu-memory-utilization 0.85` (0.95 at 131,071 tokens);
  Qwen2.5-32B-Instruct-AWQ (awq_marlin) with `--max-model-len 65536 --gpu-memory-utilization 0.90`
  and YaRN rope scaling in its config, which the step time does not read (its 64K point ran
  --enforce-eager, and is left out).
- vllm-project/vllm issue #42058, a comment of 2026-08-01 (A100-80GB, vLLM 0.26.0, Qwen3-8B BF16,
  `enforce_eager`, 8 concurrent prompts, "TTFT via `max_tokens=1`", the median of 3): its "Prefill"
  lengths are written 1k/4k/8k/16k, read as 1,024…16,384 tokens.

`vllm bench latency` and a `max_tokens=1` run time the engine's prefill of prompts given at once; kvplan
runs the same batch as a closed loop of that many requests of one output token, with the offline
`LLM` class's limits on a GPU under 70 GiB or an A100 (vllm/engine/arg_utils.py: 8,192 batched tokens,
256 sequences). kvplan's time includes its server's tokenization (≈ 1 ms per 1,000 tokens), which
`bench latency`'s token-id prompts do not pay."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, NamedTuple

from litestar.testing import TestClient

from kvplan.api.app import create_app
from tests.perf.public_runs import first_cell, pct

REAL = Path(__file__).parents[1] / "sim" / "data" / "real"


class Prefill(NamedTuple):
    setup: str  # the table's first column, on a setup's first row
    body: tuple[tuple[str, Any], ...]  # the simulation's pool: GPU and settings (and a preset model)
    prompt: int
    batch: int
    seconds: float  # theirs: the batch's wall time
    config: str | None = None  # the model as a config.json beside the traces, when no preset has it


LLAMA = "Llama-3.1-8B-Instruct (BF16), one L40S, `bench latency`"
QWEN_AWQ = "Qwen2.5-32B-Instruct-AWQ, one L40S, `bench latency`"
QWEN3 = "Qwen3-8B (BF16), A100-80GB, eager, 8 prompts, vLLM 0.26"
AWQ_CONFIG = "Qwen--Qwen2.5-32B-Instruct-AWQ-config.json"  # assembled: tests/sim/data/real/README.md
_OFFLINE = (("max_num_batched_tokens", 8192), ("max_num_seqs", 256))  # the LLM class's, < 70 GiB or A100
_LLAMA = (("model", "llama-3.1-8b"), ("gpu", "l40s-48gb"), ("max_model_len", 131072), *_OFFLINE)
_AWQ = (("gpu", "l40s-48gb"), ("max_model_len", 65536), ("gpu_memory_utilization", 0.9), *_OFFLINE)
_QWEN3 = (
    ("model", "qwen3-8b"),
    ("gpu", "a100-80gb"),
    ("enforce_eager", True),
    ("engine", "0.26.0"),
    *_OFFLINE,
)
PREFILLS = (
    Prefill(LLAMA, (*_LLAMA, ("gpu_memory_utilization", 0.85)), 8192, 1, 0.7345),
    Prefill(LLAMA, (*_LLAMA, ("gpu_memory_utilization", 0.85)), 16384, 1, 1.6887),
    Prefill(LLAMA, (*_LLAMA, ("gpu_memory_utilization", 0.85)), 32768, 1, 4.2056),
    Prefill(LLAMA, (*_LLAMA, ("gpu_memory_utilization", 0.85)), 65536, 1, 11.7715),
    Prefill(LLAMA, (*_LLAMA, ("gpu_memory_utilization", 0.95)), 131071, 1, 36.4421),
    Prefill(QWEN_AWQ, _AWQ, 8192, 1, 3.4892, AWQ_CONFIG),
    Prefill(QWEN_AWQ, _AWQ, 16384, 1, 7.6410, AWQ_CONFIG),
    Prefill(QWEN_AWQ, _AWQ, 32768, 1, 17.4485, AWQ_CONFIG),
    Prefill(QWEN3, _QWEN3, 1024, 8, 0.541),
    Prefill(QWEN3, _QWEN3, 4096, 8, 2.277),
    Prefill(QWEN3, _QWEN3, 8192, 8, 5.001),
    Prefill(QWEN3, _QWEN3, 16384, 8, 11.79),
)


def simulated_seconds(client: TestClient, p: Prefill) -> float:
    """kvplan's wall time for the batch."""
    body: dict[str, Any] = dict(p.body)
    if p.config is not None:
        body["model"] = {"hf_config": json.loads((REAL / p.config).read_text())}
    fixed = {"kind": "fixed"}
    generator = {"count": p.batch, "concurrency": p.batch, "prompt": {**fixed, "value": p.prompt}}
    body["workload"] = {"generator": {**generator, "output": {**fixed, "value": 1}}}
    r = client.post("/v1/simulate", json=body)
    assert r.status_code == 200, r.text
    seconds: float = r.json()["throughput"]["duration_s"]  # the first sent to the last done
    return seconds


def rows(client: TestClient) -> list[str]:
    """The document's table rows, one a run."""
    out: list[str] = []
    shown: set[str] = set()
    for p in PREFILLS:
        ours = simulated_seconds(client, p)
        cells = f" {p.prompt:,} | {p.seconds:.2f} s → {ours:.2f} s ({pct(ours, p.seconds)}) "
        out.append(f"|{first_cell(p.setup, shown)}|{cells}|")
    return out


if __name__ == "__main__":
    with TestClient(create_app()) as c:
        print("\n".join(rows(c)))
