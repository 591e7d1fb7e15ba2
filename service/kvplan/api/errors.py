"""The one place where errors become HTTP answers (RFC 9457 problem+json).

core InvalidInput / InvalidLayout / InvalidConfig   → 400, naming the field
core UnknownPreset (a model or GPU id)              → 404, with close matches
core UnknownName (a dtype or engine profile)         → 400, with the valid names
msgspec DecodeError / ValidationError                → 400, naming the JSON path
too deeply nested JSON (RecursionError)              → 400
Hub models: ModelNotOnHub → 404, GatedModel → 403, ModelTooLarge and ModelUnreadable → 422,
    HubUnavailable (timeout, unreachable, offline and not cached) → 503 with Retry-After,
    HubBadAnswer (the Hub answered in a form it does not use) → 502 with Retry-After
Litestar's own: 404 no route, 405 method, 413 body over the limit
anything else                                        → 500, logged with its trace, counted
"""

from __future__ import annotations

import re
from typing import Any

import msgspec
import structlog
from litestar import Request, Response
from litestar.exceptions import HTTPException, InternalServerException, NotFoundException, ValidationException
from litestar.status_codes import HTTP_500_INTERNAL_SERVER_ERROR

from kvplan.core.errors import KvplanError, UnknownName, UnknownPreset
from kvplan.core.limits import MAX_DETAIL_CHARS
from kvplan.hub import (
    GatedModel,
    HubBadAnswer,
    HubError,
    HubUnavailable,
    ModelNotOnHub,
    ModelTooLarge,
    ModelUnreadable,
)
from kvplan.schemas import Problem

from . import metrics

PROBLEM_JSON = "application/problem+json"
_log = structlog.get_logger("kvplan.errors")
# Litestar's wording when the body stream ends in http.disconnect (litestar/connection/request.py).
CLIENT_GONE = "client disconnected prematurely"
_PATH = re.compile(r" - at `\$\.?([^`]*)`")


class ApiError(Exception):
    """An error the shell raises itself (bad query parameter, batch too large, …)."""

    def __init__(
        self,
        status: int,
        detail: str,
        field: str | None = None,
        title: str | None = None,
        headers: dict[str, str] | None = None,
    ) -> None:
        super().__init__(detail)
        self.status = status
        self.detail = detail
        self.field = field
        self.title = title
        self.headers = headers


_TITLES = {
    400: "Invalid request",
    404: "Not found",
    405: "Method not allowed",
    406: "Not acceptable",
    413: "Request body too large",
    499: "Client closed request",
    503: "Service unavailable",
    415: "Unsupported media type",
    500: "Internal server error",
}


_HUB_STATUS: dict[type[HubError], tuple[int, str]] = {
    ModelNotOnHub: (404, "Model not on the Hub"),
    GatedModel: (403, "Gated model"),
    ModelTooLarge: (422, "Model too large to read"),
    ModelUnreadable: (422, "Model not readable"),
    HubUnavailable: (503, "Hub unavailable"),
    HubBadAnswer: (502, "Bad answer from the Hub"),
}


def problem_for(exc: BaseException) -> Problem:
    """The problem body for an exception (never a stack trace)."""
    if isinstance(exc, UnknownName):
        preset = isinstance(exc, UnknownPreset)
        return Problem(
            title=f"Unknown {exc.kind}",
            status=404 if preset else 400,
            detail=str(exc),
            field=exc.field,
            suggestions=list(exc.suggestions) or None,
            valid=None if preset and len(exc.valid) > 50 else list(exc.valid),
        )
    if isinstance(exc, KvplanError):
        return Problem(title="Invalid value", status=400, detail=str(exc), field=exc.field)
    if isinstance(exc, HubError):
        status, title = _HUB_STATUS.get(type(exc), (502, "Hub error"))
        return Problem(title=title, status=status, detail=exc.reason, field=exc.field)
    if isinstance(exc, ApiError):
        return Problem(
            title=exc.title or _TITLES.get(exc.status, "Error"),
            status=exc.status,
            detail=exc.detail,
            field=exc.field,
        )
    if isinstance(exc, msgspec.ValidationError):
        return _from_msgspec(str(exc))
    if isinstance(exc, msgspec.DecodeError):
        return Problem(title="Malformed JSON", status=400, detail=f"The body is not valid JSON: {exc}")
    if isinstance(exc, RecursionError):
        return Problem(title="Malformed JSON", status=400, detail="The JSON is nested too deeply.")
    if isinstance(exc, ValidationException):
        return Problem(title="Invalid request", status=400, detail=str(exc.detail))
    if isinstance(exc, InternalServerException) and str(exc.detail) == CLIENT_GONE:
        # The client hung up mid-body: nothing to answer and nothing broken on our side.
        return Problem(title=_TITLES[499], status=499, detail="The client closed the connection mid-body.")
    if isinstance(exc, NotFoundException):
        return Problem(title="Not found", status=404, detail="No such endpoint; see /schema for the API.")
    if isinstance(exc, HTTPException):
        status = exc.status_code
        return Problem(title=_TITLES.get(status, "Error"), status=status, detail=str(exc.detail))
    return Problem(
        title="Internal server error",
        status=500,
        detail="The server failed to answer; the error is logged with the request id.",
    )


_NAMED = ("Object contains unknown field", "Object missing required field")


def _from_msgspec(message: str) -> Problem:
    """msgspec says `... - at `$.a.b``; an unknown or missing key is named in the message."""
    m = _PATH.search(message)
    path = (m.group(1) or None) if m else None
    if m:
        message = message[: m.start()]
    field = path
    if message.startswith(_NAMED) and message.count("`") >= 2:
        key = message[message.index("`") + 1 : message.rindex("`")]  # the key may hold backticks
        field = f"{path}.{key}" if path else key
    detail = f"{field}: {message}" if field else message
    return Problem(title="Invalid value", status=400, detail=detail, field=field)


def _text_wanted(request: Request[Any, Any, Any]) -> bool:
    try:
        fmt = request.query_params.get("format")
    except Exception:  # a query that does not parse is the problem being answered
        return False
    accept = request.headers.get("accept", "")
    return fmt == "text" or (fmt is None and "text/plain" in accept and "application/json" not in accept)


def problem_response(request: Request[Any, Any, Any], exc: BaseException) -> Response[bytes]:
    problem = problem_for(exc)
    request_id = request.scope.get("state", {}).get("request_id")
    if problem.status == HTTP_500_INTERNAL_SERVER_ERROR:  # a defect; 503s are answers (busy, deadline)
        metrics.UNHANDLED_ERRORS.inc()
        _log.error("unhandled_error", request_id=request_id, path=request.url.path, exc_info=exc)
    if len(problem.detail) > MAX_DETAIL_CHARS:
        problem = msgspec.structs.replace(problem, detail=problem.detail[:MAX_DETAIL_CHARS] + "…")
    problem = msgspec.structs.replace(problem, instance=request.url.path[:200], request_id=request_id)
    headers = (
        {"Allow": ", ".join(sorted(exc.headers.get("allow", "").split(", ")))}
        if isinstance(exc, HTTPException) and exc.headers and exc.headers.get("allow")
        else None
    )
    if isinstance(exc, ApiError) and exc.headers:
        headers = {**(headers or {}), **exc.headers}
    if isinstance(exc, (HubUnavailable, HubBadAnswer)):
        headers = {**(headers or {}), "Retry-After": str(exc.retry_after_seconds)}
    if _text_wanted(request):  # a curl user asked for text: the same status, as text
        where = f"{problem.field}: " if problem.field and not problem.detail.startswith(problem.field) else ""
        body = f"error {problem.status} · {problem.title}\n{where}{problem.detail}\n"
        return Response(content=body.encode(), status_code=problem.status, media_type="text/plain",
                        headers=headers)  # fmt: skip
    return Response(
        content=msgspec.json.encode(problem),
        status_code=problem.status,
        media_type=PROBLEM_JSON,
        headers=headers,
    )


EXCEPTION_HANDLERS: dict[type[BaseException] | int, Any] = {
    Exception: problem_response,
    HTTPException: problem_response,
    KvplanError: problem_response,
    ApiError: problem_response,
    msgspec.MsgspecError: problem_response,
    RecursionError: problem_response,
    HubError: problem_response,
}
