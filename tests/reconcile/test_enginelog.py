"""Every real start-up log of the training file reads to the figures read from it by hand, within
the rounding the log printed; prefixes, tags and colours people paste are skipped; hostile input
is refused or read in linear time."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kvplan.core.errors import InvalidInput
from kvplan.core.logs.enginelog import read_log

LOGS = [
    json.loads(line)
    for line in (Path(__file__).parents[1] / "calibration" / "data" / "vllm-memlogs.jsonl")
    .read_text()
    .splitlines()
]
# Quotes that are a person's summary, not lines vLLM printed (the data's README: a table quoted
# from a document is not a log): their figures were read from the prose.
SUMMARIES = {
    "M023": "a VRAM breakdown written by its author (the token count is theirs)",
    "M031": "a test report's prose", "M032": "a test report's prose", "M033": "a test report's prose",
    "M036": "a sentence of a write-up", "M111": "a row of a document's table",
}  # fmt: skip
QUOTED_LOGS = [r for r in LOGS if "| Model |" not in r["source"]["quote"] and r["id"] not in SUMMARIES]
FIGURES = ("weights_gib", "non_torch_gib", "activation_peak_gib", "cudagraph_gib", "available_kv_gib",
           "requested_gib", "gpu_kv_cache_tokens", "num_gpu_blocks", "max_concurrency",
           "concurrency_tokens_per_request")  # fmt: skip


def as_log(quote: str) -> str:
    """The quote's excerpts, one a line (they were joined with ' | ')."""
    return "\n".join(quote.split(" | "))


def close(printed: float, decimals: int, expected: float) -> bool:
    """Equal within the rounding of whichever of the two printed fewer decimals."""
    return abs(printed - expected) <= 0.5 * 10 ** -min(decimals, 2) + 1e-9


@pytest.mark.parametrize("entry", QUOTED_LOGS, ids=[r["id"] for r in QUOTED_LOGS])
def test_each_training_log_reads_to_its_hand_read_figures(entry):
    log = read_log(as_log(entry["source"]["quote"]))
    for name in FIGURES:
        expected = entry["reported"][name]
        if expected is None:
            continue
        figure = log.first(name)
        if name == "cudagraph_gib" and figure is None:
            figure = log.first("cudagraph_estimate_gib")  # the notes say where the estimate stands in
        assert figure is not None, f"{name}: not read (expected {expected})"
        assert close(float(figure.value), figure.decimals, expected), (name, figure, expected)


def test_the_share_of_training_logs_read_is_all_of_them():
    assert len(QUOTED_LOGS) >= 70


DATA = Path(__file__).parent / "data"


def test_a_pasted_tp2_log_with_timestamps_tags_and_colours_reads_per_rank():
    log = read_log((DATA / "engine-0.33-tp2.log").read_text())
    assert log.value("version") == "0.33.0"
    assert log.value("model") == "meta-llama/Llama-3.1-70B-Instruct"
    assert (log.value("tensor_parallel_size"), log.value("max_model_len")) == (2, 4096)
    assert log.value("max_num_batched_tokens") == 8192
    assert {f.rank for f in log.figures if f.name == "weights_gib"} == {"Worker_TP0", "Worker_TP1"}
    assert log.value("available_kv_gib") == 1.29 and log.value("gpu_kv_cache_tokens") == 8448
    line = log.first("available_kv_gib")
    assert line is not None and line.line == 9 and "\x1b" not in line.text


def test_a_vllm_serve_command_line_gives_its_arguments():
    log = read_log("vllm serve Qwen/Qwen3-8B --tensor-parallel-size 2 --gpu-memory-utilization=0.85 "
                   "--max-num-seqs 64 --kv-cache-dtype fp8 --enforce-eager")  # fmt: skip
    assert log.value("model") == "Qwen/Qwen3-8B"
    assert (log.value("tensor_parallel_size"), log.value("gpu_memory_utilization")) == (2, 0.85)
    assert (log.value("max_num_seqs"), log.value("kv_cache_dtype"), log.value("enforce_eager")) == (
        64,
        "fp8",
        True,
    )


@pytest.mark.parametrize("text", ["", "hello\nworld\n", "\x00\x01\x02" * 1000, "GiB GiB GiB"])
def test_text_with_no_vllm_line_is_refused_naming_the_log(text):
    with pytest.raises(InvalidInput) as e:
        read_log(text)
    assert e.value.field == "log"


HOSTILE = {
    "one 10 MB line": "Model loading took " + "9" * 10_000_000,
    "a million short lines": "x\n" * 1_000_000 + "Available KV cache memory: 1.5 GiB\n",
    "regex bait": ("Maximum concurrency for " + "1," * 50_000 + " tokens per request: ") * 20,
    "nested braces": "non-default args: {" + "{" * 8000 + "}" * 8000 + "}\nAvailable KV cache memory: 2 GiB",
}


@pytest.mark.parametrize("text", HOSTILE.values(), ids=HOSTILE.keys())
def test_hostile_logs_are_read_or_refused_without_blowing_up(text):
    try:
        read_log(text)
    except InvalidInput as e:
        assert e.field == "log"


def test_a_log_read_past_its_deadline_stops_instead_of_answering_from_half_of_it():
    from kvplan.core.errors import WorkStopped

    with pytest.raises(WorkStopped):
        read_log("Available KV cache memory: 1 GiB\n" * 10_000, should_stop=lambda: True)
