"""Hostile trace bodies and timed workloads on /v1/simulate (issue 28, "Must show: bad input"):
each is a 4xx whose problem names the row (`trace[line N].column`), the field or the limit, never a
500; the formats published traces really come in are read (Azure 2023 and 2024, BurstGPT, Mooncake,
a byte order mark, CRLF). Bodies too large to send through the test client, and /healthz while the
worst run, are checked on a real server below (the `live` fixture)."""

from __future__ import annotations

import gzip
import io
import json
import socket
import threading
import time
import zipfile
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from kvplan.core.limits import (
    MAX_REQUESTS,
    MAX_SIMULATED_STEPS,
    MAX_TOKENS_PER_REQUEST,
    MAX_TRACE_BYTES,
    MAX_TRACE_CHAIN_BLOCKS,
    MAX_TRACE_LINE_BYTES,
)
from tests.live import Server, connect, start_server

POOL = "/v1/simulate?model=llama-3.1-8b&gpu=h100-sxm-80gb"
REAL = Path(__file__).parents[1] / "sim" / "data" / "real"
CSV = "text/csv"
JSONL = "application/x-ndjson"
AZURE = "TIMESTAMP,ContextTokens,GeneratedTokens\n"
ROW = "2023-11-16 18:15:46.6805900,374,44\n"
LATER = "2023-11-16 18:15:47.0000000,100,20\n"
BURST = "Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type\n"
TIMED = {"model": "llama-3.1-8b", "gpu": "h100-sxm-80gb"}


def mooncake(t: float, i: int = 10, o: int = 5, **extra: object) -> str:
    return json.dumps({"timestamp": t, "input_length": i, "output_length": o, **extra}) + "\n"


def line(**row: object) -> str:
    """A requests-JSONL line of 10 prompt and 5 output tokens."""
    return json.dumps({**row, "prompt_tokens": 10, "output_tokens": 5}) + "\n"


def post_trace(client, body: str | bytes, media: str = CSV, query: str = ""):
    data = body.encode() if isinstance(body, str) else body
    return client.post(POOL + query, content=data, headers={"content-type": media})


def refused(r, field: str, *words: str) -> dict:
    assert 400 <= r.status_code < 500, r.text[:400]
    problem = r.json()
    assert problem.get("field") == field, problem
    for word in words:
        assert word in problem["detail"], problem
    return problem


# -- rows ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("body", "media", "field"),
    [
        (AZURE + LATER + ROW, CSV, "trace[line 3].TIMESTAMP"),
        (mooncake(2000) + mooncake(1000), JSONL, "trace[line 2].timestamp"),
        (line(arrival_time=5) + line(arrival_time=1), JSONL, "trace[line 2].arrival_time"),
        (BURST + "45,ChatGPT,1087,230,1317,Conversation log\n5,ChatGPT,472,18,490,Conversation log\n", CSV,
         "trace[line 3].Timestamp"),
    ],
)  # fmt: skip
def test_a_trace_whose_timestamps_go_back_is_a_400_naming_the_row(client, body, media, field):
    refused(post_trace(client, body, media), field, "goes back in time")


@pytest.mark.parametrize(
    ("row", "field", "reason"),
    [
        ("2023-11-16 18:15:46.68,-5,44", "trace[line 2].ContextTokens", "must be 1.."),
        ("2023-11-16 18:15:46.68,0,44", "trace[line 2].ContextTokens", "must be 1.."),
        ("2023-11-16 18:15:46.68,10,0", "trace[line 2].GeneratedTokens", "must be 1.."),
        ("2023-11-16 18:15:46.68,10.5,4", "trace[line 2].ContextTokens", "not a whole number"),
        ("2023-11-16 18:15:46.68,ten,4", "trace[line 2].ContextTokens", "not a whole number"),
        (
            f"2023-11-16 18:15:46.68,{MAX_TOKENS_PER_REQUEST + 1},4",
            "trace[line 2].ContextTokens",
            "must be 1..",
        ),
        ("2023-11-16 18:15:46.68,1\x000,4", "trace[line 2].ContextTokens", "not a whole number"),
        ("2023-11-16 18:15:46.68,10", "trace[line 2].row", "2 columns"),
        ("0.5,10,4", "trace[line 2].TIMESTAMP", "YYYY-MM-DD"),
        ("2023-13-16 18:15:46.68,10,4", "trace[line 2].TIMESTAMP", "not a date"),
        ("2024-05-10 00:00:00.009930+25:00,10,4", "trace[line 2].TIMESTAMP", "not a UTC offset"),
    ],
)
def test_a_bad_azure_row_is_a_400_naming_its_line_and_column(client, row, field, reason):
    refused(post_trace(client, AZURE + row + "\n"), field, reason)


@pytest.mark.parametrize(
    ("line", "field", "reason"),
    [
        (mooncake(0, i=-1), "trace[line 1].input_length", "must be 1.."),
        (mooncake(0, o=0), "trace[line 1].output_length", "must be 1.."),
        (mooncake(0, i=10.5), "trace[line 1].input_length", "Expected `int`"),
        (mooncake(-2000), "trace[line 1].timestamp", "at least 0"),
        ('{"timestamp": 0, "output_length": 5}\n', "trace[line 1].input_length", "missing required field"),
        ('{"timestamp": NaN, "input_length": 10, "output_length": 5}\n', "trace[line 1].json", "not JSON"),
        ('{"timestamp": 1e400, "input_length": 1}\n', "trace[line 1].json", "out of range"),
        ('{"timestamp": 0, "input_length": 10,\n', "trace[line 1].json", "not JSON"),
        ("[1, 2]\n", "trace[line 1].json", "one JSON object"),
        (mooncake(0, hash_ids=[1, 2]), "trace[line 1].hash_ids", "512-token block"),
        (line(), "trace[line 1].arrival_time", "arrival_time"),
        (line(arrival_step=1), "trace[line 1].arrival_time", "seconds"),
        (line(arrival_time=-1), "trace[line 1].arrival_time", ">= 0"),
        (mooncake(0) + "\x00\n", "trace[line 2].json", "not JSON"),
    ],
)  # fmt: skip
def test_a_bad_jsonl_row_is_a_400_naming_its_line_and_column(client, line, field, reason):
    refused(post_trace(client, line, JSONL), field, reason)


@pytest.mark.parametrize(
    ("body", "field", "reason"),
    [
        ("", "trace", "no requests"),
        (AZURE, "trace", "no requests in the body after its header"),
        ("TIMESTAMP,ContextTokens\n2023-11-16 18:15:46.68,10\n", "trace[line 1].header", "BurstGPT"),
        ("when,prompt,output\n0,1,1\n", "trace[line 1].header", "TIMESTAMP,ContextTokens,GeneratedTokens"),
    ],
)
def test_an_empty_body_a_header_only_or_a_wrong_header_is_a_400(client, body, field, reason):
    refused(post_trace(client, body), field, reason)


def test_an_empty_json_body_is_a_400_saying_so(client):
    r = client.post("/v1/simulate", content=b"", headers={"content-type": "application/json"})
    assert r.status_code == 400 and "empty" in r.json()["detail"]


@pytest.mark.parametrize("media", [CSV, JSONL])
def test_a_line_longer_than_the_limit_is_a_400_naming_it(client, media):
    body = AZURE + "2023-11-16 18:15:46.68,10," + "1" * (MAX_TRACE_LINE_BYTES + 1) + "\n"
    if media == JSONL:
        body = mooncake(0, pad="a" * (MAX_TRACE_LINE_BYTES + 1))
    refused(post_trace(client, body, media), "trace[line 2].line" if media == CSV else "trace[line 1].line",
            f"{MAX_TRACE_LINE_BYTES:,} bytes")  # fmt: skip


def test_more_rows_than_the_limit_is_a_400_naming_it(client):
    body = AZURE + ROW * (MAX_REQUESTS + 1)
    problem = refused(post_trace(client, body), "trace", f"more than {MAX_REQUESTS:,} requests")
    assert f"line {MAX_REQUESTS + 2}" in problem["detail"]


def test_more_hash_ids_than_the_limit_is_a_400_naming_the_row_before_they_are_all_kept(client):
    """Each new id becomes an interned node (~170 bytes): a 20 MB body of them held 1.4 GB."""
    per_row = 32_768  # a 16M-token prompt's 512-token blocks
    rows = MAX_TRACE_CHAIN_BLOCKS // per_row + 1
    body = "".join(
        mooncake(t, i=per_row * 512, hash_ids=list(range(t * per_row, (t + 1) * per_row)))
        for t in range(rows + 5)
    )
    problem = refused(
        post_trace(client, body, JSONL), f"trace[line {rows}].hash_ids", f"{MAX_TRACE_CHAIN_BLOCKS:,}"
    )
    assert "simulate a part of it" in problem["detail"]


def test_a_trace_past_the_step_bound_is_refused_before_it_runs(client):
    # 2,700 prompts of 120,000 tokens, 16 tokens a step: more steps than MAX_SIMULATED_STEPS.
    rows = "2023-11-16 18:15:40.0,120000,10\n" * 2700
    t0 = time.perf_counter()
    r = post_trace(client, AZURE + rows, query="&max_num_seqs=16&max_num_batched_tokens=16")
    assert time.perf_counter() - t0 < 2
    assert r.status_code == 400, r.text[:300]
    assert f"{MAX_SIMULATED_STEPS:,}" in r.json()["detail"] or "steps" in r.json()["detail"], r.json()


# -- the byte level: BOM, CRLF, quotes --------------------------------------------------------


@pytest.mark.parametrize(
    ("body", "media"),
    [
        ("\ufeff" + AZURE + ROW + LATER, CSV),
        ((AZURE + ROW + LATER).replace("\n", "\r\n"), CSV),
        ((AZURE + ROW + LATER).rstrip("\n"), CSV),  # no final newline
        (AZURE + '"2023-11-16 18:15:46.68",374,44\n"2023-11-16 18:15:47.0",100,20\n', CSV),
        ("\ufeff" + mooncake(0) + mooncake(1000), JSONL),
        ((mooncake(0) + mooncake(1000)).replace("\n", "\r\n"), JSONL),
        ("\ufeff" + AZURE + ROW + LATER, "application/x-www-form-urlencoded"),  # curl --data-binary
    ],
)
def test_a_bom_crlf_or_quoted_cells_are_read_as_the_same_two_requests(client, body, media):
    r = post_trace(client, body, media)
    assert r.status_code == 200, r.text[:400]
    assert r.json()["completed"] == 2


# -- published variants -----------------------------------------------------------------------


def test_azure_2024_timestamps_with_a_utc_offset_and_six_decimals_are_read(client):
    body = AZURE + "2024-05-10 00:00:00.009930+00:00,2048,28\n2024-05-10 00:00:01+00:00,17,2\n"
    r = post_trace(client, body)
    assert r.status_code == 200, r.text[:400]
    assert r.json()["trace"] == "azure-csv" and r.json()["completed"] == 2


def test_a_utc_offset_is_applied_so_the_same_instant_in_two_zones_does_not_go_back(client):
    body = AZURE + "2024-05-10 02:00:00+02:00,10,2\n2024-05-10 00:00:00.5Z,10,2\n"
    assert post_trace(client, body).status_code == 200


def test_burstgpt_csv_is_read_timestamps_in_seconds_extra_columns_ignored(client):
    body = (
        "Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type,Session ID,Elapsed time\n"
        "5,ChatGPT,472,18,490,Conversation log,a,1\n45,ChatGPT,1087,230,1317,Conversation log,b,2\n"
        "118.5,GPT-4,417,276,693,API log,c,3\n"
    )
    r = post_trace(client, body, "application/octet-stream")
    assert r.status_code == 200, r.text[:400]
    assert r.json()["trace"] == "burstgpt-csv" and r.json()["completed"] == 3


def test_a_failed_burstgpt_request_is_refused_naming_its_row_and_the_files_without_them(client):
    body = BURST + "5,ChatGPT,472,18,490,Conversation log\n9,GPT-4,300,0,300,API log\n"
    refused(post_trace(client, body), "trace[line 3].Response tokens", "BurstGPT_without_fails")


def test_a_burstgpt_timestamp_that_is_not_seconds_is_refused(client):
    refused(post_trace(client, BURST + "-5,ChatGPT,472,18,490,Conversation log\n"), "trace[line 2].Timestamp")


# -- the query of a trace body ----------------------------------------------------------------


@pytest.mark.parametrize(
    ("query", "field", "reason"),
    [
        ("&tensor_paralel_size=2", "tensor_paralel_size", "did you mean tensor_parallel_size"),
        ("&time_scale=0", "time_scale", "> 0"),
        ("&time_scale=nan", "time_scale", ""),
        ("&time_scale=-1", "time_scale", "> 0"),
        ("&concurrency=0", "concurrency", ">= 1"),
        ("&goodput.ttft_ms=0", "goodput.ttft_ms", "> 0"),
    ],
)
def test_a_wrong_query_parameter_of_a_trace_body_is_a_400_naming_it(client, query, field, reason):
    refused(post_trace(client, AZURE + ROW, query=query), field, reason)


@pytest.mark.parametrize(
    ("path", "field"),
    [
        ("/v1/simulate?model=llama-3.1-8b", "gpu"),
        ("/v1/simulate?gpu=h100-sxm-80gb", "model"),
        ("/v1/simulate?model=llama-3.1-8b&gpu=mi300x-192gb", "gpu"),
        ("/v1/simulate?num_blocks=100", "model"),
    ],
)
def test_a_trace_without_a_model_or_a_gpu_with_specs_is_a_400_naming_it(client, path, field):
    r = client.post(path, content=(AZURE + ROW).encode(), headers={"content-type": CSV})
    refused(r, field)


def test_a_trace_without_a_model_is_refused_before_its_body_is_read(live):
    """A trace is timed, so it needs the model and the GPU; asked before the body streams in, a
    64 MiB trace without them is not parsed for nothing."""
    with Healthz(live):
        answer, sent = _stream(
            live, b"text/csv", ROW.encode() * 2000, first=AZURE.encode(), path="/v1/simulate?num_blocks=100"
        )
    assert answer.startswith(b"HTTP/1.1 400"), answer[:300]
    assert _problem(answer)["field"] == "model"
    assert sent < 32 << 20


# -- JSON workloads ---------------------------------------------------------------------------


def fixed(n: int) -> dict:
    return {"kind": "fixed", "value": n}


def timed_requests(*items: dict) -> dict:
    return {
        **TIMED,
        "workload": {"requests": [{"prompt_tokens": 10, "output_tokens": 5, **i} for i in items]},
    }


@pytest.mark.parametrize(
    ("body", "field", "reason"),
    [
        (timed_requests({"arrival_time": 0, "arrival_step": 1}), "workload.requests[0].arrival_step", "both"),
        (timed_requests({"arrival_time": 0.0}, {}), "workload.requests[1].arrival_time", "every request"),
        (timed_requests({}, {"arrival_time": 1.0}), "workload.requests[1].arrival_time", "every request"),
        (timed_requests({"arrival_time": -1.0}), "workload.requests[0].arrival_time", ">= 0"),
        ({**TIMED, "workload": {"generator": {"count": 10, "arrival_rate": 1, "arrival_rate_per_s": 1,
          "prompt": fixed(10), "output": fixed(5)}}}, "workload.generator", "arrival_rate"),
        ({**TIMED, "workload": {"generator": {"count": 10, "concurrency": 0, "prompt": fixed(10),
          "output": fixed(5)}}}, "workload.generator.concurrency", ">= 1"),
        ({**TIMED, "workload": {"concurrency": 0, "requests": [{"arrival_time": 0.0, "prompt_tokens": 1,
          "output_tokens": 1}]}}, "workload.concurrency", ">= 1"),
        ({**TIMED, "goodput": {"ttft_ms": 100}, "workload": {"requests": [{"prompt_tokens": 10,
          "output_tokens": 5}]}}, "goodput", "timed"),
        ({**TIMED, "workload": {"concurrency": 2, "requests": [{"prompt_tokens": 10, "output_tokens": 5}]}},
         "workload.concurrency", "timed"),
        ({**TIMED, "goodput": {"ttft_ms": 0}, "workload": {"requests": [{"arrival_time": 0.0,
          "prompt_tokens": 10, "output_tokens": 5}]}}, "goodput.ttft_ms", "> 0"),
        ({"model": "llama-3.1-8b", "workload": {"requests": [{"arrival_time": 0.0, "prompt_tokens": 10,
          "output_tokens": 5}]}}, "gpu", ""),
        ({"gpu": "h100-sxm-80gb", "num_blocks": 100, "workload": {"requests": [{"arrival_time": 0.0,
          "prompt_tokens": 10, "output_tokens": 5}]}}, "model", "timed"),
        ({"model": "llama-3.1-8b", "gpu": "mi300x-192gb", "workload": {"requests": [{"arrival_time": 0.0,
          "prompt_tokens": 10, "output_tokens": 5}]}}, "gpu", "no specs"),
    ],
)  # fmt: skip
def test_a_bad_timed_json_workload_is_a_400_naming_the_field(client, body, field, reason):
    refused(client.post("/v1/simulate", json=body), field, reason)


@pytest.mark.parametrize("literal", ["NaN", "Infinity", "-Infinity", "1e400"])
def test_non_finite_numbers_in_a_json_workload_are_a_400_never_a_500(client, literal):
    raw = json.dumps(timed_requests({"arrival_time": 0.0})).replace("0.0", literal, 1)
    r = client.post("/v1/simulate", content=raw.encode(), headers={"content-type": "application/json"})
    assert r.status_code == 400, r.text[:300]
    assert "[...]" not in (r.json().get("field") or "") + r.json()["detail"]


def test_conversations_in_a_closed_loop_are_a_400_naming_the_generator(client):
    body = {**TIMED, "workload": {"generator": {"count": 20, "concurrency": 4, "prompt": fixed(100),
            "output": fixed(10), "conversations": {"share": 1.0, "turns": 3, "user_tokens": 20,
            "think_time_s": 0.5}}}}  # fmt: skip
    refused(client.post("/v1/simulate", json=body), "workload.generator", "conversations")


# -- a real server: bodies too large to send whole, /healthz throughout ------------------------


@pytest.fixture(scope="module")
def live() -> Iterator[Server]:
    s = start_server(workers=1)
    yield s
    s.stop()


class Healthz:
    """/healthz asked every 50 ms on its own connection while a test runs: the slowest answer."""

    def __init__(self, server: Server) -> None:
        self.url = server.url + "/healthz"
        self.worst = 0.0
        self.failures: list[str] = []
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self.run, daemon=True)

    def run(self) -> None:
        while not self.stop.is_set():
            t0 = time.monotonic()
            try:
                if httpx.get(self.url, timeout=5).status_code != 200:
                    self.failures.append("status")
            except httpx.HTTPError as e:
                self.failures.append(repr(e))
            self.worst = max(self.worst, time.monotonic() - t0)
            time.sleep(0.05)

    def __enter__(self) -> Healthz:
        self.thread.start()
        time.sleep(0.1)
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        self.thread.join()
        assert not self.failures and self.worst < 0.5, (self.worst, self.failures[:3])


def _answer(s: socket.socket, until: float, data: bytes = b"") -> bytes:
    """The answer's head and body (its problem JSON), reading until its Content-Length is in (or
    the server closes: it resets a connection whose client is still sending)."""
    s.settimeout(max(0.1, until - time.monotonic()))
    while b"\r\n\r\n" not in data or len(data.partition(b"\r\n\r\n")[2]) < _length(data):
        try:
            chunk = s.recv(65536)
        except ConnectionResetError:
            break
        if not chunk:
            break
        data += chunk
    return data


def _length(data: bytes) -> int:
    for line in data.partition(b"\r\n\r\n")[0].split(b"\r\n"):
        if line.lower().startswith(b"content-length:"):
            return int(line.split(b":")[1])
    return 1 << 30


def _head(media: bytes, framing: bytes, path: str = POOL) -> bytes:
    return (
        b"POST "
        + path.encode()
        + b" HTTP/1.1\r\nHost: x\r\nContent-Type: "
        + media
        + b"\r\n"
        + framing
        + b"\r\n"
    )


def _stream(
    live: Server,
    media: bytes,
    piece: bytes,
    first: bytes = b"",
    declared: int | None = None,
    seconds: float = 60,
    pause: float = 0.0,
    path: str = POOL,
) -> tuple[bytes, int]:
    """A body that keeps coming (`first`, then `piece` again and again, `pause` seconds apart),
    chunked or of a `declared` Content-Length, until the server answers: the answer and the bytes
    sent by then."""
    sent = 0
    framing = (
        b"Content-Length: %d\r\n" % declared if declared is not None else b"Transfer-Encoding: chunked\r\n"
    )

    def frame(b: bytes) -> bytes:
        return b if declared is not None else b"%x\r\n%s\r\n" % (len(b), b)

    with connect(live) as s:
        s.sendall(_head(media, framing, path))
        s.setblocking(False)
        chunk = frame(piece)
        pending = frame(first) if first else chunk
        t0 = time.monotonic()
        while time.monotonic() - t0 < seconds:
            try:
                n = s.send(pending)
                sent += n
                pending = pending[n:]
                if not pending:
                    pending = chunk
                    time.sleep(pause)
            except BlockingIOError:
                time.sleep(0.001)
            except OSError:
                pass
            try:
                got = s.recv(65536)
            except BlockingIOError:
                continue
            s.setblocking(True)
            return _answer(s, time.monotonic() + 5, got), sent
    raise AssertionError(f"no answer after {sent:,} bytes")


def test_a_declared_10_gb_body_is_a_413_naming_the_limit_long_before_it_is_sent(live):
    # The answer waits for a bounded part of the body (hygiene's drain, KVPLAN_UNREAD_BODY_BYTES),
    # so a client still sending reads it rather than a reset; then the connection closes.
    with Healthz(live):
        t0 = time.monotonic()
        answer, sent = _stream(
            live, b"text/csv", ROW.encode() * 2000, first=AZURE.encode(), declared=10 << 30
        )
        assert time.monotonic() - t0 < 10
    assert answer.startswith(b"HTTP/1.1 413"), answer[:300]
    problem = _problem(answer)
    assert f"{MAX_TRACE_BYTES:,}" in problem["detail"] and f"{10 << 30:,}" in problem["detail"], problem
    assert problem["field"] == "body"
    assert sent < 64 << 20


def _problem(answer: bytes) -> dict:
    return json.loads(answer.partition(b"\r\n\r\n")[2])


def test_a_chunked_trace_that_keeps_streaming_is_refused_at_the_limit_before_it_ends(live):
    # Valid rows of 200k-token prompts (391 hash ids, 2.4 KB each): the byte limit comes first.
    ids = list(range(391))
    rows = mooncake(0, i=200_000, o=1, hash_ids=ids).encode() * 30
    with Healthz(live):
        answer, sent = _stream(live, b"application/x-ndjson", rows)
    assert answer.startswith(b"HTTP/1.1 413"), answer[:300]
    assert f"{MAX_TRACE_BYTES:,}" in _problem(answer)["detail"]
    assert MAX_TRACE_BYTES < sent < MAX_TRACE_BYTES + (16 << 20)


def test_a_line_that_never_ends_is_refused_at_the_line_limit(live):
    with Healthz(live):
        answer, sent = _stream(live, b"application/x-ndjson", b"a" * 60_000)
    assert answer.startswith(b"HTTP/1.1 400"), answer[:300]
    assert _problem(answer)["field"] == "trace[line 1].line"
    assert sent < 32 << 20


def test_rows_past_the_request_limit_are_refused_while_streaming(live):
    with Healthz(live):
        answer, sent = _stream(live, b"text/csv", ROW.encode() * 2000, first=AZURE.encode())
    assert answer.startswith(b"HTTP/1.1 400"), answer[:300]
    assert _problem(answer)["field"] == "trace"
    assert sent < MAX_TRACE_BYTES


def test_a_large_trace_within_the_limit_is_read_whole_chunked_not_refused_for_the_worker_budget(live):
    # 40 MB of rows, more than the worker's 32 MiB body budget: read as it streams, it holds none.
    row = mooncake(0, i=200_000, o=1, hash_ids=list(range(391))).encode()
    body = row * ((40 << 20) // len(row))

    def chunks() -> Iterator[bytes]:
        for k in range(0, len(body), 1 << 16):
            yield body[k : k + (1 << 16)]

    with Healthz(live):
        r = httpx.post(live.url + POOL, content=chunks(), headers={"content-type": JSONL}, timeout=60)
    # The body is read whole; the work it describes is then bounded as any other (a 4xx naming it).
    assert r.status_code != 503, r.text[:300]
    assert r.status_code < 500, r.text[:300]
    assert r.json().get("field") != "trace[line 1].line"


@pytest.mark.parametrize("media", [b"text/csv", b"application/x-ndjson"])
def test_decreasing_timestamps_and_a_wrong_header_on_a_real_server_keep_healthz_prompt(live, media):
    body = AZURE + LATER + ROW if media == b"text/csv" else mooncake(2000) + mooncake(1000)
    with Healthz(live):
        r = httpx.post(live.url + POOL, content=body.encode(), headers={"content-type": media.decode()})
    assert r.status_code == 400 and "goes back in time" in r.json()["detail"]


def test_a_qwen_bailian_trace_is_read_in_seconds_with_16_token_hash_blocks(client):
    # alibaba-edu/qwen-bailian-usagetraces-anon README: timestamp in seconds, 16 tokens a hash id.
    turn1 = {"chat_id": 159, "parent_chat_id": -1, "timestamp": 61.114, "input_length": 521,
             "output_length": 132, "type": "text", "turn": 1, "hash_ids": list(range(33))}  # fmt: skip
    turn2 = {**turn1, "chat_id": 160, "parent_chat_id": 159, "timestamp": 62.5, "input_length": 700,
             "turn": 2, "hash_ids": [*range(33), *range(100, 111)]}  # fmt: skip
    body = json.dumps(turn1) + "\n" + json.dumps(turn2) + "\n"
    r = post_trace(client, body, JSONL)
    assert r.status_code == 200, r.text[:400]
    answer = r.json()
    assert answer["trace"] == "bailian-jsonl" and answer["completed"] == 2
    assert answer["cache_hit_tokens"] == 512  # turn 2 reuses turn 1's 32 full 16-token blocks
    too_many = {**turn1, "hash_ids": list(range(34))}
    refused(post_trace(client, json.dumps(too_many) + "\n", JSONL), "trace[line 1].hash_ids", "16-token")


def test_a_hash_chain_shorter_than_its_prompt_is_answered_not_a_500(client):
    # aiperf's Bailian example: a 400-token follow-up names 2 of its 25 16-token blocks. Its
    # tokens past the chain are its own (it was a 500: an index past the chain's end).
    body = (REAL / "bailian-aiperf-example.jsonl").read_bytes()
    r = post_trace(client, body, JSONL)
    assert r.status_code == 200, r.text[:400]
    assert r.json()["completed"] == 2


@pytest.mark.parametrize("packed", ["gzip", "zip"])
@pytest.mark.parametrize("media", [CSV, "application/octet-stream", "application/x-www-form-urlencoded"])
def test_a_compressed_trace_file_is_a_415_saying_so_not_malformed_json(client, packed, media):
    text = (AZURE + ROW).encode()
    if packed == "gzip":
        data = gzip.compress(text)
    else:
        buffer = io.BytesIO()
        with zipfile.ZipFile(buffer, "w") as z:
            z.writestr("trace.csv", text)
        data = buffer.getvalue()
    r = post_trace(client, data, media)
    assert r.status_code == 415, r.text[:300]
    assert r.json()["field"] == "body" and f"{packed}-compressed" in r.json()["detail"]


@pytest.fixture(scope="module")
def strict() -> Iterator[Server]:
    """A server with short body bounds, to see a trace upload held to them."""
    s = start_server(
        workers=1,
        env={
            "KVPLAN_STREAMED_BODY_TIMEOUT_SECONDS": "3",
            "KVPLAN_BODY_RATE_GRACE_SECONDS": "1",
            "KVPLAN_BODY_MIN_BYTES_PER_SECOND": "4096",
        },
    )
    yield s
    s.stop()


@pytest.mark.parametrize("declared", [5 << 20, None])
def test_a_trace_trickled_in_is_a_408_at_the_streamed_routes_bound(strict, declared):
    # Declared past max_body_bytes (1 MiB), a trace upload was not timed at all before
    # /v1/simulate joined the streamed routes: now it is held to their rate and total time.
    with Healthz(strict):
        t0 = time.monotonic()
        answer, _ = _stream(
            strict, b"text/csv", ROW.encode(), first=AZURE.encode(), declared=declared, seconds=10, pause=0.05
        )
        took = time.monotonic() - t0
    assert answer.startswith(b"HTTP/1.1 408"), answer[:300]
    assert took < 5
