"""The inline geometry (schemas.GeometrySpec, what `model: {geometry: …}` takes and the catalog
answers) and the core's Geometry name their fields once: a field of the same name is copied as
it is, every other is listed with what it becomes (services/inline.py). A field added to one side
without a place on the other fails here, instead of being dropped on the way."""

from __future__ import annotations

from kvplan.core.model.geometry import Geometry, QsaCaches
from kvplan.core.model.mamba import MambaState
from kvplan.schemas import GeometrySpec, MambaStateSpec, QsaSpec
from kvplan.services.inline import (
    CONVERTED,
    NOT_INLINE,
    SAME,
    SPELLED_OTHERWISE,
    STATE_CONVERTED,
    STATE_DIMS,
)

CORE = set(Geometry.__struct_fields__)
WIRE = set(GeometrySpec.__struct_fields__)


def test_every_core_geometry_field_has_a_wire_field_or_says_why_not():
    placed = set(SAME) | CONVERTED | set(SPELLED_OTHERWISE) | set(NOT_INLINE)
    assert sorted(CORE - placed) == []  # a core field the inline geometry would drop
    assert sorted(placed - CORE) == []  # a listed field the core no longer has


def test_every_wire_geometry_field_carries_a_core_field():
    carried = set(SAME) | CONVERTED | {w for ws in SPELLED_OTHERWISE.values() for w in ws}
    assert sorted(WIRE - carried) == []  # a wire field the core would never read
    assert sorted(carried - WIRE) == []  # a listed wire field the schema no longer has


def test_a_field_is_copied_converted_spelled_otherwise_or_not_inline_never_two_of_them():
    groups = [set(SAME), set(CONVERTED), set(SPELLED_OTHERWISE), set(NOT_INLINE)]
    for i, a in enumerate(groups):
        for b in groups[i + 1 :]:
            assert a.isdisjoint(b), a & b
    assert CONVERTED <= CORE & WIRE  # converted fields keep their name on both sides
    assert set(SPELLED_OTHERWISE).isdisjoint(WIRE) and set(NOT_INLINE).isdisjoint(WIRE)


def test_a_mamba_state_and_the_qsa_caches_have_the_same_fields_on_both_sides():
    assert set(MambaStateSpec.__struct_fields__) == set(MambaState.__struct_fields__)
    assert set(STATE_DIMS) | STATE_CONVERTED == set(MambaState.__struct_fields__)
    assert set(QsaSpec.__struct_fields__) == set(QsaCaches.__struct_fields__)
