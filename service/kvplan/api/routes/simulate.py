"""Block-pool simulation (/v1/simulate): a workload as JSON, or a recorded trace as the body."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import msgspec
from litestar import Request, Response, post
from litestar.exceptions.http_exceptions import RequestEntityTooLarge

from kvplan.core.limits import MAX_TRACE_BYTES
from kvplan.core.sim.traces import Trace, TraceReader
from kvplan.render import simulation_text
from kvplan.schemas import SimulateRequest
from kvplan.schemas.simulate import SimulateTraceQuery, SimWorkload, decode_simulate_request
from kvplan.services.answers import encode_answer, simulate_answer
from kvplan.services.models import model_ref
from kvplan.services.query import decode_pairs
from kvplan.services.vllm_bench import vllm_bench_json

from .. import metrics
from ..errors import ApiError
from ..http import answer, answer_format, query_pairs, registry_of
from ..hubfetch import prefetch
from ..hygiene import BODY_MEDIA_TYPES
from ..metrics import count_warnings, counted
from ..offload import run_heavy
from ..openapi import doc

_core_sim = metrics.CORE_SECONDS.labels("simulate")
CSV = "text/csv"
JSONL = ("application/x-ndjson", "application/jsonl", "application/json-lines")
# `curl --data-binary @trace.csv` says form-urlencoded: such a body is sniffed (_kind).
SNIFFED = ("application/x-www-form-urlencoded", "application/octet-stream", "text/plain")
SIMULATE_MEDIA_TYPES = ("application/json", CSV, *JSONL, *SNIFFED)
FORMATS = ("json", "text", "vllm-bench")
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
    if first.lstrip(b"\xef\xbb\xbf").lstrip(b'"').lower().startswith(b"timestamp"):  # Azure's, BurstGPT's
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
        size = f"{int(declared):,} bytes" if declared.isdigit() else "over the limit"
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


@post(
    "/v1/simulate",
    status_code=200,
    request_max_body_size=MAX_TRACE_BYTES,
    opt={BODY_MEDIA_TYPES: SIMULATE_MEDIA_TYPES},
    **doc("simulate", SimulateRequest, "post"),
)
async def simulate_post(request: Request[Any, Any, Any]) -> Response[bytes]:
    """What a workload does to vLLM's block pool: preemptions and recomputation, prefix-cache hits,
    blocks in use over time, and how far real traffic sits from the worst-case formula. Arrivals in
    seconds make it timed: latency (queue, TTFT, TPOT, ITL, end-to-end) and throughput from a
    step-time model. A trace may be the body (text/csv: Azure's; application/x-ndjson: Mooncake's
    or the simulator's requests), with the pool in query parameters. The workload's size is
    bounded before it runs (see the 400 answers); it runs off the event loop and stops (503) past
    its deadline or when the client goes away."""
    fmt = answer_format(request, FORMATS)
    reg = registry_of(request)
    max_json = request.app.state.settings.max_body_bytes
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
    trace: Trace | None = None
    if kind == "json":
        body = head
        async for chunk in stream:
            body += chunk
            if len(body) > max_json:
                raise ApiError(
                    413,
                    f"A JSON workload is at most {max_json:,} bytes; send a longer one as a trace "
                    f"(text/csv or application/x-ndjson), up to {MAX_TRACE_BYTES:,} bytes.",
                    title="Request Entity Too Large",
                )
        if not body.strip():
            raise ApiError(
                400, "The request body is empty; send a JSON object or a trace.", title="Empty body"
            )
        req = decode_simulate_request(body)
    else:
        pairs = [(k, v) for k, v in query_pairs(request.scope["query_string"]) if k != "format"]
        query = decode_pairs(pairs, SimulateTraceQuery)
        reader = TraceReader(csv=kind == "csv", time_scale=query.time_scale)
        reader.feed(head)
        async for chunk in stream:
            reader.feed(chunk)  # a chunk's lines at a time: the loop serves others between chunks
        trace = reader.finish()
        req = SimulateRequest(
            workload=SimWorkload(requests=trace.requests, concurrency=query.concurrency),
            **{f: getattr(query, f) for f in SimulateRequest.__struct_fields__ if f != "workload"},
        )
    ref = None if req.model is None else model_ref(reg, req.model)
    await prefetch(reg, [] if ref is None else [ref])
    result, labels = await run_heavy(
        request,
        "simulate",
        lambda stop: counted(
            "simulate", lambda: simulate_answer(reg, req, stop, _core_sim.observe, ref, trace)
        ),
    )
    count_warnings(tuple(w.code for w in result.warnings))
    if fmt == "text":
        return answer(simulation_text(result, labels, reg.version), True)
    if fmt == "vllm-bench":
        return answer(vllm_bench_json(result, labels), False)
    return answer(encode_answer(labels, result), False)
