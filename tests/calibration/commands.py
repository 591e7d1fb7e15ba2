"""Issue 26's measure: each real start-up log (data/vllm-memlogs.jsonl) that quotes a `vllm serve`
command or vLLM's `non-default args` line, planned from that line alone (plus its GPU's memory, the
engine version it printed, and the model's config.json, since the Hub is not reachable here), against
the same log planned from kvplan's fields as the calibration reads them: how often each lands within
max(0.5 GiB, 2 %) of the "Available KV cache memory" vLLM printed.

    .venv/bin/python -m tests.calibration.commands      # prints the table and the counts"""

from __future__ import annotations

import json
import re
import sys
from typing import Any

import msgspec

from kvplan.core.errors import KvplanError
from kvplan.core.units import GiB
from kvplan.presets import load_registry
from kvplan.schemas import BudgetRequest
from kvplan.schemas.plan import PlanRequest
from kvplan.services.answers import budget_answer
from kvplan.services.plan import budget_question, plan_budget
from tests.calibration.memory import DATA, QUANT_CONFIGS, load_logs

_SERVE = re.compile(r"(?:vllm serve|-m vllm\.entrypoints\.openai\.api_server)\s[^|]*")
_ARGS = re.compile(r"non-default args: \{[^|]*\}")


def command_of(quote: str) -> str | None:
    """The command line, or vLLM's printed arguments, a log's quote holds (its parts are joined by
    ' | ' in the data); None when it holds neither."""
    m = _ARGS.search(quote) or _SERVE.search(quote)
    if m is None:
        return None
    text = m.group(0).strip().rstrip(".…")
    return text if text.startswith("non-default") else ("vllm serve " + text.split(None, 2)[-1]
                                                          if text.startswith("-m") else text)  # fmt: skip


def within(planned: int, printed_gib: float) -> bool:
    error = abs(planned / GiB - printed_gib)
    return error <= max(0.5, 0.02 * printed_gib)


def rows() -> list[dict[str, Any]]:
    """One row a log with a command: both plans' available KV beside the printed one."""
    reg = load_registry(extra_dir="")
    logs = {g.id: g for g in load_logs()[0]}
    configs = {
        e["model"]: e for e in map(json.loads, (DATA / "hf-configs" / "INDEX.jsonl").read_text().splitlines())
    }
    out = []
    for line in (DATA / "vllm-memlogs.jsonl").read_text().splitlines():
        r = json.loads(line)
        command = command_of(r["source"]["quote"] or "")
        g = logs.get(r["id"])
        if command is None or g is None:
            continue
        config = json.loads((DATA / "hf-configs" / configs[r["model"]]["file"]).read_text())
        quant = next((q for k, q in QUANT_CONFIGS.items() if (r["quantization"] or "").startswith(k)), None)
        if quant is not None and "quantization_config" not in config:  # as the calibration reads it
            config = {**config, "quantization_config": quant}
        row: dict[str, Any] = {"id": r["id"], "command": command[:90], "printed": g.available_gib}
        base = {"model": {"hf_config": config}, "gpu_memory_bytes": g.total_bytes, "engine": g.version}
        fields = {
            **base,
            "gpu_memory_utilization": g.utilization,
            "tensor_parallel_size": g.tensor,
            "pipeline_parallel_size": g.pipeline,
            "max_num_seqs": g.max_num_seqs,
            "max_num_batched_tokens": g.max_num_batched_tokens,
            "enforce_eager": g.enforce_eager,
        }
        try:
            b, _ = budget_answer(reg, msgspec.convert(fields, BudgetRequest), False)
            row["fields"] = b.available_kv_bytes
        except KvplanError as e:
            row["fields_error"] = f"{e.field}: {e.reason}"[:80]
        try:
            req = msgspec.convert({**base, "command": command}, PlanRequest)
            question, read = budget_question(req, set(base))
            b, _, _ = plan_budget(reg, question, read, False)
            row["command_kv"] = b.available_kv_bytes
        except KvplanError as e:
            row["command_error"] = f"{e.field}: {e.reason}"[:100]
        out.append(row)
    return out


def main(argv: list[str]) -> int:
    table = rows()
    by_fields = sum(1 for r in table if "fields" in r and within(r["fields"], r["printed"]))
    by_command = sum(1 for r in table if "command_kv" in r and within(r["command_kv"], r["printed"]))
    for r in table:
        f = f"{r['fields'] / GiB:7.2f}" if "fields" in r else "   —   "
        c = f"{r['command_kv'] / GiB:7.2f}" if "command_kv" in r else r.get("command_error", "")
        print(f"{r['id']:6} printed {r['printed']:7.2f}  fields {f}  command {c}   {r['command']}")
    print(f"\n{len(table)} logs quote a command: within max(0.5 GiB, 2 %) from the command line alone "
          f"{by_command}, from kvplan's fields {by_fields}")  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
