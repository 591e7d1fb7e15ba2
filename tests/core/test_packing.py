"""The one block-outermost packer (core/kv/packing.py), vLLM 0.33.0's _get_packed_kv_cache_groups and
_get_kv_cache_bytes_per_block, on small hand-made caches."""

from __future__ import annotations

import pytest

from kvplan.core.errors import InvalidInput
from kvplan.core.kv.packing import PackedSpec, approximate_gcd, pack
from kvplan.core.model.geometry import CIRCULAR_BUFFER, FULL, MAMBA, MLA, SLIDING


def test_the_approximate_gcd_pads_least_from_its_floor_and_ties_to_the_larger():
    assert approximate_gcd([12, 36], 12) == 12  # 12 pads nothing, 36 pads 24
    assert approximate_gcd([3, 4], 1) == 1
    assert approximate_gcd([6, 4], 4) == 6  # 4 and 6 both pad 2: the larger
    assert approximate_gcd([5], 7) == 7  # a floor above every value is kept


def test_caches_of_one_spec_type_are_one_group_whatever_their_pages():
    specs = [PackedSpec(i, MLA, 64, 1000 + i) for i in range(3)]
    p = pack(specs)
    assert len(p.groups) == 1 and p.groups[0].page_bytes == 3003 and p.repeats is None


def test_a_balanced_mixed_bucket_stays_whole_and_splits_the_others_to_its_repeats():
    # 4 layers of latent + indexer (a 1:1 pattern), 12 sliding layers of one page.
    pair = (PackedSpec(0, MLA, 64, 100), PackedSpec(0, MLA, 64, 10, side=True))
    specs = [PackedSpec(i, s.kind, 64, s.page_bytes, side=s.side) for i in range(4) for s in pair]
    specs += [PackedSpec(4 + i, SLIDING, 64, 50) for i in range(12)]
    p = pack(specs)
    assert p.repeats == 4
    assert [len(g.specs) for g in p.groups] == [8, 4, 4, 4]
    assert [s.layer for s in p.groups[1].specs] == [4, 7, 10, 13]  # repeats j, j + k, …
    assert p.bytes_per_block == 440


def test_a_state_bucket_never_widens_the_block():
    # One full-attention group of 2 × (100 + 10) B; 5 Mamba states of 100 B: 2 a group at most.
    specs = [s for i in range(2) for s in (PackedSpec(i, FULL, 16, 100), PackedSpec(i, FULL, 16, 10))]
    specs += [PackedSpec(2 + i, MAMBA, 16, 100) for i in range(5)]
    specs += [PackedSpec(0, CIRCULAR_BUFFER, 4, 30), PackedSpec(1, CIRCULAR_BUFFER, 4, 30)]
    p = pack(specs)
    mamba = [g for g in p.groups if g.kind == MAMBA]
    assert [len(g.specs) for g in mamba] == [2, 2, 1]
    assert p.widest == 220 and p.bytes_per_block == 220


def test_the_block_is_rounded_up_to_every_caches_stride_alignment_and_stages_hold_their_share():
    specs = [PackedSpec(0, MLA, 64, 100, 48), PackedSpec(0, MLA, 64, 10, 7), PackedSpec(1, SLIDING, 64, 30)]
    specs += [PackedSpec(1, MLA, 64, 100, 48), PackedSpec(1, MLA, 64, 10, 7)]
    p = pack(specs)
    assert p.alignment == 336 and p.bytes_per_block == 336
    assert p.stage_bytes_per_block(1, None) == 336 and p.stage_bytes_per_block(0, 1) == 336


def test_several_spec_types_of_one_page_size_are_not_packed():
    with pytest.raises(InvalidInput) as e:
        pack([PackedSpec(0, FULL, 16, 100), PackedSpec(1, SLIDING, 16, 100)])
    assert e.value.field == "model"
