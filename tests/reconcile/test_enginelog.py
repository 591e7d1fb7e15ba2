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


@pytest.mark.parametrize("entry", LOGS, ids=[r["id"] for r in LOGS])
@pytest.mark.parametrize("joined", [True, False], ids=["as pasted", "one excerpt a line"])
def test_every_quote_of_the_training_file_reads_without_raising(entry, joined):
    quote = entry["source"]["quote"]
    log = read_log(quote if joined else as_log(quote))
    assert log.figures


ISSUE_DEBUG_SUMMARY = (
    "DEBUG 08-20 09:03:09 [v1/worker/gpu_worker.py:484] "
    "Free memory on device (43.91/44.4 GiB) on startup. "
    "Desired GPU memory utilization is (0.9, 39.96 GiB). Actual usage is 24.38 GiB for weight, 1.44 GiB for "
    "peak activation, 0.06 GiB for non-torch memory, and 0.0 GiB for CUDAGraph memory. Replace "
    "gpu_memory_utilization config with `--kv-cache-memory=14960998481` to fit into requested memory, or "
    "`--kv-cache-memory=19202278686` to fully utilize gpu memory. "
    "Current kv cache memory in use is 24.38 GiB."
)


def test_the_debug_summary_of_the_issue_is_read_figure_by_figure():
    log = read_log(ISSUE_DEBUG_SUMMARY)
    assert {
        n: log.value(n)
        for n in (
            "gpu_free_gib",
            "gpu_total_gib",
            "gpu_memory_utilization",
            "requested_gib",
            "weights_gib",
            "activation_peak_gib",
            "non_torch_gib",
            "cudagraph_gib",
            "available_kv_gib",
            "kv_cache_memory_to_requested_bytes",
            "kv_cache_memory_to_gpu_bytes",
        )
    } == {
        "gpu_free_gib": 43.91,
        "gpu_total_gib": 44.4,
        "gpu_memory_utilization": 0.9,
        "requested_gib": 39.96,
        "weights_gib": 24.38,
        "activation_peak_gib": 1.44,
        "non_torch_gib": 0.06,
        "cudagraph_gib": 0.0,
        "available_kv_gib": 24.38,
        "kv_cache_memory_to_requested_bytes": 14960998481,
        "kv_cache_memory_to_gpu_bytes": 19202278686,
    }
    assert log.first("gpu_total_gib").decimals == 1  # type: ignore[union-attr]  # 44.4: ±0.05 GiB


def test_vllm_033s_summary_reads_consumed_memory_and_the_suggested_sizes_in_gib():
    log = read_log(
        "INFO 11-30 09:00:52 [v1/worker/gpu_worker.py:1066] "
        "Free memory on device (78.68/79.19 GiB) on startup. "
        "Desired GPU memory utilization is (0.95, 75.23 GiB). Actual usage is 15.24 GiB for consumed memory "
        "(weights + non-torch), 1.89 GiB for peak activation, and 0.91 GiB for CUDAGraph memory. Replace "
        "gpu_memory_utilization config with `--kv-cache-memory=61181520281` (56.98 GiB) to fit into "
        "requested memory, or `--kv-cache-memory=64832770457` (60.38 GiB) to fully utilize gpu memory. "
        "Current kv cache "
        "memory in use is 58.11 GiB."
    )
    assert (log.value("consumed_gib"), log.value("activation_peak_gib"), log.value("cudagraph_gib")) == (
        15.24,
        1.89,
        0.91,
    )
    assert log.value("kv_cache_memory_to_gpu_bytes") == 64832770457 and log.value("weights_gib") is None


def test_v0s_block_line_gives_gpu_and_cpu_blocks():
    log = read_log("INFO 03-01 08:00:53 executor_base.py:110] # CUDA blocks: 36184, # CPU blocks: 2340")
    assert (log.value("num_gpu_blocks"), log.value("num_cpu_blocks")) == (36184, 2340)
    assert log.inference("engine") == log.inferred[0] and log.inferred[0].value == "V0"


@pytest.mark.parametrize(
    "line",
    [
        'vllm serve --model="/data/models/Qwen2.5-32B-Instruct-AWQ/" --tensor-parallel-size 2 --enable-lora',
        "vllm serve --model  /data/models/Qwen2.5-32B-Instruct-AWQ/ --tensor-parallel-size 2 --swap-space 4",
        "'vllm' 'serve' '--model' '/data/models/Qwen2.5-32B-Instruct-AWQ/' '--tensor-parallel-size' '2'",
        "args: --model='/data/models/Qwen2.5-32B-Instruct-AWQ/' --tensor-parallel-size=2",
    ],
    ids=["double-quoted", "two spaces", "single-quoted argv", "single-quoted value"],
)
def test_a_flag_quoted_or_spaced_as_people_write_it_gives_its_bare_value(line):
    log = read_log(line)
    assert log.value("model") == "/data/models/Qwen2.5-32B-Instruct-AWQ/"
    assert log.value("tensor_parallel_size") == 2


def test_a_log_of_a_thousand_argument_lines_spends_the_logs_budget_not_a_budget_a_line(monkeypatch):
    """Each line a dict cut short tried at 64 closing braces, each a 15 KB `vllm serve`: read a line
    at a time, 1,000 of them cost seconds; the log has one budget of parses."""
    from kvplan.core.limits import MAX_LOG_ARGS_TRIES, MAX_LOG_COMMANDS
    from kvplan.core.logs import arguments

    calls = {"eval": 0, "command": 0}
    literal_eval, read_command = arguments.ast.literal_eval, arguments.read_command

    def counted_eval(text):
        calls["eval"] += 1
        return literal_eval(text)

    def counted_command(*args):
        calls["command"] += 1
        return read_command(*args)

    monkeypatch.setattr(arguments.ast, "literal_eval", counted_eval)
    monkeypatch.setattr(arguments, "read_command", counted_command)
    dicts = "INFO non-default args: {'max_model_len': [" + "1," * 200 + "}" * 64 + "\n"
    commands = "vllm serve meta-llama/Llama-3.1-8B " + "--max-num-seqs 8 " * 900 + "\n"
    log = read_log(dicts * 1000 + commands * 1000 + "INFO non-default args: {'max_model_len': 8192}\n")
    assert calls["command"] <= MAX_LOG_COMMANDS
    assert calls["eval"] <= MAX_LOG_ARGS_TRIES + MAX_LOG_COMMANDS  # the command reader evaluates a dict once
    assert log.value("max_model_len") == 8192  # read by the tolerant reader once the budget is spent


def test_a_non_default_args_dict_cut_short_gives_the_keys_that_are_whole():
    log = read_log(
        "INFO 09-12 16:40:02 [utils.py:328] non-default args: {'model': 'Qwen/Qwen3-32B', "
        "'max_model_len': 16384, 'tensor_parallel_size': 2, 'gpu_memory_utilization': 0.8"
    )
    assert (log.value("model"), log.value("max_model_len"), log.value("tensor_parallel_size")) == (
        "Qwen/Qwen3-32B",
        16384,
        2,
    )
    assert log.value("gpu_memory_utilization") is None  # cut: 0.8 may have been 0.85


@pytest.mark.parametrize(
    "prefix",
    [
        "vllm-1  | ",
        "│ ",
        "[pod/vllm-0/vllm] ",
        "2025-03-02T10:00:00.104Z ",
        "2025-03-02 10:00:00,104 ",
        "    ",
        "\x1b[36mvllm-openai-1  |\x1b[0m ",
    ],
    ids=["docker-compose", "box", "kubectl", "iso", "iso-comma", "indent", "coloured compose"],
)
def test_what_a_paste_puts_before_a_line_is_taken_off(prefix):
    log = read_log(prefix + "vllm serve Qwen/Qwen3-8B --max-model-len 4096" + (" │" if "│" in prefix else ""))
    assert log.command is not None and log.value("model") == "Qwen/Qwen3-8B"
    assert log.value("max_model_len") == 4096


def test_a_ray_workers_tag_is_its_rank_and_a_driver_line_has_none():
    log = read_log(
        "(RayWorkerWrapper pid=2213, ip=10.0.3.17) INFO 10-20 09:16:41 model_runner.py:1067] Loading model "
        "weights took 32.8894 GB\n"
        "INFO 10-20 09:16:40 model_runner.py:1067] Loading model weights took 32.8894 GB"
    )
    assert [f.rank for f in log.figures if f.name == "weights_gib"] == ["RayWorkerWrapper", ""]
    tp = log.inference("tensor_parallel_size")
    assert tp is not None and tp.value == 2 and "lower bound" in tp.how


def test_a_vllm_line_without_a_figure_still_makes_the_log_vllms():
    log = read_log("INFO 05-10 12:00:03 selector.py:28] Using FlashAttention backend.")
    assert (log.figures, log.vllm_lines) == ((), 1)


def test_a_gpu_named_in_the_log_is_inferred_as_printed():
    log = read_log("Unsloth: vLLM: 0.8.2. NVIDIA A100-SXM4-80GB. Max memory: 79.151 GB")
    gpu = log.inference("gpu")
    assert gpu is not None and gpu.value == "NVIDIA A100-SXM4-80GB"


MORE_HOSTILE = {
    "many flags": "vllm serve x " + "--model 'a' " * 20_000,
    "many pairs": "non-default args: {" + "'model': 'x', " * 20_000,
    "many rank tags": "\n".join(
        f"(Worker_TP{i} pid={i}) INFO 01-01 00:00:00 [x.py:1] hi" for i in range(20_000)
    ),
    "a long box": "│" + " " * 100_000 + "│",
    "many ISO prefixes": "2025-03-02T10:00:00Z " * 20_000 + "Available KV cache memory: 1 GiB",
}


@pytest.mark.parametrize("text", MORE_HOSTILE.values(), ids=MORE_HOSTILE.keys())
def test_hostile_pastes_of_the_new_forms_are_read_quickly(text):
    import time

    start = time.perf_counter()
    try:
        read_log(text)
    except InvalidInput as e:
        assert e.field == "log"
    assert time.perf_counter() - start < 2.0


@pytest.mark.parametrize(
    ("line", "figures"),
    [
        (
            "(EngineCore pid=1) DEBUG 11-30 09:00:10 [v1/worker/gpu_worker.py:545] "
            "worker init memory snapshot: "
            "torch_peak=0.0GiB, torch_allocated=0.0GiB, free_memory=78.68GiB, total_memory=79.19GiB, "
            "cuda_memory=0.51GiB, torch_memory=0.0GiB, non_torch_memory=0.51GiB, "
            "timestamp=1.0, auto_measure=True",
            {"gpu_free_gib": 78.68, "gpu_total_gib": 79.19, "non_torch_gib": None},
        ),
        (
            "WARNING 11-30 09:00:48 [v1/worker/gpu_worker.py:146] "
            "Free memory grew by 0.12 GiB during profiling "
            "(initial 78.68 GiB, current 78.8 GiB). "
            "Sizing the KV cache from the 1.89 GiB torch reserved instead "
            "of the profiling difference.",
            {"free_memory_grew_gib": 0.12, "torch_reserved_gib": 1.89},
        ),
        (
            "INFO 11-06 10:51:48 [kv_cache_utils.py:979] "
            "Add 1 padding layers, may waste at most 5.00% KV cache memory",
            {"kv_padding_waste_pct": 5.0},
        ),
        (
            "WARNING 11-30 09:00:48 [gpu_worker.py:804] CUDA graph memory profiling is disabled "
            "(VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS=0). "
            "Without it, CUDA graph memory is not accounted for "
            "during KV cache allocation, which may require lowering --gpu-memory-utilization "
            "to avoid OOM. Consider "
            "re-enabling it (the default as of v0.21.0) and increasing "
            "--gpu-memory-utilization from 0.9000 to 0.9106.",
            {"gpu_memory_utilization": 0.9, "suggested_gpu_memory_utilization": 0.9106},
        ),
        (
            "INFO 11-30 09:00:20 [v1/worker/gpu_worker.py:676] "
            "Initial free memory 78.68 GiB, reserved 40.00 GiB "
            "memory for KV Cache as specified by kv_cache_memory_bytes config and skipped memory profiling.",
            {"available_kv_gib": 40.0},
        ),
    ],
    ids=[
        "init snapshot",
        "free memory grew",
        "padding layers",
        "cuda graph profiling disabled",
        "kv_cache_memory",
    ],
)
def test_vllm_033s_other_memory_lines_give_their_figures(line, figures):
    log = read_log(line)
    assert {k: log.value(k) for k in figures} == figures
