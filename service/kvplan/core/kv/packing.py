"""Block-outermost packing: vLLM's one rule for models whose pages differ and whose backends lay
blocks out block-outermost (docs/vllm-rules.md §8.6; vllm/v1/core/kv_cache_planning.py
_get_packed_kv_cache_groups, _approximate_gcd, _get_kv_cache_bytes_per_block).

A family describes its caches as PackedSpec values, in the order its layers register them, at
the block size its backends settle on (its own rule, docs/vllm-rules.md §8.7 and §8.8); pack()
groups them and sizes the block."""

from __future__ import annotations

import math
from bisect import bisect_right
from collections.abc import Sequence
from dataclasses import dataclass

from ..errors import InvalidInput
from ..model.geometry import CIRCULAR_BUFFER, MAMBA, MAMBA_REPLICATED, SLIDING, SLIDING_MLA
from ..units import cdiv

# Buckets that may go down to one state a group (MambaSpec, CircularBufferSpec), and those that
# do when no repeat pattern sets the split (SlidingWindowSpec and its MLA subclass).
STATE_KINDS = frozenset({MAMBA, MAMBA_REPLICATED, CIRCULAR_BUFFER})
SLIDING_KINDS = frozenset({SLIDING, SLIDING_MLA})


@dataclass(frozen=True, slots=True)
class PackedSpec:
    """One cache as vLLM specs it. layer: the index the family's groups list (a decoder layer or a
    layer-pattern entry); page_bytes at its block; stride_alignment: what a block's bytes must be a
    multiple of for it (KVCacheSpec.get_block_stride_alignment); window: its own window where the
    kind's window is not the model's; bucket: the kind whose spec type it shares when not its own
    (Step5's summaries are full-attention specs); side: a page of its layer's, not a layer of its
    own (a sparse MLA layer's indexer); role: what the ledger calls it."""

    layer: int
    kind: str
    block_size: int
    page_bytes: int
    stride_alignment: int = 1
    window: int | None = None
    bucket: str = ""
    side: bool = False
    role: str = ""

    @property
    def type_key(self) -> tuple[str, int, int | None]:
        # UniformTypeKVCacheSpecs.is_uniform_type: one spec type, one block size (one window).
        return (self.bucket or self.kind, self.block_size, self.window)


@dataclass(frozen=True, slots=True)
class PackedGroup:
    kind: str
    block_size: int
    window: int | None
    specs: tuple[PackedSpec, ...]

    @property
    def page_bytes(self) -> int:
        return sum(s.page_bytes for s in self.specs)


@dataclass(frozen=True, slots=True)
class Packing:
    """The groups, the repeats of the layer pattern a group holds (None: nothing repeats), and the
    bytes a block takes."""

    groups: tuple[PackedGroup, ...]
    repeats: int | None

    @property
    def widest(self) -> int:
        return max(g.page_bytes for g in self.groups)

    @property
    def alignment(self) -> int:
        return math.lcm(*(s.stride_alignment for g in self.groups for s in g.specs))

    @property
    def bytes_per_block(self) -> int:
        return self.stage_bytes_per_block(0, None)

    def stage_bytes_per_block(self, first: int, end: int | None) -> int:
        """The bytes a block takes on the worker of layers [first, end) (stages_bytes_per_block)."""
        return self.stages_bytes_per_block(((first, end if end is not None else 1 << 62),))[0]

    def stages_bytes_per_block(self, stages: Sequence[tuple[int, int]]) -> tuple[int, ...]:
        """_get_kv_cache_bytes_per_block (block-outermost) of each of these contiguous stages,
        [first, end) layers each: the widest group's pages rounded up to the lcm of the caches'
        block stride alignments (a pipeline stage's worker holds its own layers' share of every
        group, _project_kv_cache_groups_to_worker). One pass over the caches: a stage at a time,
        1,024 stages of a 4,096-layer model cost seconds."""
        starts = [a for a, _ in stages]
        pages = [[0] * len(self.groups) for _ in stages]
        aligns = [1] * len(stages)
        for gi, g in enumerate(self.groups):
            for s in g.specs:
                k = bisect_right(starts, s.layer) - 1
                if k >= 0 and s.layer < stages[k][1]:
                    pages[k][gi] += s.page_bytes
                    aligns[k] = math.lcm(aligns[k], s.stride_alignment)
        return tuple(cdiv(max(p), a) * a for p, a in zip(pages, aligns, strict=True))


def approximate_gcd(values: Sequence[int], lower_bound: int) -> int:
    """The repeats per group that pad the buckets least, ties to the larger (_approximate_gcd)."""
    best, best_pad = lower_bound, -1
    for d in range(lower_bound, max(values) + 1):
        pad = sum((d - x % d) % d for x in values)
        if best_pad < 0 or pad < best_pad or (pad == best_pad and d > best):
            best, best_pad = d, pad
    return best


def pack(specs: Sequence[PackedSpec]) -> Packing:
    """get_kv_cache_groups for a block-outermost layout: one group when every cache is of one type
    (UniformTypeKVCacheSpecs.from_specs), else _get_packed_kv_cache_groups."""
    buckets: dict[tuple[str, int, int | None], list[PackedSpec]] = {}
    for s in specs:  # greedy bucketing in registration order
        buckets.setdefault(s.type_key, []).append(s)
    if len(buckets) == 1:
        s0 = specs[0]
        return Packing((PackedGroup(s0.kind, s0.block_size, s0.window, tuple(specs)),), None)
    if len({s.page_bytes for s in specs}) == 1:
        raise InvalidInput(
            "model", "caches of one page size in several spec types: vLLM unifies them, not modelled"
        )
    # Per bucket: its caches by page size (first seen first); balanced: a 1:1 pattern of sizes.
    info = []
    for bucket in buckets.values():
        by_page: dict[int, list[PackedSpec]] = {}
        for s in bucket:
            by_page.setdefault(s.page_bytes, []).append(s)
        info.append(
            (bucket, by_page, len({len(v) for v in by_page.values()}) == 1, max(map(len, by_page.values())))
        )
    # Balanced buckets mixing page sizes stay whole: the largest sets the floor of the repeats.
    floor = max((most for _, by_page, bal, most in info if bal and len(by_page) > 1), default=0)
    repeats = approximate_gcd([most for *_, bal, most in info if bal], floor) if floor else None

    def n_groups(balanced: bool, most: int) -> int:
        return cdiv(most, repeats) if balanced and repeats is not None else 1

    def is_state(bucket: list[PackedSpec]) -> bool:
        kind = bucket[0].kind
        return kind in STATE_KINDS or (repeats is None and kind in SLIDING_KINDS)

    def widest(by_page: dict[int, list[PackedSpec]], n: int) -> int:
        return sum(cdiv(len(v), n) * page for page, v in by_page.items())

    # The bytes a block holds however the state buckets split; a state group is capped at it.
    anchor = max(
        widest(by_page, len(bucket) if is_state(bucket) else n_groups(bal, most))
        for bucket, by_page, bal, most in info
    )
    groups: list[PackedGroup] = []
    for bucket, by_page, bal, most in info:
        n = n_groups(bal, most)
        if anchor and is_state(bucket):
            n = max(n, cdiv(len(bucket), max(anchor // bucket[0].page_bytes, 1)))
        s0 = bucket[0]
        if n == 1:
            groups.append(PackedGroup(s0.kind, s0.block_size, s0.window, tuple(bucket)))
            continue
        pattern = list(zip(*by_page.values(), strict=False))
        for j in range(n):
            members = tuple(s for repeat in pattern[j::n] for s in repeat)
            groups.append(PackedGroup(s0.kind, s0.block_size, s0.window, members))
    return Packing(tuple(groups), repeats)
