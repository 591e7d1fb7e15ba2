"""The seed document's parameter groups and table 2 rows, as requests (shared by API and server tests)."""

from __future__ import annotations

GIB = 1024**3
# Group A: Llama-3-70B, 8K, 160 GiB, 130 GiB of weights → 880 blocks, 6 requests.
A = {"model": "llama-3-70b", "gpu": "pool-160gib", "weights_bytes": 130 * GIB, "context_tokens": 8192}
# Group B: DeepSeek-V3, 32K, one 141 GiB card of TP=8 (625 GiB of weights in all) → 24 requests.
B = {
    "model": "deepseek-v3",
    "gpu": "pool-141gib",
    "weights_bytes": 625 * GIB,
    "context_tokens": 32768,
    "tensor_parallel_size": 8,
}
# Group C: group A at 128K → 0 requests, budget_insufficient.
C = {**A, "context_tokens": 131072}
# Table 2: (request, concurrency).
TABLE_2 = [
    ({"model": "llama-3-8b", "gpu": "pool-80gib", "weights_bytes": 15 * GIB, "context_tokens": 8192}, 58),
    (A, 6),
    ({**A, "kv_cache_dtype": "fp8"}, 13),
    ({**A, "kv_cache_dtype": "fp8", "weights_bytes": round(65.2 * GIB)}, 65),
    (B, 24),
    (C, 0),
]
