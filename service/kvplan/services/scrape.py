"""A replica's /metrics text, read with prometheus_client's parser within bounds: the samples of
reconcile's figures and of the replica rule's load."""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator

from prometheus_client.parser import text_string_to_metric_families
from prometheus_client.samples import Sample

from kvplan.core.autoscale.types import ReplicaLoad
from kvplan.core.errors import InvalidInput, WorkStopped
from kvplan.core.limits import MAX_METRICS_LABELS, MAX_METRICS_LINE_CHARS, MAX_METRICS_SAMPLES

# vLLM's names (vllm/v1/metrics/loggers.py); before 0.10.2 the usage gauge was gpu_cache_usage_perc.
USAGE = "vllm:kv_cache_usage_perc"
OLD_USAGE = "vllm:gpu_cache_usage_perc"
RUNNING = "vllm:num_requests_running"
WAITING = "vllm:num_requests_waiting"
PROMPT_SUM = "vllm:request_prompt_tokens_sum"
PROMPT_COUNT = "vllm:request_prompt_tokens_count"


def samples(text: str, field: str, should_stop: Callable[[], bool] | None = None) -> Iterator[Sample]:
    """Every sample of a text exposition, in order; InvalidInput naming `field` for text that is
    not the format, a line no exporter writes, or more samples than one vLLM writes.
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
        raise InvalidInput(field, f"not Prometheus text exposition format: {e}") from None


class ScrapedLoad:
    """One replica's load read from its /metrics, and its prompt-token totals."""

    __slots__ = ("load", "prompt_count", "prompt_sum")

    def __init__(self, load: ReplicaLoad, prompt_sum: float, prompt_count: float) -> None:
        self.load = load
        self.prompt_sum = prompt_sum
        self.prompt_count = prompt_count


def replica_load(text: str, field: str, should_stop: Callable[[], bool] | None = None) -> ScrapedLoad:
    """The replica rule's inputs from one replica's /metrics, summed over its engines (a data
    parallel pod has several). A value that is not a finite number ≥ 0 (a usage above 1) is an
    error naming the series: a wrong value would give a wrong replica count."""
    totals: dict[str, float] = {}
    for s in samples(text, field, should_stop):
        name = s.name
        if name not in (USAGE, OLD_USAGE, RUNNING, WAITING, PROMPT_SUM, PROMPT_COUNT):
            continue
        v = s.value
        labels = ",".join(f'{k}="{x}"' for k, x in s.labels.items())
        if not math.isfinite(v) or v < 0 or (name in (USAGE, OLD_USAGE) and v > 1):
            bound = "a fraction from 0 to 1" if name in (USAGE, OLD_USAGE) else "a finite number ≥ 0"
            raise InvalidInput(field, f"{name}{{{labels}}} is {v}, not {bound}")
        totals[name] = totals.get(name, 0.0) + v
    usage = totals.get(USAGE, totals.get(OLD_USAGE))
    missing = [n for n, v in ((USAGE, usage), (RUNNING, totals.get(RUNNING)), (WAITING, totals.get(WAITING)))
               if v is None]  # fmt: skip
    if len(missing) == 3:
        raise InvalidInput(
            field, f"no vLLM series ({USAGE}, {RUNNING}, {WAITING}): is this a vLLM replica's /metrics?"
        )
    if missing:
        raise InvalidInput(field, f"vLLM's {', '.join(missing)} missing: send the replica's whole /metrics")
    load = ReplicaLoad(
        kv_cache_usage_perc=usage or 0.0,
        num_requests_running=totals[RUNNING],
        num_requests_waiting=totals[WAITING],
    )
    return ScrapedLoad(load, totals.get(PROMPT_SUM, 0.0), totals.get(PROMPT_COUNT, 0.0))
