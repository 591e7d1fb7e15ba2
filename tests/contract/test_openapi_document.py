"""The committed OpenAPI document is valid OpenAPI 3.1, names its operations as a client
generator wants them, and keeps to schemas generators read."""

from __future__ import annotations

import json
from pathlib import Path

from openapi_spec_validator import validate

from kvplan.api.openapi import OPERATION_NAMES

DOC = json.loads((Path(__file__).parents[2] / "openapi" / "openapi.json").read_text())


def test_the_document_is_valid_openapi():
    validate(DOC)


def test_every_operation_has_a_generator_friendly_id_and_a_summary():
    seen = {}
    for path, item in DOC["paths"].items():
        for method, op in item.items():
            if method in ("get", "post"):
                seen[(method, path)] = (op["operationId"], op["summary"])
    assert seen == OPERATION_NAMES
    assert all(op_id[0].islower() and op_id.isalnum() for op_id, _ in seen.values())


def test_no_union_holds_an_array_with_additional_properties():
    """openapi-python-client skips such a response (issue 16): keep unions plain."""

    def unions(node):  # type: ignore[no-untyped-def]
        if isinstance(node, dict):
            for key in ("anyOf", "oneOf"):
                yield from node.get(key, [])
            for v in node.values():
                yield from unions(v)
        elif isinstance(node, list):
            for v in node:
                yield from unions(v)

    bad = [
        u
        for u in unions(DOC)
        if isinstance(u, dict) and u.get("type") == "array" and "additionalProperties" in u
    ]
    assert not bad
