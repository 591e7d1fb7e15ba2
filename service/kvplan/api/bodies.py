"""A JSON body or a recorded trace, read as it streams (/v1/simulate, /v1/capacity): the media
type says which, curl's form-urlencoded and friends are sniffed by the first line, a compressed
file is named, and a trace is fed to the reader a chunk at a time (the loop serves others between
chunks), within MAX_TRACE_BYTES."""

from __future__ import annotations

import asyncio
import re
from collections.abc import AsyncIterator, Callable
from typing import Any, Generic, NamedTuple, TypeVar

import msgspec
from litestar import Request
from litestar.exceptions.http_exceptions import RequestEntityTooLarge

from kvplan.core.limits import MAX_TRACE_BYTES
from kvplan.core.sim.traces import Trace, TraceReader
from kvplan.services.query import decode_pairs

from .errors import ApiError
from .http import query_pairs

CSV = "text/csv"
JSONL = ("application/x-ndjson", "application/jsonl", "application/json-lines")
# `curl --data-binary @trace.csv` says form-urlencoded: such a body is sniffed (_kind).
SNIFFED = ("application/x-www-form-urlencoded", "application/octet-stream", "text/plain")
MEDIA_TYPES = ("application/json", CSV, *JSONL, *SNIFFED)
# A trace file sent compressed (curl --data-binary @trace.csv.gz): named, not read as JSON.
COMPRESSED = {
    b"\x1f\x8b": "gzip",
    b"PK\x03\x04": "zip",
    b"\xfd7zXZ": "xz",
    b"(\xb5/\xfd": "zstd",
    b"BZh": "bzip2",
}


def _kind(content_type: str, head: bytes) -> str:
    """ "json", "csv" or "jsonl": by the media type, else by the body's first line."""
    media = content_type.split(";")[0].strip().lower()
    if media == CSV:
        return "csv"
    if media in JSONL:
        return "jsonl"
    if media not in SNIFFED:
        return "json"
    first = head.lstrip().split(b"\n", 1)[0].strip().removeprefix(b"\xef\xbb\xbf")
    if first.lstrip(b'"').lower().startswith(b"timestamp"):  # Azure's, BurstGPT's
        return "csv"
    try:
        row = msgspec.json.decode(first)
    except msgspec.DecodeError:
        return "json"
    return "jsonl" if isinstance(row, dict) and ("input_length" in row or "prompt_tokens" in row) else "json"


async def _bounded(request: Request[Any, Any, Any]) -> AsyncIterator[bytes]:
    """The body as it streams; past MAX_TRACE_BYTES (declared, or as it comes) a 413 saying so."""
    try:
        async for chunk in request.stream():
            yield chunk
    except RequestEntityTooLarge:
        declared = request.headers.get("content-length", "")
        size = f"{int(declared):,} bytes" if re.fullmatch(r"[0-9]{1,20}", declared) else "over the limit"
        raise ApiError(
            413,
            f"The body is {size}: a trace is at most {MAX_TRACE_BYTES:,} bytes "
            f"({MAX_TRACE_BYTES >> 20} MiB); simulate a part of it.",
            field="body",
            title="Request Entity Too Large",
        ) from None


async def _read(request: Request[Any, Any, Any], limit: int) -> tuple[bytes, AsyncIterator[bytes]]:
    """The body's first chunk(s), up to a line, and the rest of the stream."""
    stream = _bounded(request)
    head = b""
    async for chunk in stream:
        head += chunk
        if b"\n" in head or len(head) > limit:
            break
    return head, stream


Q = TypeVar("Q")


class Body(NamedTuple, Generic[Q]):
    """A JSON body (bytes), or a trace read from the body with the query that came with it."""

    json: bytes | None
    trace: Trace | None
    query: Q | None


async def json_or_trace(
    request: Request[Any, Any, Any],
    max_json: int,
    query_type: type[Q],
    check: Callable[[Q], None] | None = None,
) -> Body[Q]:
    """The body: JSON (at most max_json bytes), or a trace with the rest of the request as query
    parameters of query_type (decoded, and check()ed, before the trace is read, so a bad query is
    refused before the body streams in; its time_scale, if it has one, stretches the trace)."""
    head, stream = await _read(request, max_json)
    packed = next((name for magic, name in COMPRESSED.items() if head.startswith(magic)), None)
    if packed is not None:
        raise ApiError(
            415,
            f"The body is {packed}-compressed data: send the trace uncompressed, e.g. "
            f"zcat trace.csv.gz | curl --data-binary @- -H 'Content-Type: text/csv' ….",
            field="body",
            title="Unsupported Media Type",
        )
    kind = _kind(request.headers.get("content-type", ""), head)
    if kind == "json":
        body = head
        async for chunk in stream:
            body += chunk
            if len(body) > max_json:
                raise ApiError(
                    413,
                    f"A JSON body is at most {max_json:,} bytes; send a longer workload as a trace "
                    f"(text/csv or application/x-ndjson), up to {MAX_TRACE_BYTES:,} bytes.",
                    title="Request Entity Too Large",
                )
        if not body.strip():
            raise ApiError(
                400, "The request body is empty; send a JSON object or a trace.", title="Empty body"
            )
        return Body(body, None, None)
    # Parsing is CPU work (a 64 MiB trace is seconds of it): each chunk's lines are read in a worker
    # thread, so the event loop serves other requests meanwhile; memory stays the rows, not the body.
    pairs = [(k, v) for k, v in query_pairs(request.scope["query_string"]) if k != "format"]
    query = decode_pairs(pairs, query_type)
    if check is not None:
        check(query)
    reader = TraceReader(csv=kind == "csv", time_scale=getattr(query, "time_scale", 1.0))
    await asyncio.to_thread(reader.feed, head)
    async for chunk in stream:
        await asyncio.to_thread(reader.feed, chunk)
    return Body(None, await asyncio.to_thread(reader.finish), query)
