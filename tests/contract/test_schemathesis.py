"""Property-based contract testing of the live server against its own OpenAPI document:
no 5xx, and no answer that breaks its own schema. Bounded for CI (KVPLAN_SCHEMATHESIS_EXAMPLES,
default 25 per operation); `make contract` runs the long version.

The operations' strategies come from schemathesis and run under plain hypothesis (its pytest
plugin reads a pytest internal that pytest 9 removed)."""

from __future__ import annotations

import os

import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings
from schemathesis.checks import (
    content_type_conformance,
    not_a_server_error,
    response_schema_conformance,
    status_code_conformance,
)

from tests.live import Server

pytestmark = pytest.mark.server
EXAMPLES = int(os.environ.get("KVPLAN_SCHEMATHESIS_EXAMPLES", "25"))
CHECKS = [not_a_server_error, status_code_conformance, content_type_conformance, response_schema_conformance]


@pytest.fixture(scope="module")
def operations(server: Server) -> dict[str, schemathesis.APIOperation]:
    schema = schemathesis.openapi.from_url(f"{server.url}/schema/openapi.json")
    ops = {}
    for result in schema.get_all_operations():
        op = result.ok()
        ops[op.label] = op
    return ops


OPERATIONS = [
    "GET /healthz",
    "GET /readyz",
    "GET /metrics",
    "GET /v1/engines",
    "GET /v1/gpus",
    "GET /v1/gpus/{gpu_id}",
    "GET /v1/models",
    "GET /v1/models/{model_id}",
    "POST /v1/models/resolve",
    "POST /v1/reconcile",
    "GET /v1/per-token",
    "POST /v1/per-token",
    "GET /v1/budget",
    "POST /v1/budget",
    "POST /v1/budget/batch",
    "POST /v1/plan",
    "GET /v1/fleet",
    "POST /v1/fleet",
    "GET /v1/sweep",
    "POST /v1/simulate",
    "POST /v1/capacity",
    "GET /v1/deployments",
    "GET /v1/deployments/{namespace}/{name}",
    "POST /v1/deployments/{namespace}/{name}/replicas",
    "GET /v1/deployments/{namespace}/{name}/manifests",
]


def test_every_documented_operation_is_exercised(operations):
    assert set(operations) == set(OPERATIONS)


@pytest.mark.parametrize("label", OPERATIONS)
def test_operation_answers_within_its_contract(operations, server, label):
    op = operations[label]
    served = 0

    @given(case=op.as_strategy())
    @settings(
        max_examples=EXAMPLES,
        deadline=None,
        derandomize=True,
        database=None,
        suppress_health_check=list(HealthCheck),
    )
    def run(case: schemathesis.Case) -> None:
        nonlocal served
        response = case.call(base_url=server.url, timeout=30)
        case.validate_response(response, checks=CHECKS)
        served += 1

    run()
    assert served > 0
    report = os.environ.get("KVPLAN_CONTRACT_REPORT")
    if report:  # the reliability suite counts the cases actually run
        with open(report, "a") as f:
            f.write(f"{label}\t{served}\n")
