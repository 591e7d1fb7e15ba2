"""What every budget answer must satisfy before it leaves the core. Inputs that would break these
are rejected earlier as 4xx naming the field; a violation that still happens is a bug, raised as
InternalInconsistency (a 500 that is logged and counted), never returned as a number."""

from __future__ import annotations

from ..errors import InternalInconsistency
from .types import Budget


def check_budget(b: Budget) -> None:
    """Return nothing when b keeps every invariant (no negative memory, blocks, tokens or
    concurrency; no more KV than requested; the blocks inside the KV memory); else raise
    InternalInconsistency naming each one broken. Exists so that a bug in the arithmetic becomes
    a logged 500, never a wrong figure in an answer."""
    c = b.concurrency
    if (  # the common case in one expression; the list below only names what failed
        b.available_kv_bytes >= 0
        and (b.requested_bytes is None or b.available_kv_bytes <= b.requested_bytes)
        and b.weights_bytes >= 0
        and b.weights_bytes_per_gpu >= 0
        and b.num_blocks >= 0
        and b.usable_blocks >= 0
        and 0 <= b.num_blocks_computed * b.bytes_per_block <= b.available_kv_bytes
        and min(c.guaranteed, c.schedulable, c.budget_floor) >= 0
        and min(c.guaranteed_unrounded, c.vllm_reported, c.budget_unrounded) >= 0
        and min(b.token_slots, b.kv_cache_size_tokens, b.max_context_tokens) >= 0
        and b.kv_bytes_per_request >= 0
        and b.blocks_per_request > 0
    ):
        return
    failures = [
        name
        for name, ok in (
            ("available_kv_bytes >= 0", b.available_kv_bytes >= 0),
            (
                "available_kv_bytes <= requested_bytes",
                b.requested_bytes is None or b.available_kv_bytes <= b.requested_bytes,
            ),
            ("weights_bytes >= 0", b.weights_bytes >= 0 and b.weights_bytes_per_gpu >= 0),
            ("num_blocks >= 0", b.num_blocks >= 0 and b.usable_blocks >= 0 and b.num_blocks_computed >= 0),
            (
                "num_blocks_computed x bytes_per_block <= available_kv_bytes",
                b.num_blocks_computed * b.bytes_per_block <= b.available_kv_bytes,
            ),
            (
                "concurrency >= 0",
                min(c.guaranteed, c.schedulable, c.budget_floor) >= 0
                and min(c.guaranteed_unrounded, c.vllm_reported, c.budget_unrounded) >= 0,
            ),
            ("token figures >= 0", min(b.token_slots, b.kv_cache_size_tokens, b.max_context_tokens) >= 0),
            ("kv_bytes_per_request >= 0", b.kv_bytes_per_request >= 0 and b.blocks_per_request > 0),
        )
        if not ok
    ]
    if failures:
        raise InternalInconsistency("budget", failures)
