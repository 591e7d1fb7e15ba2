"""The fleet's deployments (KVPLAN_DEPLOYMENTS): their plans, the replica count a load asks for,
and the configs autoscalers, routers and vLLM read, generated from each plan."""

from __future__ import annotations

from typing import Any

import msgspec
from litestar import Request, Response, get, post
from litestar.params import FromPath

from kvplan.render_deployments import deployment_text, deployments_text, replicas_text
from kvplan.schemas.deployments import AutoscalingSettings, ReplicasRequest
from kvplan.services.deployments import (
    Plan,
    deployment_answer,
    deployment_list,
    lookup,
    observed_replicas,
    replicas_answer,
)
from kvplan.services.manifests import MANIFEST_KINDS, manifest_yaml

from ..deployments import Deployments, of
from ..errors import ApiError
from ..http import answer, answer_format, decode_body, query_param, text_width
from ..metrics import counted
from ..offload import run_heavy
from ..openapi import deployments_doc

# Each ready replica's /metrics, up to the number an autoscaler observes at once.
REPLICAS_MAX_BODY = 16 * 1024 * 1024
# text/yaml, not RFC 9512's application/yaml: clients generated from the OpenAPI document
# (openapi-python-client) read text/* as a string and skip an operation answering application/yaml.
YAML = "text/yaml"


def _plans(request: Request[Any, Any, Any]) -> Deployments:
    """The deployments, once their first reading has ended (503 before: a 404 would be a lie)."""
    d = of(request.app.state)
    if d.loading:
        raise ApiError(503, "The deployments file is being planned; ask again in a moment.",
                       title="Service Unavailable", headers={"Retry-After": "2"})  # fmt: skip
    return d


def _plan(request: Request[Any, Any, Any], namespace: str, name: str) -> tuple[Deployments, Plan]:
    """The deployments and the plan of namespace/name (404 naming the known ones)."""
    d = _plans(request)
    return d, lookup(d.fleet, namespace, name, d.configured)


@get("/v1/deployments", **deployments_doc("list"))
async def list_deployments(request: Request[Any, Any, Any]) -> Response[bytes]:
    """Every deployment of KVPLAN_DEPLOYMENTS with its series' values, and what the last reading
    of the file could not plan (each by name)."""
    d = _plans(request)
    result = deployment_list(d.fleet, d.failures(), d.path or None, d.reload_state())
    if answer_format(request) == "text":
        return answer(deployments_text(result), True)
    return answer(msgspec.json.encode(result), False)


@get("/v1/deployments/{namespace:str}/{name:str}", **deployments_doc("one"))
async def get_deployment(
    request: Request[Any, Any, Any], namespace: FromPath[str], name: FromPath[str]
) -> Response[bytes]:
    """One deployment's plan: its inputs, its series' values and the whole /v1/budget answer."""
    d, plan = _plan(request, namespace, name)
    result = deployment_answer(plan, d.failures(), whole=True)
    if answer_format(request) == "text":
        return answer(deployment_text(result, plan), True)
    return answer(msgspec.json.encode(result), False)


@post(
    "/v1/deployments/{namespace:str}/{name:str}/replicas",
    status_code=200,
    request_max_body_size=REPLICAS_MAX_BODY,
    **deployments_doc("replicas"),
)
async def post_replicas(
    request: Request[Any, Any, Any], namespace: FromPath[str], name: FromPath[str]
) -> Response[bytes]:
    """The replicas a deployment's observed load asks for, with every term of the rule: the same
    count as Prometheus's kvplan:deployment_desired_replicas for the same load."""
    _, plan = _plan(request, namespace, name)
    req = await decode_body(request, ReplicasRequest)
    if req.metrics is not None:  # parsing scrapes is CPU work: off the event loop
        r = await run_heavy(
            request, "replicas", lambda stop: counted("replicas", lambda: observed_replicas(plan, req, stop))
        )
    else:
        r = counted("replicas", lambda: observed_replicas(plan, req))
    result = replicas_answer(plan, r)
    if answer_format(request) == "text":
        return answer(replicas_text(result, text_width(query_param(request, "width"))), True)
    return answer(msgspec.json.encode(result), False)


@get("/v1/deployments/{namespace:str}/{name:str}/manifests", **deployments_doc("manifests"))
async def get_manifests(
    request: Request[Any, Any, Any], namespace: FromPath[str], name: FromPath[str]
) -> Response[bytes]:
    """A config generated from the plan, as YAML: kind=prometheusrule, keda, hpa, epp or vllm-args."""
    answer_format(request, ("yaml",))
    kind = query_param(request, "kind")
    if kind not in MANIFEST_KINDS:
        given = "is missing" if kind is None else f"{kind!r} is not one"
        raise ApiError(400, f"kind: {given}; valid: {', '.join(MANIFEST_KINDS)}", field="kind")
    d, plan = _plan(request, namespace, name)
    settings = d.fleet.settings if d.fleet is not None else AutoscalingSettings()
    body = manifest_yaml(kind, plan, settings, query_param(request, "flavor"))
    return Response(body.encode(), media_type=YAML)


ROUTES = [list_deployments, get_deployment, post_replicas, get_manifests]
