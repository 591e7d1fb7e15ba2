"""A real `kvplan serve` reading hostile logs: each is read in linear time (a 200 when it holds a
vLLM line, else a 4xx), and the probes stay prompt while it is read."""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest

HOSTILE = {
    "10 MB of one line": b"Model loading took " + b"9" * 10_000_000,
    "a million short lines": b"x\n" * 1_000_000 + b"Available KV cache memory: 1.5 GiB\n",
    "regex bait": (b"Maximum concurrency for " + b"1," * 50_000 + b" tokens per request: ") * 40,
}


@pytest.mark.parametrize("body", HOSTILE.values(), ids=HOSTILE.keys())
def test_a_hostile_log_is_answered_and_the_probes_stay_prompt(server, body):
    with ThreadPoolExecutor(1) as pool:
        pending = pool.submit(
            httpx.post, f"{server.url}/v1/reconcile", content=body,
            headers={"content-type": "text/plain"}, timeout=60,
        )  # fmt: skip
        probes = []
        while not pending.done():
            t0 = time.perf_counter()
            assert httpx.get(f"{server.url}/healthz", timeout=5).status_code == 200
            probes.append(time.perf_counter() - t0)
            time.sleep(0.05)
        answer = pending.result()
    assert answer.status_code == 200 or 400 <= answer.status_code < 500, answer.text[:300]
    assert max(probes, default=0) < 0.5, probes
