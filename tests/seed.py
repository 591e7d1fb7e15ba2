"""The seed document's scenarios and tables, declared once for every test that asserts them (core,
API, live server, deploy). Scenarios are requests in the API's field names; the core's `budget`
fixture takes the same keywords: `budget(**A)`."""

from __future__ import annotations

from typing import Any, NamedTuple

GIB = 1024**3

# The weights the seed deducts, rounded as it prints them.
W_LLAMA_3_70B_BF16 = 130 * GIB
W_LLAMA_3_70B_FP8 = round(65.2 * GIB)  # the seed's "70B params × 1 B", as its table prints it
W_LLAMA_3_8B_BF16 = 15 * GIB
W_DEEPSEEK_V3 = 625 * GIB  # all 8 cards of group B: 78.125 GiB a card under TP=8

# Group A: Llama-3-70B, 8K, 160 GiB, 130 GiB of weights → 880 blocks (879 usable), 6 requests.
A = {
    "model": "llama-3-70b",
    "gpu": "pool-160gib",
    "weights_bytes": W_LLAMA_3_70B_BF16,
    "context_tokens": 8192,
    "non_kv_bytes": 0,  # the seed deducts the weights alone
}
# Group B: DeepSeek-V3, 32K, one 141 GiB card of TP=8 (625 GiB of weights in all) → 24 requests;
# the 8 cards pooled would say 192, which no deployment holds.
B = {
    "model": "deepseek-v3",
    "gpu": "pool-141gib",
    "weights_bytes": W_DEEPSEEK_V3,
    "context_tokens": 32768,
    "tensor_parallel_size": 8,
    "non_kv_bytes": 0,
}
# Group A's blocks as an answer states them: num_blocks, usable_blocks, token_slots, blocks_per_request.
A_BLOCKS = (880, 879, 56256, 128)


def blocks_of(answer: dict[str, Any]) -> tuple[int, int, int, int]:
    """An answer's (num_blocks, usable_blocks, token_slots, blocks_per_request), as A_BLOCKS."""
    keys = ("num_blocks", "usable_blocks", "token_slots", "blocks_per_request")
    n, usable, slots, per_request = (answer[k] for k in keys)
    return n, usable, slots, per_request


# Group C: group A at 128K → 0 requests, budget_insufficient; 56,256 tokens fit.
C = {**A, "context_tokens": 131072}


class Table1Row(NamedTuple):
    model: str
    kind: str
    L: int
    hkv: int
    D: int
    bf16_kib: float  # KV bytes a token, bf16, TP = 1
    fp8_kib: float
    gib_128k: float  # one 128K request, bf16, as the seed prints it (3 decimals)
    ratio: str  # vs the same model's MHA form, as printed


TABLE_1 = [
    Table1Row("llama-2-7b", "MHA", 32, 32, 128, 512, 256, 64, "1×"),
    Table1Row("llama-3-8b", "GQA", 32, 8, 128, 128, 64, 16, "4×"),
    Table1Row("llama-3-70b", "GQA", 80, 8, 128, 320, 160, 40, "8×"),
    Table1Row("deepseek-v3", "MLA", 61, 1, 576, 68.625, 34.3125, 8.578, "56.9×"),
]


class Table2Row(NamedTuple):
    request: dict[str, Any]
    budget_gib: float  # KV budget, GiB (2 decimals)
    kv_gib: float  # KV of one request, GiB
    per_request: float  # budget / KV of one request (2 decimals)
    concurrency: int


# Table 2's single-GPU Llama rows. Its two DeepSeek-V3 rows are group B: 24 a card, 192 pooled.
TABLE_2 = [
    Table2Row(
        {
            "model": "llama-3-8b",
            "gpu": "pool-80gib",
            "weights_bytes": W_LLAMA_3_8B_BF16,
            "context_tokens": 8192,
            "non_kv_bytes": 0,
        },
        58.6,
        1,
        58.6,
        58,
    ),
    Table2Row(A, 17.2, 2.5, 6.88, 6),
    Table2Row({**A, "kv_cache_dtype": "fp8"}, 17.2, 1.25, 13.76, 13),
    Table2Row({**A, "kv_cache_dtype": "fp8", "weights_bytes": W_LLAMA_3_70B_FP8}, 82.0, 1.25, 65.6, 65),
]

# Every seed scenario with the requests it holds at once.
CONCURRENCY = [*((row.request, row.concurrency) for row in TABLE_2), (B, 24), (C, 0)]
