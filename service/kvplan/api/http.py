"""Request and answer plumbing shared by the routes: strict decoding of bodies and query
strings, format negotiation, conditional GETs and answers."""

from __future__ import annotations

import re
from typing import Any, TypeVar
from urllib.parse import parse_qsl

import msgspec
from litestar import Request, Response

from kvplan.core.limits import MAX_QUERY_FIELDS
from kvplan.presets import Registry
from kvplan.schemas import unknown_field

from .errors import ApiError

T = TypeVar("T")
JSON = "application/json"
TEXT = "text/plain"  # Litestar appends "; charset=utf-8" to text/ media types itself
VARY = "Accept"  # the same URL answers JSON or text by Accept: caches must key on it
_decoders: dict[type, msgspec.json.Decoder[Any]] = {}


def decoder(t: type[T]) -> msgspec.json.Decoder[T]:
    d = _decoders.get(t)
    if d is None:
        d = _decoders[t] = msgspec.json.Decoder(t)
    return d


async def decode_body(request: Request[Any, Any, Any], t: type[T]) -> T:
    """Strict JSON decoding: wrong types are errors, never coerced."""
    body = await request.body()
    if not body.strip():
        raise ApiError(400, "The request body is empty; send a JSON object.", title="Empty body")
    try:
        return decoder(t).decode(body)
    except msgspec.ValidationError as e:
        raise unknown_field(e, t) or e from None


def text_wanted(fmt: str | None, accept: str) -> bool:
    """?format=text|json wins; else Accept: text/plain (without application/json) asks for text."""
    if fmt is not None:
        if fmt not in ("json", "text"):
            raise ApiError(400, "format: must be json or text", field="format")
        return fmt == "text"
    return "text/plain" in accept and "application/json" not in accept


def explain_wanted(value: str | None) -> bool:
    if value is None:
        return False
    if value.lower() in ("1", "true", "yes"):
        return True
    if value.lower() in ("0", "false", "no"):
        return False
    raise ApiError(400, "explain: must be true or false", field="explain")


def answer_format(request: Request[Any, Any, Any], offered: tuple[str, ...] = ("json", "text")) -> str:
    """The one format rule for every route: ?format= wins (one of `offered`), else Accept:
    text/plain (without application/json) asks for text where text is offered, else JSON."""
    fmt = query_param(request, "format")
    if fmt is not None:
        if fmt not in offered:
            choices = " or ".join(filter(None, (", ".join(offered[:-1]), offered[-1])))  # ("yaml",): "yaml"
            raise ApiError(400, f"format: must be {choices}", field="format")
        return fmt
    return "text" if "text" in offered and text_wanted(None, header(request, b"accept")) else "json"


def query_param(request: Request[Any, Any, Any], name: str) -> str | None:
    """One query parameter; a request without a query string (most POSTs) never builds the
    parsed query."""
    return request.query_params.get(name) if request.scope["query_string"] else None


def header(request: Request[Any, Any, Any], wanted: bytes) -> str:
    """The first header of a lower-case name, or "", read from the raw ASGI headers: answers
    read one or two headers, and Litestar's header mapping costs more to build than that."""
    for name, value in request.scope["headers"]:
        if name.lower() == wanted:
            return value.decode("latin-1")
    return ""


def registry_of(request: Request[Any, Any, Any]) -> Registry:
    """The preset registry every route reads: loaded once at start-up into the app's state."""
    return request.app.state.registry  # type: ignore[no-any-return]


def wants_explain(request: Request[Any, Any, Any]) -> bool:
    return explain_wanted(query_param(request, "explain"))


def query_pairs(query_string: bytes) -> list[tuple[str, str]]:
    try:
        return parse_qsl(
            query_string.decode("utf-8", "replace"), keep_blank_values=True, max_num_fields=MAX_QUERY_FIELDS
        )
    except ValueError:
        raise ApiError(400, f"too many query parameters (at most {MAX_QUERY_FIELDS})") from None


CACHE_CONTROL = "public, max-age=300"


def not_modified(request: Request[Any, Any, Any], etag: str) -> Response[bytes] | None:
    inm = header(request, b"if-none-match")
    if inm and (inm.strip() == "*" or etag in [t.strip().removeprefix("W/") for t in inm.split(",")]):
        return Response(
            content=b"", status_code=304, headers={"ETag": etag, "Cache-Control": CACHE_CONTROL, "Vary": VARY}
        )
    return None


def answer(content: bytes | str, text: bool, etag: str | None = None) -> Response[bytes]:
    headers = {"ETag": etag, "Cache-Control": CACHE_CONTROL, "Vary": VARY} if etag else {"Vary": VARY}
    data = content.encode() if isinstance(content, str) else content
    return Response(content=data, media_type=TEXT if text else JSON, headers=headers)


def structured(request: Request[Any, Any, Any], result: msgspec.Struct, title: str) -> Response[bytes]:
    """A catalog or operations answer as JSON, or as aligned text lines when text is asked for."""
    from kvplan.render import fields_text

    if answer_format(request) == "text":
        return answer(fields_text(title, msgspec.to_builtins(result)), True)
    return answer(msgspec.json.encode(result), False)


def text_width(raw: str | None) -> int:
    """?width= for text answers: columns to wrap at, 40 to 400 (default 100)."""
    if raw is None:
        return 100
    if not re.fullmatch(r"[0-9]{1,3}", raw) or not 40 <= int(raw) <= 400:  # isdigit() takes '²'
        raise ApiError(400, "width: must be a whole number of columns from 40 to 400", field="width")
    return int(raw)
