"""The Litestar application factory."""

from __future__ import annotations

import gc
from pathlib import Path
from typing import Any

import structlog
from litestar import Litestar, Response, get
from litestar.datastructures import State
from litestar.plugins.prometheus import PrometheusConfig
from litestar.plugins.structlog import StructlogConfig, StructlogPlugin
from litestar.response import File
from litestar.static_files import create_static_files_router

from kvplan import __version__, compiled
from kvplan.hub import cache_only
from kvplan.presets import Registry, load_registry

from . import logs, metrics
from .deployments import Deployments
from .errors import EXCEPTION_HANDLERS
from .hygiene import HttpHygiene, RouteHygiene
from .openapi import (
    ASSETS,
    REQUEST_COMPONENTS,
    SWAGGER_DIR,
    document_text_errors,
    name_operations,
    openapi_config,
)
from .routes.calc import budget_batch, budget_get, budget_post, per_token_get, per_token_post, plan_post
from .routes.capacity import capacity_post
from .routes.catalog import get_gpu, get_model, list_engines, list_gpus, list_models, resolve_config
from .routes.deployments import ROUTES as DEPLOYMENT_ROUTES
from .routes.fleet import fleet_get, fleet_post, sweep_get
from .routes.health import healthz, prometheus_metrics, readyz
from .routes.reconcile import reconcile_post
from .routes.simulate import simulate_post
from .settings import Settings

ROUTES: list[Any] = [
    per_token_post,
    per_token_get,
    budget_post,
    budget_get,
    budget_batch,
    plan_post,
    fleet_post,
    fleet_get,
    sweep_get,
    simulate_post,
    capacity_post,
    reconcile_post,
    *DEPLOYMENT_ROUTES,
    list_models,
    get_model,
    list_gpus,
    get_gpu,
    list_engines,
    resolve_config,
    healthz,
    readyz,
    prometheus_metrics,
]


def _prometheus() -> PrometheusConfig:
    # Route templates as labels; /metrics itself and the docs are not counted.
    return PrometheusConfig(
        app_name="kvplan", prefix="kvplan_http", group_path=True, exclude=["^/metrics", "^/schema"]
    )


def _load_presets(settings: Settings, registry: Registry | None) -> Any:
    async def on_startup(app: Litestar) -> None:
        reg = registry or load_registry(settings.extra_presets)
        app.state.registry = reg
        metrics.REGISTRY_INFO.labels(reg.version, str(len(reg.models)), str(len(reg.gpus))).set(1)

    return on_startup


async def _say_which_simulator(app: Litestar) -> None:
    """Compiled or the Python source, and why (kvplan/compiled.py): an operator reads it once."""
    structlog.get_logger("kvplan.simulator").info("simulator", status=compiled.STATUS)


async def _watch_deployments(app: Litestar) -> None:
    """Plan KVPLAN_DEPLOYMENTS (after the presets) and watch it for changes."""
    plans: Deployments = app.state.deployments
    if plans.configured:
        plans.start(app.state.registry)
        await plans.first_load()


async def _stop_watching(app: Litestar) -> None:
    await app.state.deployments.stop()


WEB_DIR = Path(__file__).resolve().parents[1] / "web"


async def _answers_never_fetch(_request: Any) -> None:
    """An answer's own work finds Hub models in the cache: routes fetch them first (hubfetch.py),
    in the Hub pool, so nothing else can wait on the network."""
    cache_only()


@get("/", include_in_schema=False, sync_to_thread=False)
def planner_page() -> File:
    """The planner page (static: every figure on it comes from this API)."""
    return File(WEB_DIR / "index.html", content_disposition_type="inline", media_type="text/html")


@get("/bench/constant", include_in_schema=False, sync_to_thread=False)
def bench_constant() -> Response[bytes]:
    """The baseline for benchmarks: the same server, middleware and logs, no work."""
    return Response(b'{"ok":true}', media_type="application/json")


GC_YOUNG_THRESHOLD = 20_000


def create_app(settings: Settings | None = None, registry: Registry | None = None) -> Litestar:
    """Build the service. Presets load at start-up (/readyz turns ready then); a malformed
    preset file stops start-up. Pass `registry` to use one already loaded (tests)."""
    settings = settings or Settings()
    # A simulation allocates millions of small objects that live for its whole run (a request's
    # state, its block tables): at CPython's default of a collection every 700 allocations the
    # collector walks them over and over (~8 % of a day of 1M requests). None of them form cycles.
    gc.set_threshold(GC_YOUNG_THRESHOLD, *gc.get_threshold()[1:])
    metrics.BUILD_INFO.labels(__version__).set(1)
    metrics.SIMULATOR_INFO.labels("compiled" if compiled.active() else "python").set(1)
    prometheus = _prometheus()
    app = Litestar(
        route_handlers=[
            *ROUTES,
            *([bench_constant] if settings.bench_routes else []),
            create_static_files_router(path=ASSETS, directories=[SWAGGER_DIR], include_in_schema=False),
            planner_page,
            create_static_files_router(path="/web", directories=[WEB_DIR], include_in_schema=False),
        ],
        # Prometheus first (outermost of the two), so the 415s and OPTIONS answers of RouteHygiene count.
        middleware=[prometheus.middleware, RouteHygiene],
        plugins=[
            StructlogPlugin(
                StructlogConfig(
                    logs.structlog_config(settings.log_level, settings.log_json),
                    enable_middleware_logging=False,
                )
            )
        ],
        exception_handlers=EXCEPTION_HANDLERS,
        openapi_config=openapi_config(),
        on_startup=[_load_presets(settings, registry), _say_which_simulator, _watch_deployments],
        on_shutdown=[_stop_watching],
        before_request=_answers_never_fetch,
        request_max_body_size=settings.max_body_bytes,
        state=State(
            {
                "settings": settings,
                "deployments": Deployments(settings.deployments, settings.deployments_reload_seconds),
            }
        ),
        debug=False,
    )
    # Request bodies and query parameters are documented from the msgspec Structs that decode
    # them; Litestar builds its components from responses, so add the request ones once.
    app.openapi_schema.components.schemas.update(REQUEST_COMPONENTS)
    document_text_errors(app.openapi_schema)
    name_operations(app.openapi_schema)
    # The access log wraps everything, 404s and 405s included; inside it, HEAD, 414, bounded body
    # draining and the counting of the router's own answers (hygiene.HttpHygiene).
    hygiene = HttpHygiene(
        app.asgi_handler,
        app,
        prometheus,
        unread_body_bytes=settings.unread_body_bytes,
        unread_body_seconds=settings.header_timeout_seconds,
    )
    app.asgi_handler = logs.AccessLog(hygiene)  # type: ignore[method-assign]
    return app
