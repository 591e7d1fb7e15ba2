"""Recorded traces, read as they stream in: the formats published traces come in.

- Azure LLM inference trace CSV (Azure/AzurePublicDataset, 2023 and 2024): a header
  `TIMESTAMP,ContextTokens,GeneratedTokens`, then `2023-11-16 18:15:46.6805900,374,44` (2023) or
  `2024-05-10 00:00:00.009930+00:00,…` (2024: a UTC offset, which is applied).
- BurstGPT's CSV (HPMLL/BurstGPT): `Timestamp,Model,Request tokens,Response tokens,Total tokens,
  Log Type` (newer files add columns, ignored), `Timestamp` in seconds. A failed request is logged
  with 0 response tokens: such a row is refused naming it (the `_without_fails` files have none).
- Mooncake's JSONL (kvcache-ai/Mooncake FAST25-release/traces): `timestamp` in milliseconds,
  `input_length`, `output_length`, and `hash_ids`, one id a 512-token block of the prompt, each
  naming that block's content and everything before it.
- Alibaba's Qwen-Bailian JSONL (alibaba-edu/qwen-bailian-usagetraces-anon): Mooncake's fields
  with `chat_id`, `parent_chat_id`, `turn` and `type`, but `timestamp` in seconds and a hash id
  per 16-token block. Each turn is replayed at its recorded time.
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
from ..limits import (
    MAX_ARRIVAL_TIME,
    MAX_REQUESTS,
    MAX_TOKENS_PER_REQUEST,
    MAX_TRACE_CHAIN_BLOCKS,
    MAX_TRACE_LINE_BYTES,
)
from .workload import SimRequest

AZURE_HEADER = ("TIMESTAMP", "ContextTokens", "GeneratedTokens")
BURSTGPT_COLUMNS = ("Timestamp", "Request tokens", "Response tokens")  # the ones read
MOONCAKE_BLOCK = 512  # tokens a Mooncake hash id stands for
BAILIAN_BLOCK = 16  # tokens a Qwen-Bailian hash id stands for
# Hash-chained JSONL formats: (tokens a hash id stands for, seconds a timestamp unit is).
CHAINED = {"mooncake-jsonl": (MOONCAKE_BLOCK, 1e-3), "bailian-jsonl": (BAILIAN_BLOCK, 1.0)}
FORMATS = ("azure-csv", "burstgpt-csv", "mooncake-jsonl", "bailian-jsonl", "requests-jsonl")
_STAMP = re.compile(
    r"^(\d{4})-(\d{2})-(\d{2})[ T](\d{2}):(\d{2}):(\d{2})(?:\.(\d{1,9}))?(Z|[+-]\d{2}:?\d{2})?$"
)
_SECONDS = re.compile(r"^\d{1,12}(?:\.\d{1,9})?$")
_BOM = b"\xef\xbb\xbf"


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
    """Seconds since 0001-01-01 UTC of a `YYYY-MM-DD HH:MM:SS[.fraction][+HH:MM]` timestamp
    (Azure's seven decimals kept: datetime would cut them to six)."""
    m = _STAMP.match(text.strip())
    if m is None:
        raise InvalidInput(
            _field(line, "TIMESTAMP"), f"{text[:40]!r} is not YYYY-MM-DD HH:MM:SS[.fraction][+HH:MM]"
        )
    y, mo, d, h, mi, s, frac, zone = m.groups()
    offset = 0
    if zone and zone != "Z":
        hh, mm = int(zone[1:3]), int(zone[-2:])
        if hh > 23 or mm > 59:
            raise InvalidInput(_field(line, "TIMESTAMP"), f"{text[:40]!r}: {zone} is not a UTC offset")
        offset = (1 if zone[0] == "+" else -1) * (hh * 3600 + mm * 60)
    try:
        days = datetime.date(int(y), int(mo), int(d)).toordinal()
    except ValueError:
        raise InvalidInput(_field(line, "TIMESTAMP"), f"{text[:40]!r} is not a date") from None
    if int(h) > 23 or int(mi) > 59 or int(s) > 60:
        raise InvalidInput(_field(line, "TIMESTAMP"), f"{text[:40]!r} is not a time of day")
    return (
        days * 86400
        + int(h) * 3600
        + int(mi) * 60
        + int(s)
        - offset
        + (int(frac) / 10 ** len(frac) if frac else 0.0)
    )


def _seconds(text: str, line: int, column: str) -> float:
    """A timestamp given in seconds (BurstGPT's), a plain non-negative number."""
    text = text.strip()
    if not _SECONDS.match(text):
        raise InvalidInput(_field(line, column), f"{text[:40]!r} is not a number of seconds (at least 0)")
    return float(text)


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
        self.format = ""
        self.columns: tuple[int, int, int] = (0, 1, 2)  # the time, prompt and output cells
        self.width = 3  # cells a row has
        self.header = ",".join(AZURE_HEADER)
        self.line = 0
        self.rest = b""
        self.first: float | None = None
        self.last = 0.0
        self.requests: list[SimRequest] = []
        self.chains: list[tuple[int, ...]] = []
        self.nodes: dict[tuple[int, int], int] = {}  # (parent node, hash id) → node

    def feed(self, chunk: bytes) -> None:
        if self.line == 0 and not self.rest and chunk.startswith(_BOM):
            chunk = chunk[len(_BOM) :]  # a byte order mark (Excel's CSV, Notepad's UTF-8)
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
            raise InvalidInput(
                "trace", "no requests in the body" + (" after its header" if self.format else "")
            )
        chained = CHAINED.get(self.format)
        chains = self.chains if chained else None
        return Trace(self.requests, chains, chained[0] if chained else 0, self.format)

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
        cells = [c.strip().strip('"').strip() for c in text.decode("utf-8", "replace").split(",")]
        if not self.format:
            self._header(cells, line)
            return
        if len(cells) != self.width:
            raise InvalidInput(
                _field(line, "row"), f"{len(cells)} columns; the header has {self.width}: {self.header}"
            )
        t, p, o = self.columns
        if self.format == "azure-csv":
            names = AZURE_HEADER
            when = _stamp_seconds(cells[t], line)
        else:
            names = BURSTGPT_COLUMNS
            when = _seconds(cells[t], line, names[0])
            if cells[o] == "0":
                raise InvalidInput(
                    _field(line, names[2]),
                    "0: BurstGPT logs a failed request with 0 response tokens; replay "
                    "BurstGPT_without_fails_*.csv, or drop those rows",
                )
        self._add(line, names[0], when, _tokens(cells[p], line, names[1]), _tokens(cells[o], line, names[2]))

    def _header(self, cells: list[str], line: int) -> None:
        """The CSV's first line names its format: Azure's three columns, or BurstGPT's."""
        self.header = ",".join(cells)[:120]
        self.width = len(cells)
        if tuple(cells) == AZURE_HEADER:
            self.format = "azure-csv"
        elif all(c in cells for c in BURSTGPT_COLUMNS):
            self.format = "burstgpt-csv"
            t, p, o = (cells.index(c) for c in BURSTGPT_COLUMNS)
            self.columns = (t, p, o)
        else:
            raise InvalidInput(
                _field(line, "header"),
                f"{self.header[:80]!r}: a trace CSV starts with Azure's header "
                f"{','.join(AZURE_HEADER)}, or BurstGPT's (with the columns {', '.join(BURSTGPT_COLUMNS)})",
            )

    def _jsonl(self, text: bytes, line: int) -> None:
        if not self.format:
            try:
                keys = _any.decode(text)
            except msgspec.DecodeError as e:
                raise InvalidInput(_field(line, "json"), _reason(e)) from None
            if not isinstance(keys, dict):
                raise InvalidInput(_field(line, "json"), "each line is one JSON object")
            mooncake = "input_length" in keys or "timestamp" in keys
            bailian = "chat_id" in keys and "parent_chat_id" in keys
            self.format = "bailian-jsonl" if bailian else "mooncake-jsonl" if mooncake else "requests-jsonl"
        if self.format in CHAINED:
            self._mooncake_row(text, line)
        else:
            self._request_row(text, line)

    def _mooncake_row(self, text: bytes, line: int) -> None:
        """Keep a hash-chained row (Mooncake's, Qwen-Bailian's): its request, and its chain as
        interned nodes, so requests share exactly the blocks their chains agree on."""
        try:
            row = _mooncake.decode(text)
        except (msgspec.DecodeError, msgspec.ValidationError) as e:
            raise InvalidInput(_field(line, _path(e)), _reason(e)) from None
        block, unit = CHAINED[self.format]
        if row.timestamp < 0:
            raise InvalidInput(_field(line, "timestamp"), f"{row.timestamp:g}: a time is at least 0")
        prompt = _tokens(row.input_length, line, "input_length")
        output = _tokens(row.output_length, line, "output_length")
        if len(row.hash_ids) > -(-prompt // block):
            raise InvalidInput(
                _field(line, "hash_ids"),
                f"{len(row.hash_ids):,} ids for {prompt:,} tokens: at most one a {block}-token block "
                f"({self.format})",
            )
        node, chain = -1, []
        for h in row.hash_ids:
            key = (node, h)
            node = self.nodes.get(key, -1)
            if node < 0:
                node = self.nodes[key] = len(self.nodes)
            chain.append(node)
        if len(self.nodes) > MAX_TRACE_CHAIN_BLOCKS:
            raise InvalidInput(
                _field(line, "hash_ids"),
                f"the rows up to this one chain {len(self.nodes):,} distinct blocks: a trace's chains "
                f"hold at most {MAX_TRACE_CHAIN_BLOCKS:,} (Mooncake's conversation trace chains 182,790); "
                "simulate a part of it",
            )
        self._add(line, "timestamp", row.timestamp * unit, prompt, output)
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
        """Keep one row's request, its arrival counted from the first row's and scaled; refused
        naming the row when it goes back in time, arrives past the limit or is one too many."""
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


_NAMED = ("Object missing required field", "Object contains unknown field")


def _path(e: Exception) -> str:
    """The column msgspec's message names: `… - at `$.input_length``, or a missing key's name."""
    text = str(e)
    if " - at `$" in text:
        return text.rpartition(" - at `$")[2].rstrip("`").lstrip(".") or "json"
    if text.startswith(_NAMED) and text.count("`") >= 2:
        return text[text.index("`") + 1 : text.rindex("`")] or "json"
    return "json"


def _reason(e: Exception) -> str:
    reason = str(e).rpartition(" - at `$")[0] or str(e)
    malformed = isinstance(e, msgspec.DecodeError) and not isinstance(e, msgspec.ValidationError)
    return f"not JSON: {reason}" if malformed else reason
