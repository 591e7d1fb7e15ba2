"""A replica's /metrics text, read with prometheus_client's parser within bounds: the samples of
reconcile's figures and of the replica rule's load.

People paste scrapes as they copied them: inside markdown fences, quoted with `> `, after the
`curl` that fetched them, with the HTTP head, or cut off. `clean` drops what is plainly not the
exposition (and says what it dropped); anything else that does not parse is an error naming its
line, and a last line cut off is said to be cut off, never read as a shorter number."""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterator

from prometheus_client.parser import text_string_to_metric_families
from prometheus_client.samples import Sample

from kvplan.core.autoscale.types import ReplicaLoad
from kvplan.core.errors import InvalidInput, WorkStopped
from kvplan.core.limits import (
    MAX_METRICS_LABELS,
    MAX_METRICS_LINE_CHARS,
    MAX_METRICS_SAMPLES,
    MAX_REPLICA_PROMPT_TOKENS,
    MAX_REPLICA_REQUESTS,
)

# vLLM's names (vllm/v1/metrics/loggers.py); before 0.10 the usage gauge was gpu_cache_usage_perc.
USAGE = "vllm:kv_cache_usage_perc"
OLD_USAGE = "vllm:gpu_cache_usage_perc"
RUNNING = "vllm:num_requests_running"
WAITING = "vllm:num_requests_waiting"
PROMPT_SUM = "vllm:request_prompt_tokens_sum"
PROMPT_COUNT = "vllm:request_prompt_tokens_count"
NEEDED = (USAGE, RUNNING, WAITING)
EXCERPT = 120


# What a paste carries around the exposition, by what it is.
_DROPPED = {
    "markdown fence": re.compile(r"^\s*(```|~~~)"),
    "shell command": re.compile(r"^(\s*|[^{\"]*?[$#%>]\s*)(curl|wget|http|kubectl)\s"),
    "ellipsis": re.compile(r"^\s*#?\s*(\.{2,}|…)\s*$"),
    "HTML tag": re.compile(r"^\s*</?(details|summary|pre|code)\b[^>]*>.*$"),
    "copy button": re.compile(r"^\s*(Copy to Clipboard\b.*|Copied!?|Copy)\s*$"),
    # A quote in markdown eats a line's leading "#": what is left is a comment, not a sample.
    "HELP or TYPE comment without its #": re.compile(r"^\s*(HELP|TYPE) [a-zA-Z_:]"),
}
# A sample cut before its value: a name, perhaps some of its labels, and nothing after.
_NO_VALUE = re.compile(r"^[a-zA-Z_:][a-zA-Z0-9_:]*(\{[^}]*\}?)?$")
_HTTP_HEAD = re.compile(r"^\s*HTTP/[0-9.]+ \d{3}")


def clean(text: str) -> tuple[str, list[str]]:
    """The exposition inside a paste, and what was dropped around it ("2 markdown fence lines")."""
    lines = text.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    said: dict[str, int] = {}
    filled = [x for x in lines if x.strip()]
    if filled and all(x.lstrip().startswith(">") for x in filled):  # a quote on every line
        lines = [re.sub(r"^\s*> ?", "", x) for x in lines]
        said["quote mark"] = len(filled)
    kept: list[str] = []
    in_head = False
    for line in lines:
        if not kept and _HTTP_HEAD.match(line):
            in_head = True
        if in_head:
            said["HTTP response head line"] = said.get("HTTP response head line", 0) + 1
            in_head = bool(line.strip())
            continue
        kind = next((k for k, pattern in _DROPPED.items() if pattern.match(line)), None)
        if kind is not None:
            said[kind] = said.get(kind, 0) + 1
            continue
        if line.rstrip().endswith("```"):  # a fence closed on the last sample's line
            line = line.rstrip()[:-3]
            said["markdown fence"] = said.get("markdown fence", 0) + 1
        kept.append(line)
    # A comment cut off at the end carries no value: dropped. (A sample cut off is an error: _where.)
    ended = text.endswith(("\n", "\r"))
    last = max((i for i, x in enumerate(kept) if x.strip()), default=None)
    if not ended and last is not None and kept[last].lstrip().startswith("#") and last == len(kept) - 1:
        kept.pop()
        said["cut-off comment"] = 1
    notes = [
        f"a quote mark on {n} lines" if kind == "quote mark" else f"{n} {kind} line{'s' if n != 1 else ''}"
        for kind, n in said.items()
    ]
    return "\n".join(kept), notes


def _excerpt(line: str) -> str:
    line = line.strip()
    return line if len(line) <= EXCERPT else line[: EXCERPT - 1] + "…"


def _where(
    text: str, field: str, error: Exception, should_stop: Callable[[], bool] | None = None
) -> InvalidInput:
    """The parse error of `text` as the line that causes it: each line alone, in order (a plain
    comment cannot be it: 524,000 of them before a bad line took 1.9 s to parse one by one).
    should_stop() is asked every 1,024 lines."""
    lines = text.split("\n")
    for n, line in enumerate(lines, start=1):
        if n % 1024 == 0 and should_stop is not None and should_stop():
            raise WorkStopped(f"stopped finding the bad /metrics line, at line {n:,}")
        bare = line.strip()
        if not bare or (bare.startswith("#") and not bare.startswith(("# HELP", "# TYPE"))):
            continue
        try:
            list(text_string_to_metric_families(line + "\n"))
        except Exception:
            cut = n == len(lines) and not text.endswith("\n") and sum(1 for x in lines if x.strip()) > 1
            if cut or (_NO_VALUE.match(line.strip()) and n == len(lines)):
                return InvalidInput(
                    field,
                    f"line {n} `{_excerpt(line)}` is cut off: paste the whole /metrics, to its last line",
                )
            return InvalidInput(
                field, f"line {n} `{_excerpt(line)}` is not Prometheus's text exposition format"
            )
    return InvalidInput(field, f"not Prometheus's text exposition format: {str(error)[:EXCERPT]}")


def samples(text: str, field: str, should_stop: Callable[[], bool] | None = None) -> Iterator[Sample]:
    """Every sample of a text exposition, in order; InvalidInput naming `field` and the line for
    text that is not the format, a line no exporter writes, or more samples than one vLLM writes.
    should_stop() is asked every 1,024 samples."""
    if should_stop is not None and should_stop():
        raise WorkStopped("stopped after 0 /metrics samples read")
    # prometheus_client's label parser is quadratic in a line's labels: bound lines first.
    for n, line in enumerate(text.split("\n"), start=1):  # as prometheus_client splits it
        if len(line) > MAX_METRICS_LINE_CHARS or line.count('="') > MAX_METRICS_LABELS:
            limit = f"over {MAX_METRICS_LABELS} labels or {MAX_METRICS_LINE_CHARS:,} characters"
            raise InvalidInput(field, f"line {n} is not one vLLM writes ({limit})")
    count = 0
    try:
        for family in text_string_to_metric_families(text):
            for s in family.samples:
                count += 1
                if count % 1024 == 0 and should_stop is not None and should_stop():
                    raise WorkStopped(f"stopped after {count:,} /metrics samples read")
                if count > MAX_METRICS_SAMPLES:
                    raise InvalidInput(field, f"more than {MAX_METRICS_SAMPLES:,} samples: send vLLM's own")
                yield s
    except (InvalidInput, WorkStopped):
        raise
    except (ValueError, TypeError, IndexError, KeyError, OverflowError) as e:
        raise _where(text, field, e, should_stop) from None


class ScrapedLoad:
    """One replica's load read from its /metrics, its prompt-token totals, the model names its
    series carry, and what was dropped around the exposition."""

    __slots__ = ("load", "model_names", "notes", "prompt_count", "prompt_sum")

    def __init__(
        self,
        load: ReplicaLoad,
        prompt_sum: float,
        prompt_count: float,
        model_names: set[str],
        notes: list[str],
    ) -> None:
        self.load = load
        self.prompt_sum = prompt_sum
        self.prompt_count = prompt_count
        self.model_names = model_names
        self.notes = notes


def _nothing_to_read(field: str, text: str, names: list[str]) -> InvalidInput:
    """Why a scrape holds none of the rule's series, in the words that tell what to send instead."""
    if not text.strip():
        return InvalidInput(field, "is empty: send the replica's /metrics text")
    if any(n.startswith("vllm_") for n in names):
        renamed = "has vllm_… series, not vLLM's own vllm:… names (an exporter renamed them)"
        return InvalidInput(field, f"{renamed}: send vLLM's /metrics")
    if any(n.startswith("vllm:") for n in names):
        part = f"has vLLM series but none of {', '.join(NEEDED)}"
        return InvalidInput(field, f"{part}: a part of it? send the replica's whole /metrics")
    if not names:
        return InvalidInput(field, "has no samples: the engine has not reported yet, or this is not a scrape")
    found = ", ".join(sorted(set(names))[:3])
    return InvalidInput(field, f"has no vLLM series (found {found}): is this a vLLM replica's /metrics?")


def replica_load(text: str, field: str, should_stop: Callable[[], bool] | None = None) -> ScrapedLoad:
    """The replica rule's inputs from one replica's /metrics, summed over its engines (a data
    parallel pod has several). A value that is not a finite number ≥ 0 (a usage above 1), or a
    series given twice (two scrapes pasted into one), is an error naming the series: a wrong value
    would give a wrong replica count."""
    exposition, notes = clean(text)
    if exposition.lstrip().startswith(("{'status'", '{"status"')):
        raise InvalidInput(field, "is a Prometheus query answer, not a replica's /metrics scrape")
    totals: dict[str, float] = {}
    names: list[str] = []
    seen: set[tuple[str, tuple[tuple[str, str], ...]]] = set()
    models: set[str] = set()
    for s in samples(exposition, field, should_stop):
        name = s.name
        names.append(name)
        if name not in (USAGE, OLD_USAGE, RUNNING, WAITING, PROMPT_SUM, PROMPT_COUNT):
            continue
        v = s.value
        labels = ",".join(f'{k}="{x}"' for k, x in s.labels.items())
        key = (name, tuple(sorted(s.labels.items())))
        if key in seen:
            raise InvalidInput(
                field, f"holds {name}{{{labels}}} twice: two scrapes in one? send one entry a replica"
            )
        seen.add(key)
        top = (
            1
            if name in (USAGE, OLD_USAGE)
            else MAX_REPLICA_REQUESTS
            if name in (RUNNING, WAITING)
            else MAX_REPLICA_PROMPT_TOKENS
        )
        if not math.isfinite(v) or not 0 <= v <= top:
            bound = "a fraction from 0 to 1" if top == 1 else f"a number from 0 to {top:g}"
            raise InvalidInput(field, f"{name}{{{labels}}} is {v}, not {bound}")
        if "model_name" in s.labels:
            models.add(s.labels["model_name"])
        totals[name] = totals.get(name, 0.0) + v
    usage = totals.get(USAGE, totals.get(OLD_USAGE))
    missing = [n for n, v in ((USAGE, usage), (RUNNING, totals.get(RUNNING)), (WAITING, totals.get(WAITING)))
               if v is None]  # fmt: skip
    if len(missing) == 3:
        raise _nothing_to_read(field, exposition, names)
    if missing:
        raise InvalidInput(field, f"vLLM's {', '.join(missing)} missing: send the replica's whole /metrics")
    load = ReplicaLoad(
        kv_cache_usage_perc=usage or 0.0,
        num_requests_running=totals[RUNNING],
        num_requests_waiting=totals[WAITING],
    )
    return ScrapedLoad(load, totals.get(PROMPT_SUM, 0.0), totals.get(PROMPT_COUNT, 0.0), models, notes)
