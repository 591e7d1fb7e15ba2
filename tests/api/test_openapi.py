"""The committed OpenAPI document is what the app generates (run `make openapi` after API changes)."""

from __future__ import annotations

import json
from pathlib import Path

from kvplan.cli import openapi_json

COMMITTED = Path(__file__).resolve().parents[2] / "openapi" / "openapi.json"


def test_committed_openapi_matches_the_app():
    assert COMMITTED.read_text() == openapi_json(), "openapi/openapi.json is stale: run `make openapi`"


def test_every_calculation_documents_its_errors_and_examples():
    doc = json.loads(COMMITTED.read_text())
    for path in ("/v1/budget", "/v1/per-token"):
        for method in ("get", "post"):
            op = doc["paths"][path][method]
            assert {"200", "400", "404", "413"} <= set(op["responses"]), (path, method)
            assert "text/plain" in op["responses"]["200"]["content"]
    examples = doc["paths"]["/v1/budget"]["post"]["requestBody"]["content"]["application/json"]["examples"]
    assert any("880 blocks" in k for k in examples)
    params = {p["name"] for p in doc["paths"]["/v1/budget"]["get"]["parameters"]}
    assert {"model", "gpu", "context_tokens", "tensor_parallel_size", "format", "explain"} <= params


def test_every_format_a_route_answers_is_in_its_documented_enum():
    """/v1/simulate answers ?format=vllm-bench too (routes/simulate.py FORMATS): a client generated
    from the document may send it."""
    from kvplan.api.routes.simulate import FORMATS

    doc = json.loads(COMMITTED.read_text())
    params = {p["name"]: p for p in doc["paths"]["/v1/simulate"]["post"]["parameters"]}
    assert params["format"]["schema"]["enum"] == list(FORMATS)
