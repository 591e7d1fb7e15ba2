"""The one place where errors become HTTP answers (RFC 9457 problem+json).

`PROBLEMS` maps an exception class to the function that writes its problem; `problem_for` walks
the exception's class hierarchy (its MRO) and uses the first class it finds there, so the most
specific mapped class wins and an unmapped subclass answers as its nearest mapped ancestor
(a `HubUnavailable` subclass is a 503, not a 502). Every row below is one entry:

core KvplanError (InvalidInput, InvalidLayout, …)  → 400, naming the field
core UnknownName (a dtype or engine profile)        → 400, with the valid names
core UnknownPreset (a model or GPU id)              → 404, with close matches
core UnknownDeployment (not in KVPLAN_DEPLOYMENTS)  → 404, with the known deployments
Hub models (hub/errors.py): HubError → 502, ModelNotOnHub → 404, GatedModel → 403,
    ModelTooLarge and ModelUnreadable → 422, HubUnavailable (timeout, unreachable, offline and not
    cached) → 503 and HubBadAnswer (the Hub answered in a form it does not use) → 502, both with
    Retry-After
ApiError (raised by the shell itself)               → its own status, field and headers
msgspec DecodeError / ValidationError               → 400, naming the JSON path
too deeply nested JSON (RecursionError)             → 400
Litestar's own: ValidationException 400, NotFoundException 404 (no route), any HTTPException its
    status (405 method, 413 body over the limit, …); InternalServerException "client
    disconnected prematurely" → 499
anything else (BaseException)                       → 500, logged with its trace, counted: core
    InternalInconsistency (a broken invariant), PoolExhausted, and WorkStopped outside
    offload.run_heavy (which answers stopped work 503, or 499 when the client left)
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import msgspec
import structlog
from litestar import Request, Response
from litestar.exceptions import HTTPException, InternalServerException, NotFoundException, ValidationException
from litestar.status_codes import HTTP_500_INTERNAL_SERVER_ERROR

from kvplan.core.errors import KvplanError, UnknownDeployment, UnknownName, UnknownPreset
from kvplan.core.limits import MAX_DETAIL_CHARS
from kvplan.hub import errors as hub
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


def _invalid_value(exc: KvplanError) -> Problem:
    return Problem(title="Invalid value", status=400, detail=str(exc), field=exc.field)


def _unknown_name(status: int, trim_valid: bool) -> Callable[[UnknownName], Problem]:
    """A name outside a closed set: the close ones, and the valid ones unless a preset registry
    lists too many of them to be useful."""

    def to_problem(exc: UnknownName) -> Problem:
        return Problem(
            title=f"Unknown {exc.kind}",
            status=status,
            detail=str(exc),
            field=exc.field,
            suggestions=list(exc.suggestions) or None,
            valid=None if trim_valid and len(exc.valid) > 50 else list(exc.valid),
        )

    return to_problem


def _hub(status: int, title: str) -> Callable[[hub.HubError], Problem]:
    def to_problem(exc: hub.HubError) -> Problem:
        return Problem(title=title, status=status, detail=exc.reason, field=exc.field)

    return to_problem


def _api_error(exc: ApiError) -> Problem:
    return Problem(
        title=exc.title or _TITLES.get(exc.status, "Error"),
        status=exc.status,
        detail=exc.detail,
        field=exc.field,
    )


def _validation_error(exc: msgspec.ValidationError) -> Problem:
    return _from_msgspec(str(exc))


def _decode_error(exc: msgspec.DecodeError) -> Problem:
    return Problem(title="Malformed JSON", status=400, detail=f"The body is not valid JSON: {exc}")


def _too_deep(exc: RecursionError) -> Problem:
    return Problem(title="Malformed JSON", status=400, detail="The JSON is nested too deeply.")


def _request_invalid(exc: ValidationException) -> Problem:
    return Problem(title="Invalid request", status=400, detail=str(exc.detail))


def _no_route(exc: NotFoundException) -> Problem:
    return Problem(title="Not found", status=404, detail="No such endpoint; see /schema for the API.")


def _http(exc: HTTPException) -> Problem:
    status = exc.status_code
    return Problem(title=_TITLES.get(status, "Error"), status=status, detail=str(exc.detail))


def _server_error(exc: InternalServerException) -> Problem:
    if str(exc.detail) == CLIENT_GONE:
        # The client hung up mid-body: nothing to answer and nothing broken on our side.
        return Problem(title=_TITLES[499], status=499, detail="The client closed the connection mid-body.")
    return _http(exc)


def _internal(exc: BaseException) -> Problem:
    return Problem(
        title="Internal server error",
        status=500,
        detail="The server failed to answer; the error is logged with the request id.",
    )


PROBLEMS: dict[type[BaseException], Callable[[Any], Problem]] = {
    BaseException: _internal,
    KvplanError: _invalid_value,
    UnknownName: _unknown_name(400, trim_valid=False),
    UnknownPreset: _unknown_name(404, trim_valid=True),
    UnknownDeployment: _unknown_name(404, trim_valid=True),
    hub.HubError: _hub(502, "Hub error"),
    hub.ModelNotOnHub: _hub(404, "Model not on the Hub"),
    hub.GatedModel: _hub(403, "Gated model"),
    hub.ModelTooLarge: _hub(422, "Model too large to read"),
    hub.ModelUnreadable: _hub(422, "Model not readable"),
    hub.HubUnavailable: _hub(503, "Hub unavailable"),
    hub.HubBadAnswer: _hub(502, "Bad answer from the Hub"),
    ApiError: _api_error,
    msgspec.ValidationError: _validation_error,
    msgspec.DecodeError: _decode_error,
    RecursionError: _too_deep,
    ValidationException: _request_invalid,
    NotFoundException: _no_route,
    InternalServerException: _server_error,
    HTTPException: _http,
}
"""Exception class → its problem. Looked up along the exception's MRO: the most specific wins."""


def problem_for(exc: BaseException) -> Problem:
    """The problem body for an exception (never a stack trace): that of the nearest class in its
    MRO that PROBLEMS maps (BaseException, a 500, at the latest)."""
    for cls in type(exc).__mro__:
        to_problem = PROBLEMS.get(cls)
        if to_problem is not None:
            return to_problem(exc)
    raise AssertionError("unreachable: BaseException is mapped")


_NAMED = ("Object contains unknown field", "Object missing required field")


def _from_msgspec(message: str) -> Problem:
    """msgspec says `... - at `$.a.b``; an unknown or missing key is named in the message."""
    m = _PATH.search(message)
    path = (m.group(1) or None) if m else None
    if m:
        message = message[: m.start()]
    if path is not None and "[...]" in path:  # msgspec's path when it read the body untyped: no names
        path = None
    if message == "Number out of range":
        message = "a number out of range: JSON numbers here are finite (1e400 is not)"
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
    """The HTTP answer for any exception a route raised: its problem (problem_for, by class hierarchy) with
    the path and request id, its detail bounded, Allow and Retry-After where they apply, as JSON or as a
    line of text when the caller asked for text. A 500 is a defect: it is counted and logged."""
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
    if isinstance(exc, (hub.HubUnavailable, hub.HubBadAnswer)):
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
    hub.HubError: problem_response,
}
