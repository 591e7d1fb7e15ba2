"""Regenerate the LoRA slot cases: vLLM 0.33.0's own LoRA manager wrapping real models built on
the meta device (tests/oracle/lora_oracle.py, run with the oracle's venv), its slot bytes per TP
rank written as plain data that tests/core/test_lora_oracle_cases.py asserts kvplan against.

    ORACLE_PYTHON=DIR/venv-lean/bin/python python tests/oracle/generate_lora.py

Not part of `make test`: it needs the oracle install and runs for a few minutes (TP cases spawn
one process a rank)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
PRESETS = HERE.parents[1] / "service" / "kvplan" / "presets" / "data" / "models"
OUT = HERE / "lora-cases-vllm-0.33.0.json"

# (name, preset whose verbatim config.json is read, LoRA settings with the oracle's names).
SCENARIOS: list[tuple[str, str, dict[str, object]]] = [
    ("lora-llama-3.1-8b-r16-x4", "llama-3.1-8b", {"max_loras": 4, "max_lora_rank": 16}),
    ("lora-llama-3.1-8b-r16-x4-tp2", "llama-3.1-8b",
     {"max_loras": 4, "max_lora_rank": 16, "tensor_parallel_size": 2}),
    ("lora-llama-3.1-8b-r16-x4-tp2-fully-sharded", "llama-3.1-8b",
     {"max_loras": 4, "max_lora_rank": 16, "tensor_parallel_size": 2, "fully_sharded_loras": True}),
    ("lora-llama-3.1-8b-r64-x4-fp16", "llama-3.1-8b",
     {"max_loras": 4, "max_lora_rank": 64, "lora_dtype": "float16"}),
    ("lora-llama-3.1-8b-targets-q-o", "llama-3.1-8b",
     {"max_loras": 2, "max_lora_rank": 32, "target_modules": ["q_proj", "o_proj"]}),
    ("lora-mistral-7b-no-embedding-slots", "mistral-7b-v0.3", {"max_loras": 3, "max_lora_rank": 8}),
    ("lora-qwen2.5-7b-tp4", "qwen2.5-7b", {"max_loras": 2, "max_lora_rank": 16, "tensor_parallel_size": 4}),
    ("lora-qwen3-8b-r128-x1", "qwen3-8b", {"max_loras": 1, "max_lora_rank": 128}),
    ("lora-qwen3-30b-a3b-r8-x2", "qwen3-30b-a3b", {"max_loras": 2, "max_lora_rank": 8}),
    ("lora-qwen3-30b-a3b-r8-x2-tp2-fully-sharded", "qwen3-30b-a3b",
     {"max_loras": 2, "max_lora_rank": 8, "tensor_parallel_size": 2, "fully_sharded_loras": True}),
    ("lora-qwen3-30b-a3b-moe-shared", "qwen3-30b-a3b",
     {"max_loras": 2, "max_lora_rank": 8, "enable_moe_shared_loras": True}),
    # Qwen3-MoE's class marked is_3d_moe_weight (gpt-oss's layout, FusedMoE3DWithLoRA), and the same
    # with --enable-mixed-moe-lora-format (back to FusedMoEWithLoRA).
    ("lora-qwen3-30b-a3b-as-3d-moe", "qwen3-30b-a3b",
     {"max_loras": 2, "max_lora_rank": 8, "is_3d_moe_weight": True}),
    ("lora-qwen3-30b-a3b-as-3d-moe-mixed-format", "qwen3-30b-a3b",
     {"max_loras": 2, "max_lora_rank": 8, "is_3d_moe_weight": True, "enable_mixed_moe_lora_format": True}),
    ("lora-mixtral-8x7b-r16-x1-tp2", "mixtral-8x7b",
     {"max_loras": 1, "max_lora_rank": 16, "tensor_parallel_size": 2}),
]  # fmt: skip


def main() -> int:
    python = os.environ.get("ORACLE_PYTHON")
    if not python:
        print("set ORACLE_PYTHON to the oracle venv's python", file=sys.stderr)
        return 2
    reqs = [
        {"name": name, "config": json.loads((PRESETS / f"{preset}.json").read_text())["config"], **inputs}
        for name, preset, inputs in SCENARIOS
    ]
    run = subprocess.run(
        [python, str(HERE / "lora_oracle.py")],
        input=json.dumps(reqs),
        capture_output=True,
        text=True,
        check=False,
    )
    if run.returncode:
        print(run.stderr[-4000:], file=sys.stderr)
        return run.returncode
    answers = {a["name"]: a for a in json.loads(run.stdout)}
    cases = [
        {"name": name, "preset": preset, "inputs": inputs, "vllm": answers[name]}
        for name, preset, inputs in SCENARIOS
    ]
    OUT.write_text(
        json.dumps({"vllm": "0.33.0", "generator": "tests/oracle/generate_lora.py", "cases": cases}, indent=1)
        + "\n"
    )
    print(f"{len(cases)} cases → {OUT}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
