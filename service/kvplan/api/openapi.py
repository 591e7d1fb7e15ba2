"""OpenAPI: Litestar generates the document; request bodies and query parameters are described
from the same msgspec Structs that decode them (msgspec's JSON Schema), so the docs cannot drift
from the validation. Swagger UI is served from the swagger-ui-bundle package: no CDN."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import msgspec
import swagger_ui_bundle
from litestar.openapi import OpenAPIConfig, ResponseSpec
from litestar.openapi.plugins import SwaggerRenderPlugin
from litestar.openapi.spec import Operation, Parameter, RequestBody
from litestar.openapi.spec.media_type import OpenAPIMediaType

from kvplan import __version__
from kvplan.core.budget import Budget
from kvplan.core.engine.command import Command
from kvplan.core.fleet.sweep import Sweep
from kvplan.core.fleet.types import FleetPlan
from kvplan.core.kv.pertoken import PerToken
from kvplan.core.limits import MAX_TRACE_BYTES
from kvplan.core.logs.reconcile import Reconciliation
from kvplan.core.sim.latency import Latency, Throughput
from kvplan.core.sim.simulate import Goodput, SimResult, TimingNote
from kvplan.core.traffic.search import RateSearch
from kvplan.schemas import (
    BatchRequest,
    BatchRequestDoc,
    BudgetRequest,
    FleetQuery,
    FleetRequest,
    PerTokenRequest,
    Problem,
    SimulateRequest,
    SweepQuery,
)
from kvplan.schemas.capacity import CapacityRequest
from kvplan.schemas.deployments import ReplicasRequest
from kvplan.schemas.plan import PlanRequest
from kvplan.schemas.reconcile import ReconcileOverrides, ReconcileRequest
from kvplan.services.deployments import DeploymentAnswer, DeploymentList, ReplicasAnswer

REF = "#/components/schemas/{name}"
SWAGGER_DIR = Path(swagger_ui_bundle.__file__).parent / "vendor" / "swagger-ui-5.31.0"
ASSETS = "/schema/assets"


class BudgetAnswer(Budget, kw_only=True, omit_defaults=True):
    """A budget answer: the core's figures plus the labels that make it reproducible."""

    model: str
    gpu: str | None
    registry_version: str


class PlanAnswer(BudgetAnswer, kw_only=True, omit_defaults=True):
    """A plan from a command: the budget answer, and how each flag of the command was read."""

    command: Command


class PerTokenAnswer(PerToken, kw_only=True, omit_defaults=True):
    """A per-token answer with the labels that make it reproducible."""

    model: str
    engine: str
    registry_version: str


class FleetAnswer(FleetPlan, kw_only=True, omit_defaults=True):
    """A fleet plan with the labels that make it reproducible."""

    model: str
    registry_version: str


class SweepAnswer(Sweep, kw_only=True):
    """A series with the labels that make it reproducible."""

    model: str
    registry_version: str


class SimulateAnswer(SimResult, kw_only=True):
    """A simulation with the pool it ran on and the labels that make it reproducible. A timed one
    (arrivals in seconds) adds latency, throughput, goodput, peak_in_flight, waiting_s and timing,
    and its series points add time_s."""

    engine: str
    registry_version: str
    pool: str
    num_blocks: int
    max_num_seqs: int
    max_num_batched_tokens: int
    latency: Latency | None = None
    throughput: Throughput | None = None
    goodput: Goodput | None = None
    peak_in_flight: int | None = None
    waiting_s: dict[str, float] | None = None
    timing: TimingNote | None = None
    concurrency: int | None = None
    request_rate: float | None = None
    trace: str | None = None


class CapacityAnswer(RateSearch, kw_only=True):
    """A capacity search with the replica it ran on and the labels that make it reproducible."""

    model: str
    gpu: str | None
    engine: str
    registry_version: str
    pool: str
    num_blocks: int
    max_num_seqs: int
    max_num_batched_tokens: int
    timing: TimingNote


class BatchItem(msgspec.Struct, omit_defaults=True):
    """One scenario's outcome: `result`, or `error` (an RFC 9457 problem)."""

    index: int
    result: BudgetAnswer | None = None
    error: Problem | None = None


class BatchAnswer(msgspec.Struct):
    results: list[BatchItem]


_REQUEST_TYPES: dict[type, str] = {
    PerTokenRequest: "PerTokenRequest",
    BudgetRequest: "BudgetRequest",
    BatchRequest: "BatchRequestDoc",
    FleetRequest: "FleetRequest",
    FleetQuery: "FleetQuery",
    SweepQuery: "SweepQuery",
    SimulateRequest: "SimulateRequest",
    CapacityRequest: "CapacityRequest",
    ReconcileRequest: "ReconcileRequest",
    ReconcileOverrides: "ReconcileOverrides",
    ReplicasRequest: "ReplicasRequest",
    PlanRequest: "PlanRequest",
}
_schemas, REQUEST_COMPONENTS = msgspec.json.schema_components(
    [PerTokenRequest, BudgetRequest, BatchRequestDoc, FleetRequest, FleetQuery, SweepQuery, SimulateRequest,
     CapacityRequest, ReconcileRequest, ReplicasRequest, PlanRequest],
    ref_template=REF,
)  # fmt: skip

EXAMPLES: dict[str, dict[str, Any]] = {
    "seed A: Llama-3-70B, 8K, 160 GiB (880 blocks, 6 requests)": {
        "model": "llama-3-70b",
        "gpu": "pool-160gib",
        "weights_bytes": 130 * 1024**3,
        "context_tokens": 8192,
        "non_kv_bytes": 0,
    },
    "seed B: DeepSeek-V3, 32K, one 141 GiB card of TP=8 (24 requests)": {
        "model": "deepseek-v3",
        "gpu": "pool-141gib",
        "weights_bytes": 625 * 1024**3,
        "context_tokens": 32768,
        "tensor_parallel_size": 8,
        "non_kv_bytes": 0,
    },
    "seed C: Llama-3-70B, 128K (0 requests, budget_insufficient)": {
        "model": "llama-3-70b",
        "gpu": "pool-160gib",
        "weights_bytes": 130 * 1024**3,
        "context_tokens": 131072,
        "non_kv_bytes": 0,
    },
}
PLAN_EXAMPLES = {
    "vllm serve, with the GPU it does not say": {
        "command": "vllm serve meta-llama/Llama-3.1-8B --max-model-len 32k --kv-cache-dtype fp8",
        "gpu": "h100-sxm-80gb",
    },
    "vLLM's printed non-default args": {
        "command": "non-default args: {'model': 'Qwen/Qwen3-32B', 'tensor_parallel_size': 2, "
        "'max_model_len': 32768, 'gpu_memory_utilization': 0.9}",
        "gpu": "h100-sxm-80gb",
        "engine": "0.11.0",
    },
}
PER_TOKEN_EXAMPLES = {
    "DeepSeek-V3, 128K": {"model": "deepseek-v3", "context_tokens": 131072},
    "Llama-3-70B fp8 under TP 4": {
        "model": "llama-3-70b",
        "kv_cache_dtype": "fp8",
        "tensor_parallel_size": 4,
    },
}


FLEET_EXAMPLES = {
    "seed B: DeepSeek-V3 on 8×141 GiB, TP=8 (24 a replica; pooling says 192)": {
        "model": "deepseek-v3",
        "workload": {"context_tokens": 32768},
        "weights_bytes": 625 * 1024**3,
        "fleet": [{"gpu": "pool-141gib", "count": 8}],
        "layouts": [{"tensor_parallel_size": 8}],
    },
    "Llama-3-70B, 1,000 concurrent 8K requests, three GPU types with costs": {
        "model": "llama-3-70b",
        "workload": {"context_tokens": 8192},
        "target_concurrency": 1000,
        "fleet": [
            {"gpu": "h100-sxm-80gb", "count": 64, "cost_per_hour": 2.5},
            {"gpu": "a100-80gb", "count": 64, "cost_per_hour": 1.6},
            {"gpu": "h200-141gb", "count": 32, "cost_per_hour": 3.5},
        ],
    },
}


SIMULATE_EXAMPLES = {
    "Llama-3-70B on 2×H100 (TP 2), 2,000 requests, half with a 2K system prompt": {
        "model": "llama-3-70b",
        "gpu": "h100-sxm-80gb",
        "tensor_parallel_size": 2,
        "workload": {
            "generator": {
                "count": 2000,
                "arrival_rate": 0.5,
                "seed": 1,
                "prompt": {"kind": "lognormal", "mean": 1000, "sigma": 0.5},
                "output": {"kind": "lognormal", "mean": 200, "sigma": 0.5},
                "system_prompt_share": 0.5,
                "system_prompt_tokens": 2048,
            }
        },
    },
    "the seed's block-table story: two requests sharing two prefix blocks": {
        "num_blocks": 32,
        "block_size": 16,
        "workload": {
            "requests": [
                {"prompt_tokens": 112, "output_tokens": 16, "prefix_id": "sys", "prefix_tokens": 32},
                {"prompt_tokens": 80, "output_tokens": 16, "prefix_id": "sys", "prefix_tokens": 32},
            ]
        },
    },
}


def _examples(name: str) -> dict[str, Any] | None:
    src = {
        "budget": EXAMPLES,
        "per_token": PER_TOKEN_EXAMPLES,
        "fleet": FLEET_EXAMPLES,
        "simulate": SIMULATE_EXAMPLES,
        "batch": {"the seed's three groups": {"scenarios": list(EXAMPLES.values())}},
        "plan": PLAN_EXAMPLES,
    }.get(name)
    return {k: {"summary": k, "value": v} for k, v in src.items()} if src else None


def _query_parameters(t: type) -> list[Parameter]:
    """The GET form of a request type as OpenAPI query parameters, read from the request's own component so
    both forms document the same fields; `model` is described as the preset id a query string takes."""
    schema = REQUEST_COMPONENTS[_REQUEST_TYPES[t]]
    required = set(schema.get("required", []))
    out = []
    for name, prop in schema["properties"].items():
        if name == "model":
            prop = {
                "type": "string",
                "description": "a preset id; inline models: model.geometry.<field>=… or POST",
                "examples": ["llama-3-70b"],
            }
        elif name == "kv_cache_dtype_skip_layers":
            prop = {
                "type": "string",
                "description": "comma-separated layer indices or sliding_window",
                "pattern": r"^((\d+|sliding_window)(,(\d+|sliding_window))*)?$",
            }
        out.append(
            Parameter(
                name=name,
                param_in="query",
                required=name in required,
                schema=prop,
                description=prop.get("description"),
            )
        )  # type: ignore[arg-type]
    return out


_FORMAT = Parameter(
    name="format",
    param_in="query",
    required=False,
    schema={"type": "string", "enum": ["json", "text"]},  # type: ignore[arg-type]
    description="text: an aligned answer for people, with warnings and ledger",
)
_SIMULATE_FORMAT = Parameter(
    name="format",
    param_in="query",
    required=False,
    schema={"type": "string", "enum": ["json", "text", "vllm-bench"]},  # type: ignore[arg-type]
    description=(
        "text: an aligned answer for people, with warnings and ledger; vllm-bench: a timed "
        "answer in the field names of `vllm bench serve --save-result` (mean_ttft_ms, p99_itl_ms, …)"
    ),
)
_EXPLAIN = Parameter(
    name="explain",
    param_in="query",
    required=False,
    schema={"type": "boolean"},  # type: ignore[arg-type]
    description="add the ledger (every step, formula, inputs and vLLM source)",
)


def _operation_class(t: type, method: str, text: bool, name: str) -> type[Operation]:
    """An Operation class for one calculation route: its request body (POST) or query parameters (GET), the
    examples, and the JSON and text answers it may give."""
    component = _REQUEST_TYPES[t]

    @dataclass
    class Documented(Operation):
        def __post_init__(self) -> None:
            """Fill in the operation: a POST's JSON body (with its examples) or a GET's query parameters,
            and the JSON or text answers it gives."""
            if method == "post":
                self.request_body = RequestBody(
                    required=True,
                    content={
                        "application/json": OpenAPIMediaType(
                            schema={"$ref": REF.format(name=component)},  # type: ignore[arg-type]
                            examples=_examples(name),
                        )
                    },  # type: ignore[arg-type]
                )
                formats = _SIMULATE_FORMAT if name == "simulate" else _FORMAT
                self.parameters = [_EXPLAIN, *([formats] if text else [])]
            elif name == "sweep":
                self.parameters = [
                    *_query_parameters(SweepQuery),
                    *_query_parameters(BudgetRequest),
                    _SWEEP_FORMAT,
                ]
            else:
                self.parameters = [*_query_parameters(t), _FORMAT, *([_EXPLAIN] if name != "fleet" else [])]
            ok = (self.responses or {}).get("200")
            if text and ok is not None and getattr(ok, "content", None):
                ok.content["text/plain"] = OpenAPIMediaType(schema={"type": "string"})  # type: ignore[index,arg-type]
                if name == "sweep":
                    ok.content["text/csv"] = OpenAPIMediaType(schema={"type": "string"})  # type: ignore[index,arg-type]

    Documented.__name__ = f"{name}_{method}_operation"
    return Documented


_SWEEP_FORMAT = Parameter(
    name="format",
    param_in="query",
    required=False,
    schema={"type": "string", "enum": ["json", "text", "csv"]},  # type: ignore[arg-type]
    description="csv for Grafana's CSV data source; text for people",
)
_ANSWERS = {
    "simulate": SimulateAnswer,
    "capacity": CapacityAnswer,
    "budget": BudgetAnswer,
    "plan": PlanAnswer,
    "per_token": PerTokenAnswer,
    "batch": BatchAnswer,
    "fleet": FleetAnswer,
    "sweep": SweepAnswer,
}


@dataclass
class TextAlternative(Operation):
    """A JSON answer that also comes as text/plain (?format=text or Accept: text/plain)."""

    def __post_init__(self) -> None:
        self.parameters = [*(self.parameters or []), _FORMAT]
        ok = (self.responses or {}).get("200")
        if ok is not None and getattr(ok, "content", None):
            ok.content["text/plain"] = OpenAPIMediaType(schema={"type": "string"})  # type: ignore[index,arg-type]


@dataclass
class ConfigBody(Operation):
    """POST /v1/models/resolve: the body is a Hugging Face config.json, any JSON object."""

    def __post_init__(self) -> None:
        """The config.json body, with real configs as examples."""
        self.request_body = RequestBody(
            required=True,
            description="a Hugging Face config.json, verbatim (multi-modal configs: text_config is read)",
            content={
                "application/json": OpenAPIMediaType(
                    schema={"type": "object"},  # type: ignore[arg-type]
                    examples={
                        "Llama-3.1-8B": {
                            "summary": "Llama-3.1-8B",
                            "value": {  # type: ignore[dict-item]
                                "model_type": "llama",
                                "num_hidden_layers": 32,
                                "num_attention_heads": 32,
                                "num_key_value_heads": 8,
                                "hidden_size": 4096,
                                "intermediate_size": 14336,
                                "vocab_size": 128256,
                                "max_position_embeddings": 131072,
                                "torch_dtype": "bfloat16",
                            },
                        }
                    },
                )
            },
        )


@dataclass
class ReplicasBody(TextAlternative):
    """POST /v1/deployments/{namespace}/{name}/replicas: what an autoscaler observed."""

    def __post_init__(self) -> None:
        super().__post_init__()
        self.request_body = RequestBody(
            required=True,
            description="each ready replica's /metrics text, or the numbers; and the mean prompt length",
            content={
                "application/json": OpenAPIMediaType(schema={"$ref": REF.format(name="ReplicasRequest")})  # type: ignore[arg-type]
            },
        )


_KINDS = ["prometheusrule", "keda", "hpa", "epp", "vllm-args"]


@dataclass
class ManifestQuery(Operation):
    """GET …/manifests?kind=…: YAML for an autoscaler, a router or vLLM itself."""

    def __post_init__(self) -> None:
        self.parameters = [
            *(self.parameters or []),
            Parameter(
                name="flavor",
                param_in="query",
                required=False,
                schema={"type": "string", "enum": ["llm-d", "gie"]},  # type: ignore[arg-type]
                description="kind=epp: llm-d (llm-d.ai/v1alpha1, the default) or gie (the Gateway API "
                "Inference Extension v1's inference.networking.x-k8s.io/v1alpha1)",
            ),
            Parameter(
                name="kind",
                param_in="query",
                required=True,
                schema={"type": "string", "enum": _KINDS},  # type: ignore[arg-type]
                description="prometheusrule, keda (ScaledObject), hpa (HorizontalPodAutoscaler and the "
                "prometheus-adapter rule), epp (the endpoint picker's config), vllm-args",
            ),
        ]


def plan_doc() -> dict[str, Any]:
    """POST /v1/plan: a command in, the budget answer (with how each flag was read) out."""
    return doc("plan", PlanRequest, "post")


def deployments_doc(kind: str) -> dict[str, Any]:
    """Decorator arguments for the /v1/deployments routes."""
    not_found = _problem("no such deployment in KVPLAN_DEPLOYMENTS, with the known ones")
    if kind == "list":
        return {**single(DeploymentList, "every deployment's plan"), "tags": ["deployments"]}
    if kind == "one":
        return {**single(DeploymentAnswer, "one deployment's plan", not_found), "tags": ["deployments"]}
    if kind == "replicas":
        ok = ResponseSpec(
            data_container=ReplicasAnswer, description="the desired count", generate_examples=False
        )
        return {
            "operation_class": ReplicasBody,
            "tags": ["deployments"],
            "responses": {200: ok, 400: _problem("invalid observation: names the field"), 404: not_found},
        }
    yaml = ResponseSpec(
        data_container=str, description="YAML", media_type="text/yaml", generate_examples=False
    )
    return {
        "operation_class": ManifestQuery,
        "tags": ["deployments"],
        "responses": {200: yaml, 404: not_found},
    }


def single(model: type, description: str, not_found: ResponseSpec | None = None) -> dict[str, Any]:
    """Decorator arguments for a catalog answer that comes as JSON or text."""
    responses = {200: ResponseSpec(data_container=model, description=description, generate_examples=False)}
    if not_found is not None:
        responses[404] = not_found
    return {"operation_class": TextAlternative, "tags": ["catalog"], "responses": responses}


def listing(model: type, description: str) -> dict[str, Any]:
    """Decorator arguments for a catalog listing that answers JSON or text (a listing has no 404)."""
    return single(model, description)


@dataclass
class LogBody(Operation):
    """POST /v1/reconcile: a vLLM log as text, or JSON with the log, metrics and overrides."""

    def __post_init__(self) -> None:
        self.request_body = RequestBody(
            required=True,
            # text/plain is taken too but not listed: generated clients (openapi-python-client)
            # refuse an operation with a text body; the description says it.
            description="JSON with the log, or vLLM's start-up log itself as text (curl --data-binary "
            "@engine.log; Content-Type text/plain); overrides may also be query parameters, which add to "
            "a JSON body's",
            content={
                "application/json": OpenAPIMediaType(
                    schema={"$ref": REF.format(name="ReconcileRequest")}  # type: ignore[arg-type]
                ),
            },
        )
        # The overrides a text log has no other place for (a JSON body's own may add to them).
        overrides = [p for p in _query_parameters(ReconcileOverrides) if p.name != "hf_config"]
        self.parameters = [*(self.parameters or []), *overrides, _FORMAT]


def reconcile_doc() -> dict[str, Any]:
    return {
        "operation_class": LogBody,
        "responses": {
            200: ResponseSpec(data_container=Reconciliation, description="the side-by-side",
                              generate_examples=False),
            400: _problem("not a vLLM log, metrics not in the exposition format, or a missing input"),
            413: _problem("the body is over the limit (12 MiB)"),
            503: _problem("the Hub did not answer for the log's model (give overrides.model)"),
        },
        "tags": ["reconcile"],
    }  # fmt: skip


def _problem(description: str) -> ResponseSpec:
    return ResponseSpec(
        data_container=Problem,
        description=description,
        media_type="application/problem+json",
        generate_examples=False,
    )


def doc(name: str, t: type, method: str) -> dict[str, Any]:
    """Decorator arguments that document a calculation endpoint."""
    text = True
    responses: dict[int, ResponseSpec] = {
        200: ResponseSpec(data_container=_ANSWERS[name], description="the answer", generate_examples=False),
        400: _problem("invalid input: the problem names the field and the reason"),
        404: _problem("unknown model or GPU preset, with close matches"),
        413: _problem("the body is over the limit (about 1 MiB)"),
    }
    if name == "simulate":
        responses[413] = _problem(
            f"a JSON workload over about 1 MiB, or a trace over {MAX_TRACE_BYTES:,} bytes (named)"
        )
    if method == "get":
        responses[304] = ResponseSpec(
            data_container=None, description="not modified (If-None-Match)", generate_examples=False
        )
    return {
        "operation_class": _operation_class(t, method, text, name),
        "responses": responses,
        "tags": [
            "fleet" if name in ("fleet", "sweep") else "simulation" if name == "simulate" else "calculations"
        ],
    }


def openapi_config() -> OpenAPIConfig:
    swagger = SwaggerRenderPlugin(
        js_url=f"{ASSETS}/swagger-ui-bundle.js",
        css_url=f"{ASSETS}/swagger-ui.css",
        standalone_preset_js_url=f"{ASSETS}/swagger-ui-standalone-preset.js",
        path="/",
        favicon="",
    )
    return OpenAPIConfig(
        title="kvplan",
        version=__version__,
        description=(
            "KV-cache capacity planning for vLLM, computed exactly as vLLM computes it. Every answer "
            "names the engine profile and the preset registry version it used; `?explain=true` adds "
            "the ledger and `?format=text` (or `Accept: text/plain`) gives a readable answer."
        ),
        path="/schema",
        render_plugins=[swagger],
        use_handler_docstrings=True,
    )


def document_text_errors(schema: Any) -> None:
    """A client that asked for text (?format=text, Accept: text/plain) gets its errors as text too,
    with the same status: every error answer documents text/plain beside problem+json. Litestar's
    own "Validation Exception" 400 (added for path parameters) is replaced by the problem every
    400 here is: its `extra` union (null, object or array) also trips client generators."""
    for item in (schema.paths or {}).values():
        for op in (item.get, item.post):
            for status, response in (op.responses or {}).items() if op is not None else ():
                content = getattr(response, "content", None)
                plain = content.get("application/json") if content else None
                plain_schema = getattr(plain, "schema", None) if plain is not None else None
                if (
                    str(status) == "400"
                    and getattr(plain_schema, "description", None) == "Validation Exception"
                ):
                    response.description = "invalid input: the problem names the field and the reason"
                    response.content = content = {
                        "application/problem+json": OpenAPIMediaType(
                            schema={"$ref": REF.format(name="Problem")}  # type: ignore[arg-type]
                        )
                    }
                if str(status)[0] in "45" and content is not None and "text/plain" not in content:
                    content["text/plain"] = OpenAPIMediaType(schema={"type": "string"})  # type: ignore[arg-type]


# What a client generator names each operation, and the one line Swagger UI shows for it.
OPERATION_NAMES: dict[tuple[str, str], tuple[str, str]] = {
    ("get", "/healthz"): ("getHealth", "Whether the process answers"),
    ("get", "/readyz"): ("getReadiness", "Whether the presets are loaded"),
    ("get", "/metrics"): ("getMetrics", "Prometheus metrics"),
    ("get", "/v1/per-token"): ("getPerToken", "KV bytes a token costs (query parameters)"),
    ("post", "/v1/per-token"): ("postPerToken", "KV bytes a token costs"),
    ("get", "/v1/budget"): ("getBudget", "The KV budget, blocks and requests (query parameters)"),
    ("post", "/v1/budget"): ("postBudget", "The KV budget, blocks and requests a GPU holds"),
    ("post", "/v1/budget/batch"): ("postBudgetBatch", "Up to 1000 budget scenarios in one call"),
    ("post", "/v1/plan"): ("planCommand", "The plan of a `vllm serve` command line"),
    ("get", "/v1/fleet"): ("getFleet", "One GPU type's layouts (query parameters)"),
    ("post", "/v1/fleet"): ("planFleet", "Which GPU types and layouts serve a load"),
    ("post", "/v1/capacity"): (
        "postCapacity",
        "The highest request rate one replica sustains within latency targets",
    ),
    ("get", "/v1/sweep"): ("getSweep", "A series of the budget along one axis"),
    ("post", "/v1/simulate"): ("simulateBlockPool", "What a workload does to vLLM's block pool"),
    ("post", "/v1/reconcile"): ("reconcileLog", "A vLLM start-up log beside kvplan's plan"),
    ("get", "/v1/models"): ("listModels", "Every model preset"),
    ("get", "/v1/models/{model_id}"): ("getModel", "One model: a preset or a Hugging Face id"),
    ("post", "/v1/models/resolve"): ("resolveConfig", "The geometry kvplan reads from a config.json"),
    ("get", "/v1/gpus"): ("listGpus", "Every GPU preset"),
    ("get", "/v1/gpus/{gpu_id}"): ("getGpu", "One GPU preset"),
    ("get", "/v1/engines"): ("listEngines", "The engine profiles (vLLM versions' rules)"),
    ("get", "/v1/deployments"): ("listDeployments", "Every deployment's plan (KVPLAN_DEPLOYMENTS)"),
    ("get", "/v1/deployments/{namespace}/{name}"): ("getDeployment", "One deployment's plan"),
    ("post", "/v1/deployments/{namespace}/{name}/replicas"): (
        "desiredReplicas",
        "The replicas a deployment's observed load asks for",
    ),
    ("get", "/v1/deployments/{namespace}/{name}/manifests"): (
        "getManifests",
        "An autoscaler, router or vLLM config generated from the plan (YAML)",
    ),
}


def name_operations(schema: Any) -> None:
    """Operation ids and summaries a client generator and Swagger UI want (not handler names)."""
    for path, item in (schema.paths or {}).items():
        for method in ("get", "post"):
            op = getattr(item, method)
            named = OPERATION_NAMES.get((method, path))
            if op is not None and named is not None:
                op.operation_id, op.summary = named
