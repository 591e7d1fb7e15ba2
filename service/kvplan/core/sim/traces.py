"""Recorded traces, read as they stream in: the formats published traces come in.

- Azure LLM inference trace CSV (Azure/AzurePublicDataset, 2023 and 2024): a header
  `TIMESTAMP,ContextTokens,GeneratedTokens`, then `2023-11-16 18:15:46.6805900,374,44`.
- Mooncake's JSONL (kvcache-ai/Mooncake FAST25-release/traces): `timestamp` in milliseconds,
  `input_length`, `output_length`, and `hash_ids`, one id a 512-token block of the prompt, each
  naming that block's content and everything before it.
- A plain JSONL of the simulator's own requests: `{"arrival_time": s, "prompt_tokens",
  "output_tokens", "prefix_id", "prefix_tokens", "priority"}`.

Arrival times count from the trace's first row, scaled by `time_scale` (2 plays it at half the
speed). A hash chain becomes a tuple of interned nodes, one a 512-token block: a node stands for a
chain prefix, so requests share exactly the blocks their chains agree on (the scheduler keys each
full vLLM block by the node holding its last token). Rows are checked as they come, and refused
naming the line (1 is the first line of the body) and the column: a bad header, lengths out of
range, timestamps that go back, more rows or bytes than the limits.
"""

from __future__ import annotations

import datetime
import re
from typing import Any, NamedTuple

import msgspec

from ..errors import InvalidInput
from ..limits import MAX_ARRIVAL_TIME, MAX_REQUESTS, MAX_TOKENS_PER_REQUEST, MAX_TRACE_LINE_BYTES
from .workload import SimRequest

AZURE_HEADER = ("TIMESTAMP", "ContextTokens", "GeneratedTokens")
MOONCAKE_BLOCK = 512  # tokens a Mooncake hash id stands for
FORMATS = ("azure-csv", "mooncake-jsonl", "requests-jsonl")
_STAMP = re.compile(r"^(\d{4})-(\d{2})-(\d{2})[ T](\d{2}):(\d{2}):(\d{2})(?:\.(\d{1,9}))?$")


class Trace(NamedTuple):
    """A trace's requests in row order, their hash chains (Mooncake's), and its format."""

    requests: list[SimRequest]
    chains: list[tuple[int, ...]] | None
    chain_block: int
    format: str


class _Mooncake(msgspec.Struct, forbid_unknown_fields=False):
    timestamp: float
    input_length: int
    output_length: int
    hash_ids: list[int] = []


_mooncake = msgspec.json.Decoder(_Mooncake)
_request = msgspec.json.Decoder(SimRequest)
_any = msgspec.json.Decoder()


def _field(line: int, column: str) -> str:
    return f"trace[line {line}].{column}"


def _stamp_seconds(text: str, line: int) -> float:
    """Seconds since 0001-01-01 of a `YYYY-MM-DD HH:MM:SS[.fraction]` timestamp (Azure's seven
    decimals kept: datetime would cut them to six)."""
    m = _STAMP.match(text.strip())
    if m is None:
        raise InvalidInput(_field(line, "TIMESTAMP"), f"{text[:40]!r} is not YYYY-MM-DD HH:MM:SS[.fraction]")
    y, mo, d, h, mi, s, frac = m.groups()
    try:
        days = datetime.date(int(y), int(mo), int(d)).toordinal()
    except ValueError:
        raise InvalidInput(_field(line, "TIMESTAMP"), f"{text[:40]!r} is not a date") from None
    if int(h) > 23 or int(mi) > 59 or int(s) > 60:
        raise InvalidInput(_field(line, "TIMESTAMP"), f"{text[:40]!r} is not a time of day")
    return (
        days * 86400 + int(h) * 3600 + int(mi) * 60 + int(s) + (int(frac) / 10 ** len(frac) if frac else 0.0)
    )


def _tokens(value: Any, line: int, column: str) -> int:
    if isinstance(value, str):
        value = value.strip()
        if not re.fullmatch(r"[+-]?\d+", value):
            raise InvalidInput(_field(line, column), f"{value[:20]!r} is not a whole number of tokens")
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int):
        raise InvalidInput(_field(line, column), f"{value!r} is not a whole number of tokens")
    if not 1 <= value <= MAX_TOKENS_PER_REQUEST:
        raise InvalidInput(_field(line, column), f"{value:,} tokens: must be 1..{MAX_TOKENS_PER_REQUEST:,}")
    return value


class TraceReader:
    """Reads a trace body chunk by chunk (`feed`), keeping the requests, never the body."""

    def __init__(self, csv: bool, time_scale: float = 1.0) -> None:
        self.csv = csv
        self.time_scale = time_scale
        self.format = "azure-csv" if csv else ""
        self.header_seen = False
        self.line = 0
        self.rest = b""
        self.first: float | None = None
        self.last = 0.0
        self.requests: list[SimRequest] = []
        self.chains: list[tuple[int, ...]] = []
        self.nodes: dict[tuple[int, int], int] = {}  # (parent node, hash id) → node

    def feed(self, chunk: bytes) -> None:
        data = self.rest + chunk
        lines = data.split(b"\n")
        self.rest = lines.pop()
        if len(self.rest) > MAX_TRACE_LINE_BYTES:
            raise InvalidInput(_field(self.line + 1, "line"), f"longer than {MAX_TRACE_LINE_BYTES:,} bytes")
        for raw in lines:
            self._line(raw)

    def finish(self) -> Trace:
        if self.rest.strip():
            self._line(self.rest)
        self.rest = b""
        if not self.requests:
            raise InvalidInput("trace", "no requests in the body" + (" after its header" if self.csv else ""))
        chains = self.chains if self.format == "mooncake-jsonl" else None
        return Trace(self.requests, chains, MOONCAKE_BLOCK if chains else 0, self.format)

    # -- one line ----------------------------------------------------------------------------
    def _line(self, raw: bytes) -> None:
        self.line += 1
        line = self.line
        if len(raw) > MAX_TRACE_LINE_BYTES:
            raise InvalidInput(_field(line, "line"), f"longer than {MAX_TRACE_LINE_BYTES:,} bytes")
        text = raw.strip()
        if not text:
            return
        if self.csv:
            self._csv(text, line)
        else:
            self._jsonl(text, line)

    def _csv(self, text: bytes, line: int) -> None:
        cells = text.decode("utf-8", "replace").lstrip("\ufeff").split(",")
        if not self.header_seen:
            self.header_seen = True
            names = tuple(c.strip() for c in cells)
            if names != AZURE_HEADER:
                raise InvalidInput(
                    _field(line, "header"),
                    f"{','.join(names)[:80]!r}: an Azure LLM inference trace starts with "
                    f"{','.join(AZURE_HEADER)}",
                )
            return
        if len(cells) != 3:
            raise InvalidInput(
                _field(line, "row"), f"{len(cells)} columns; the trace has 3: {','.join(AZURE_HEADER)}"
            )
        when = _stamp_seconds(cells[0], line)
        self._add(
            line,
            "TIMESTAMP",
            when,
            _tokens(cells[1], line, "ContextTokens"),
            _tokens(cells[2], line, "GeneratedTokens"),
        )

    def _jsonl(self, text: bytes, line: int) -> None:
        if not self.format:
            try:
                keys = _any.decode(text)
            except msgspec.DecodeError as e:
                raise InvalidInput(_field(line, "json"), f"not JSON: {e}") from None
            if not isinstance(keys, dict):
                raise InvalidInput(_field(line, "json"), "each line is one JSON object")
            self.format = "mooncake-jsonl" if "input_length" in keys else "requests-jsonl"
        if self.format == "mooncake-jsonl":
            self._mooncake_row(text, line)
        else:
            self._request_row(text, line)

    def _mooncake_row(self, text: bytes, line: int) -> None:
        try:
            row = _mooncake.decode(text)
        except (msgspec.DecodeError, msgspec.ValidationError) as e:
            raise InvalidInput(_field(line, _path(e)), _reason(e)) from None
        prompt = _tokens(row.input_length, line, "input_length")
        output = _tokens(row.output_length, line, "output_length")
        if len(row.hash_ids) > -(-prompt // MOONCAKE_BLOCK):
            raise InvalidInput(
                _field(line, "hash_ids"),
                f"{len(row.hash_ids):,} ids for {prompt:,} tokens: at most one a "
                f"{MOONCAKE_BLOCK}-token block",
            )
        node, chain = -1, []
        for h in row.hash_ids:
            key = (node, h)
            node = self.nodes.get(key, -1)
            if node < 0:
                node = self.nodes[key] = len(self.nodes)
            chain.append(node)
        self._add(line, "timestamp", row.timestamp / 1000, prompt, output)
        self.chains.append(tuple(chain))

    def _request_row(self, text: bytes, line: int) -> None:
        try:
            r = _request.decode(text)
        except (msgspec.DecodeError, msgspec.ValidationError) as e:
            raise InvalidInput(_field(line, _path(e)), _reason(e)) from None
        if r.arrival_time is None:
            raise InvalidInput(
                _field(line, "arrival_time"), "each request of a trace gives its arrival_time (seconds)"
            )
        if not 0 <= r.prefix_tokens <= r.prompt_tokens:
            raise InvalidInput(_field(line, "prefix_tokens"), "must be between 0 and prompt_tokens")
        self._add(line, "arrival_time", r.arrival_time, r.prompt_tokens, r.output_tokens, r)

    def _add(
        self, line: int, column: str, when: float, prompt: int, output: int, r: SimRequest | None = None
    ) -> None:
        """Keep one row as a request arriving (when − first row) × time_scale seconds in: rows in
        arrival order, within the request and time limits."""
        if len(self.requests) >= MAX_REQUESTS:
            raise InvalidInput(
                "trace", f"more than {MAX_REQUESTS:,} requests (line {line}): simulate a part of it"
            )
        if self.first is None:
            self.first = when
        elif when < self.last:
            raise InvalidInput(
                _field(line, column),
                f"goes back in time: {when - self.first:,.6g} s after the first row, before the "
                f"previous row's {self.last - self.first:,.6g} s; a trace's rows are in arrival order",
            )
        self.last = when
        at = (when - self.first) * self.time_scale
        if at > MAX_ARRIVAL_TIME:
            raise InvalidInput(
                _field(line, column), f"arrives {at:,.0f} s after the first row: at most {MAX_ARRIVAL_TIME:g}"
            )
        if r is None:
            self.requests.append(SimRequest(arrival_time=at, prompt_tokens=prompt, output_tokens=output))
        else:
            self.requests.append(msgspec.structs.replace(r, arrival_time=at))


def _path(e: Exception) -> str:
    path = str(e).rpartition(" - at `$")[2].rstrip("`").lstrip(".")
    return path or "json"


def _reason(e: Exception) -> str:
    return str(e).rpartition(" - at `$")[0] or str(e)
