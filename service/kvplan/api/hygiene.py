"""HTTP hygiene: what every route gets from HTTP itself, whatever the handler does.

Two layers (the request head's size and arrival time are bounded earlier, in `protocol`):

`HttpHygiene`, outer ASGI layer (inside the access log, before routing):
- HEAD on any GET route: routed as the GET, answered with its status and headers (Content-Length
  included) and no body. Litestar routes HEAD only to handlers declared for it.
- A path over MAX_PATH_BYTES gets 414 (and is never echoed whole).
- An answer given before the body was read (413 on Content-Length, 404/405/415 on a POST): up to
  `unread_body_bytes` of the body are read and discarded first (for at most `header_timeout_seconds`),
  so a client still sending reads the answer instead of a connection reset; past that bound the
  answer says `Connection: close`. A client waiting on `Expect: 100-continue` sent no body: the
  answer closes the connection instead, so no body is ever expected on it.
- A body the protocol refused while it was still arriving (408 too slow, 503 past the worker's
  byte budget: `protocol` has answered on the wire already and closed) ends the app's reads of it
  with that same answer (`REFUSED`), so the app counts and logs it as the route's, never as a 500.
- 405's Allow names HEAD beside GET.
- Answers Litestar's router gives itself (404 no route, 405 no such method) and 414 are counted in
  kvplan_http_requests_total: Litestar's Prometheus middleware runs per route and never sees them.
  Their path label is the route template for a 405 and `<unmatched>` otherwise.

`RouteHygiene`, route middleware (after routing, inside the Prometheus middleware, so counted):
- OPTIONS answers 204 with the route's real Allow (Litestar's own names only the methods of the
  first handler registered on a path: OPTIONS /v1/budget omitted GET).
- A body must be of a media type the route reads: `opt={"body_media_types": (...)}` on the handler,
  JSON by default (`application/json`, `application/*+json`; charset utf-8 or none). No
  Content-Type at all is read as JSON (curl users). Else 415, as for any Content-Encoding but
  identity (gzip bodies are not decompressed).
- Path parameters (preset ids) longer than MAX_ID_CHARS get 404 without the id echoed.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

import msgspec
from litestar import Litestar
from litestar.plugins.prometheus import PrometheusConfig
from litestar.plugins.prometheus.middleware import PrometheusMiddleware
from litestar.utils.path import normalize_path

from kvplan.core.limits import MAX_NAME_LENGTH as MAX_ID_CHARS
from kvplan.core.limits import MAX_PATH_BYTES
from kvplan.schemas import Problem

from .errors import ApiError

# A deployment's name is a Kubernetes object name: up to 253 characters (schemas/deployments.py).
_PATH_CHARS = {"name": 253}

REFUSED = "kvplan.refused"
"""Scope key the protocol sets when it refused a body still arriving (408 too slow, 503 over the
byte budget): (status, detail, Retry-After seconds or None). It has answered on the wire already;
the app's next read of the body raises the same answer, so it is counted and logged like any."""
_REFUSED_TITLES = {408: "Request timeout", 503: "Service unavailable"}
BODY_MEDIA_TYPES = "body_media_types"
"""Handler `opt` key: the media types a route reads its body as (default: JSON only)."""
JSON_TYPES = ("application/json",)
UNMATCHED = "<unmatched>"
PROBLEM_JSON = b"application/problem+json"
_BODY_METHODS = frozenset({"POST", "PUT", "PATCH"})
_INSTANCE_CHARS = 200


def problem_message(scope: Any, status: int, title: str, detail: str, field: str | None = None) -> bytes:
    """An RFC 9457 body as `errors.problem_response` writes it, the path cut to 200 characters."""
    path = scope.get("path", "")
    instance = path if len(path) <= _INSTANCE_CHARS else path[:_INSTANCE_CHARS] + "…"
    request_id = scope.get("state", {}).get("request_id")
    return msgspec.json.encode(
        Problem(
            title=title, status=status, detail=detail, field=field, instance=instance, request_id=request_id
        )
    )


async def send_problem(
    scope: Any,
    send: Any,
    status: int,
    title: str,
    detail: str,
    field: str | None = None,
    headers: tuple[tuple[bytes, bytes], ...] = (),
) -> None:
    body = problem_message(scope, status, title, detail, field)
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", PROBLEM_JSON),
                (b"content-length", str(len(body)).encode()),
                *headers,
            ],
        }
    )
    await send({"type": "http.response.body", "body": body, "more_body": False})


def _with_head(allow: bytes) -> bytes:
    methods = {m.strip().upper() for m in allow.decode("latin-1").split(",") if m.strip()}
    if "GET" in methods:
        methods.add("HEAD")
    return ", ".join(sorted(methods)).encode()


class HttpHygiene:
    """The outer layer (see the module docstring)."""

    def __init__(
        self,
        app: Any,
        litestar: Litestar,
        prometheus: PrometheusConfig,
        unread_body_bytes: int,
        unread_body_seconds: float,
    ) -> None:
        self.app = app
        self.router = litestar.asgi_router
        self.unread_body_bytes = unread_body_bytes
        self.unread_body_seconds = unread_body_seconds
        self.prometheus_app_name = prometheus.app_name
        # Only for its metric objects (created once per process, shared with the per-route middleware).
        self._prometheus = PrometheusMiddleware(app=app, config=prometheus)

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        """Serve one request with the HTTP hygiene every route shares: HEAD answered as GET without a
        body (and HEAD in Allow), an over-long path refused with 414, an unread body drained within
        its bounds before an early answer, and requests no route matched counted in the metrics."""
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        start = time.perf_counter()
        method = scope["method"]
        head = method == "HEAD"
        inner = {**scope, "method": "GET"} if head else scope

        has_body = expect_continue = False
        for name, value in scope["headers"]:
            if name == b"content-length":
                has_body = value.strip() not in (b"0", b"")
            elif name == b"transfer-encoding":
                has_body = True
            elif name == b"expect":
                expect_continue = value.lower() == b"100-continue"
        body_read = not has_body
        status = 0

        async def receive_tracked() -> Any:
            nonlocal body_read
            message = await receive()
            if message["type"] != "http.request" or not message.get("more_body", False):
                body_read = True
                if message["type"] == "http.disconnect" and (refused := scope.get(REFUSED)):
                    status, detail, retry_after = refused
                    headers = {"Retry-After": str(retry_after)} if retry_after is not None else None
                    raise ApiError(status, detail, title=_REFUSED_TITLES.get(status), headers=headers)
            return message

        async def send_checked(message: Any) -> None:
            nonlocal status, body_read
            kind = message["type"]
            if kind == "http.response.start":
                status = message["status"]
                extra: list[tuple[bytes, bytes]] = []
                if not body_read:
                    # An answer before the body was read: drain a bounded part of it first.
                    if expect_continue or not await self._drain(receive):
                        extra.append((b"connection", b"close"))
                    body_read = True
                if status == 405:
                    headers = [
                        (k, _with_head(v)) if k.lower() == b"allow" else (k, v) for k, v in message["headers"]
                    ]
                    message = {**message, "headers": headers + extra}
                elif extra:
                    message = {**message, "headers": [*message.get("headers", ()), *extra]}
            elif head and kind == "http.response.body" and message.get("body"):
                message = {**message, "body": b""}
            await send(message)

        # raw_path holds no query under uvicorn, but does under some test clients: cut it off.
        raw_path = (scope.get("raw_path") or scope["path"].encode()).partition(b"?")[0]
        if len(raw_path) > MAX_PATH_BYTES:
            await send_problem(
                scope,
                send_checked,
                414,
                "URI too long",
                f"The path is {len(raw_path)} bytes long; kvplan's paths are at most {MAX_PATH_BYTES}.",
            )
        else:
            await self.app(inner, receive_tracked if has_body else receive, send_checked)
        if head and "path_template" in inner:
            scope["path_template"] = inner["path_template"]  # for the access log
        if "route_handler" not in inner:
            self._count_unrouted(method, scope["path"], status, time.perf_counter() - start)

    async def _drain(self, receive: Any) -> bool:
        """Read and discard the body, up to the bounds. True when it was read to its end."""
        seen = 0
        try:
            async with asyncio.timeout(self.unread_body_seconds):
                while True:
                    message = await receive()
                    if message["type"] != "http.request":
                        return True  # the client went away
                    seen += len(message.get("body", b""))
                    if not message.get("more_body", False):
                        return True
                    if seen > self.unread_body_bytes:
                        return False
        except TimeoutError:
            return False

    def _count_unrouted(self, method: str, path: str, status: int, seconds: float) -> None:
        label = UNMATCHED
        if status == 405:
            try:
                label = self.router.handle_routing(path=normalize_path(path), method="OPTIONS")[4]
            except Exception:
                label = UNMATCHED
            excluded = self._prometheus.exclude_pattern
            if excluded is not None and excluded.search(label):
                return  # /metrics and /schema are not counted, whatever the method
        labels: dict[str, str | int | float] = {
            "method": method,
            "path": label,
            "status_code": status,
            "app_name": self.prometheus_app_name,
        }
        values = list(labels.values())
        self._prometheus.request_count(labels).labels(*values).inc()
        self._prometheus.request_time(labels).labels(*values).observe(seconds)
        if status >= 500:
            self._prometheus.requests_error_count(labels).labels(*values).inc()


# What nearly every client sends (httpx, requests, curl --json): read without parsing.
_PLAIN_JSON = frozenset({b"application/json", b"application/json; charset=utf-8"})


def _media_type_problem(scope: Any) -> tuple[str, tuple[tuple[bytes, bytes], ...]] | None:
    """Why this request's body cannot be read by its route, or None."""
    content_type = encoding = None
    raw_type = b""
    for name, value in scope["headers"]:
        if name == b"content-type":
            raw_type = value
            content_type = value.decode("latin-1")
        elif name == b"content-encoding":
            encoding = value.decode("latin-1").strip().lower()
    accepted = scope["route_handler"].opt.get(BODY_MEDIA_TYPES, JSON_TYPES)
    if raw_type in _PLAIN_JSON and encoding is None and JSON_TYPES[0] in accepted:
        return None
    if encoding and encoding != "identity":
        return (
            f"Content-Encoding {encoding[:40]!r} is not accepted: send the body uncompressed.",
            ((b"accept-encoding", b"identity"),),
        )
    if content_type is None:
        return None  # curl without -H: read as JSON
    media_type, _, params = content_type.partition(";")
    media_type = media_type.strip().lower()
    is_json = media_type == "application/json" or (
        media_type.startswith("application/") and media_type.endswith("+json")
    )
    wanted = "application/json" if is_json else media_type
    if wanted in accepted:
        charset = next(
            (
                p.split("=", 1)[1].strip().strip('"').lower()
                for p in params.split(";")
                if "=" in p and p.split("=", 1)[0].strip().lower() == "charset"
            ),
            None,
        )
        if charset in (None, "utf-8", "utf8"):
            return None
        return (f"charset {charset[:40]!r} is not accepted: send the body as UTF-8.", ())
    names = " or ".join(accepted)
    hint = (
        " (curl: --json '{…}', or -H 'Content-Type: application/json')"
        if "application/json" in accepted
        else ""
    )
    return (
        f"This endpoint reads a body of type {names}, not {media_type[:60]!r}{hint}.",
        ((b"accept", ", ".join(accepted).encode()),),
    )


class RouteHygiene:
    """The route middleware (see the module docstring). Litestar builds one per route handler."""

    def __init__(self, app: Any) -> None:
        self.app = app
        self._allow: bytes | None = None

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            method = scope["method"]
            if method == "OPTIONS":
                await self._options(scope, send)
                return
            if method in _BODY_METHODS and (problem := _media_type_problem(scope)):
                detail, headers = problem
                await send_problem(scope, send, 415, "Unsupported media type", detail, headers=headers)
                return
            for name, value in scope["path_params"].items():
                most = _PATH_CHARS.get(name, MAX_ID_CHARS)
                if isinstance(value, str) and len(value.lstrip("/")) > most:
                    what = "Kubernetes name" if name in _PATH_CHARS else "preset id"
                    detail = f"{name}: {len(value)} characters; no {what} is longer than {most}."
                    await send_problem(scope, send, 404, "Not found", detail, field=name)
                    return
        await self.app(scope, receive, send)

    async def _options(self, scope: Any, send: Any) -> None:
        if self._allow is None:
            template = scope["path_template"]
            methods = {"OPTIONS"}
            for route in scope["litestar_app"].routes:
                if route.path_format == template:
                    methods.update(getattr(route, "methods", ()))
            if "GET" in methods:
                methods.add("HEAD")
            self._allow = ", ".join(sorted(methods)).encode()
        await send({"type": "http.response.start", "status": 204, "headers": [(b"allow", self._allow)]})
        await send({"type": "http.response.body", "body": b"", "more_body": False})
