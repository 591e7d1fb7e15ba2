"""The workloads the compiled simulator is compared on with its Python source (test_compiled.py):
half the 120 pinned golden workloads (every pool shape, policy and snapshot; the timed ones, on
a linear step-time model, whose answers test_sim_golden compares to rounding only), and queries
through the HTTP API on a real model's step-time model (closed loops, Poisson rates,
conversations, a shared system prompt, preemptions in a small pool, the two public traces, a
rate search, the text and vllm-bench answers). Each answer is its whole response body, hashed.

`python -m tests.sim.compiled_corpus` prints the hashes as JSON on its last line, with whichever
simulator the process runs (`KVPLAN_COMPILED=0`: the Python source).
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

import msgspec
from litestar.testing import TestClient

from kvplan.api.app import create_app
from kvplan.core.sim.simulate import Timing, TimingNote, simulate
from tests.core.sim_golden import CASES, Linear, case
from tests.sim.traces import azure_csv, mooncake_jsonl

POOL = {"model": "llama-3.1-8b", "gpu": "h100-sxm-80gb"}
QUERY = "model=llama-3.1-8b&gpu=h100-sxm-80gb"
LOGNORMAL_CHAT = {
    "prompt": {"kind": "lognormal", "mean": 1155, "sigma": 0.8},
    "output": {"kind": "lognormal", "mean": 211, "sigma": 0.8},
}
DECODE_HEAVY = {
    "prompt": {"kind": "lognormal", "mean": 1000, "sigma": 0.5},
    "output": {"kind": "lognormal", "mean": 4000, "sigma": 0.5},
}


def _generator(**fields: Any) -> dict[str, Any]:
    return {"workload": {"generator": {"seed": 3, **fields}}}


JSON_QUERIES: dict[str, tuple[str, dict[str, Any]]] = {
    "decode-heavy closed loop": (
        "/v1/simulate",
        {**POOL, "max_num_seqs": 64, **_generator(count=300, concurrency=64, **DECODE_HEAVY)},
    ),
    "decode-heavy in steps": (
        "/v1/simulate",
        {**POOL, "max_num_seqs": 64, **_generator(count=300, arrival_rate=0.02, **DECODE_HEAVY)},
    ),
    "chat at 11.6/s": (
        "/v1/simulate",
        {**POOL, **_generator(count=1500, arrival_rate_per_s=11.6, **LOGNORMAL_CHAT)},
    ),
    "chat queued behind max_num_seqs 8": (
        "/v1/simulate",
        {**POOL, "max_num_seqs": 8, **_generator(count=1500, arrival_rate_per_s=11.6, **LOGNORMAL_CHAT)},
    ),
    "vLLM 0.18's micro-batching tokenizer, closed loop": (
        "/v1/simulate",
        {**POOL, "engine": "0.18.0", **_generator(count=600, concurrency=48, **LOGNORMAL_CHAT)},
    ),
    "vLLM 0.18's micro-batching tokenizer, conversations": (
        "/v1/simulate",
        {
            **POOL,
            "engine": "0.18.0",
            **_generator(
                count=600,
                arrival_rate_per_s=8.0,
                conversations={"share": 0.5, "turns": 3, "user_tokens": 300, "think_time_s": 0.01},
                **LOGNORMAL_CHAT,
            ),
        },
    ),
    "vLLM 0.18's micro-batching tokenizer at 40/s": (
        "/v1/simulate",
        {**POOL, "engine": "0.18.0", **_generator(count=1500, arrival_rate_per_s=40.0, **LOGNORMAL_CHAT)},
    ),
    "conversations with think time": (
        "/v1/simulate",
        {
            **POOL,
            **_generator(
                count=600,
                arrival_rate_per_s=4.0,
                conversations={"share": 0.6, "turns": 4, "user_tokens": 300, "think_time_s": 3.0},
                **LOGNORMAL_CHAT,
            ),
        },
    ),
    "shared system prompt, goodput": (
        "/v1/simulate",
        {
            **POOL,
            "goodput": {"ttft_ms": 300, "tpot_ms": 30},
            **_generator(
                count=800,
                arrival_rate_per_s=20.0,
                system_prompt_share=0.7,
                system_prompt_tokens=2000,
                **LOGNORMAL_CHAT,
            ),
        },
    ),
    "preemptions in 300 blocks, timed": (
        "/v1/simulate",
        {**POOL, "num_blocks": 300, **_generator(count=200, arrival_rate_per_s=30.0, **LOGNORMAL_CHAT)},
    ),
    "preemptions in 300 blocks, in steps, with snapshots": (
        "/v1/simulate",
        {
            **POOL,
            "num_blocks": 300,
            "snapshot_steps": [5, 400, 2000],
            **_generator(count=200, arrival_rate=0.5, **LOGNORMAL_CHAT),
        },
    ),
    "priority policy in steps": (
        "/v1/simulate",
        {
            **POOL,
            "num_blocks": 800,
            "scheduling_policy": "priority",
            "workload": {
                "requests": [
                    {
                        "arrival_step": i % 50,
                        "prompt_tokens": 300 + 37 * i,
                        "output_tokens": 50 + 11 * i,
                        "priority": i % 3,
                    }
                    for i in range(120)
                ]
            },
        },
    ),
    "rate search for one replica": (
        "/v1/capacity",
        {
            **POOL,
            "workload": {"count": 400, **LOGNORMAL_CHAT, "seed": 5},
            "slo": {"ttft_p90_ms": 500, "tpot_p99_ms": 40},
            "search": {"tolerance": 0.05, "max_points": 8},
        },
    ),
}
FORMATS = {"text answer": "format=text", "vllm-bench answer": "format=vllm-bench"}


GOLDEN_CASES = [i for i in range(CASES) if i % 4 in (0, 3)]  # the timed ones are i % 4 == 3


def golden() -> dict[str, str]:
    """The pinned workloads' whole answers (tests/core/sim_golden.py), timed ones included."""
    out = {}
    note = TimingNote(exact="scheduling", modelled="durations", step_time_model="linear", validation="-")
    for i in GOLDEN_CASES:
        cfg, reqs, gen, snaps, timed = case(i)
        try:
            r = simulate(cfg, reqs, gen, snaps, timing=Timing(Linear(), note) if timed else None)
            body = msgspec.json.encode(r)
        except Exception as e:  # refusals are answers too
            body = f"{type(e).__name__}: {e}".encode()
        out[f"golden {i}"] = hashlib.sha256(body).hexdigest()
    return out


def through_the_api() -> dict[str, str]:
    out = {}
    with TestClient(create_app()) as client:
        for name, (path, body) in JSON_QUERIES.items():
            r = client.post(path, json=body)
            out[name] = f"{r.status_code} {hashlib.sha256(r.content).hexdigest()}"
        base = JSON_QUERIES["chat at 11.6/s"][1]
        for name, fmt in FORMATS.items():
            r = client.post(f"/v1/simulate?{fmt}", json=base)
            body = r.content
            if fmt == "format=vllm-bench":  # all but its `date`, the second it was written
                body = json.dumps({k: v for k, v in r.json().items() if k != "date"}).encode()
            out[name] = f"{r.status_code} {hashlib.sha256(body).hexdigest()}"
        azure = b"\r\n".join(azure_csv().split(b"\r\n")[:1501])
        mooncake = b"".join(mooncake_jsonl().splitlines(keepends=True)[:1000])
        for name, content, kind in (
            ("azure trace", azure, "text/csv"),
            ("mooncake trace", mooncake, "application/x-ndjson"),
        ):
            r = client.post(f"/v1/simulate?{QUERY}", content=content, headers={"content-type": kind})
            out[name] = f"{r.status_code} {hashlib.sha256(r.content).hexdigest()}"
    return out


def answers() -> dict[str, str]:
    return golden() | through_the_api()


if __name__ == "__main__":
    from kvplan import compiled

    print(json.dumps({"compiled": compiled.active(), "answers": answers()}))
