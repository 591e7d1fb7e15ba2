"""Each start-up log of tests/reconcile/data, written line for line in the formats vLLM's source
prints (data/README.md names the source of each), read as pasted: the figures it states, what it
implies (each inference with how), and whether the engine failed to start."""

from __future__ import annotations

from pathlib import Path

import pytest

from kvplan.core.logs import failure as kinds
from kvplan.core.logs.enginelog import read_log

DATA = Path(__file__).parent / "data"

# fixture: (figures as the first rank prints them, inferences by name, the failure's kind)
EXPECTED: dict[str, tuple[dict[str, object], dict[str, object], str | None]] = {
    "v0-0.4.2-gpu-blocks.log": (
        {
            "version": "0.4.2",
            "weights_gib": 13.4966,
            "num_gpu_blocks": 27153,
            "num_cpu_blocks": 2048,
            "max_model_len": 32768,
        },
        {"engine": "V0", "tensor_parallel_size": 1, "model": "mistralai/Mistral-7B-Instruct-v0.2"},
        None,
    ),
    "v0-0.6.3-tp4-ray.log": (
        {
            "version": "0.6.3",
            "weights_gib": 32.8894,
            "num_gpu_blocks": 28753,
            "distributed_executor_backend": "ray",
        },
        {
            "engine": "V0",
            "tensor_parallel_size": 4,
            "pipeline_parallel_size": 1,
            "model": "meta-llama/Llama-3.1-70B-Instruct",
        },
        None,
    ),
    "v0-0.6.4-profile-results.log": (
        {
            "gpu_total_gib": 139.8,
            "peak_torch_gib": 2.38,
            "non_torch_gib": 0.73,
            "available_kv_gib": 122.71,
            "gpu_memory_utilization": 0.9,
            "num_gpu_blocks": 365549,
            "max_concurrency": 2855.85,
            "cudagraph_gib": 0.24,
        },
        {"engine": "V0", "gpu_memory_bytes": round(139.8 * 2**30)},
        None,
    ),
    "v0-0.7.3-vllmworkerprocess-tp2.log": (
        {
            "requested_gib": 71.24,
            "weights_gib": 7.5122,
            "available_kv_gib": 62.04,
            "num_gpu_blocks": 63528,
            "max_concurrency": 124.08,
        },
        {"engine": "V0", "tensor_parallel_size": 2, "model": "meta-llama/Llama-3.1-8B-Instruct"},
        None,
    ),
    "v0-0.8.5-cuda-blocks.log": (
        {
            "version": "0.8.5",
            "engine": "V0",
            "weights_gib": 14.2487,
            "available_kv_gib": 26.92,
            "num_gpu_blocks": 31504,
            "num_cpu_blocks": 4681,
            "max_concurrency": 15.38,
        },
        {"engine": "V0", "gpu_memory_bytes": round(47.54 * 2**30)},
        None,
    ),
    "v0-0.6.3-failed-max-len.log": (
        {"kv_capacity_tokens": 98304, "max_model_len": 131072, "num_gpu_blocks": 6144},
        {"engine": "V0", "model": "/models/Meta-Llama-3.1-8B-Instruct"},
        kinds.MAX_LEN_OVER_KV_TOKENS,
    ),
    "v1-0.8.4-vllmworker-ranks.log": (
        {"world_size": 2, "weights_gib": 25.9462, "available_kv_gib": 10.86, "gpu_kv_cache_tokens": 37968},
        {"engine": "V1", "tensor_parallel_size": 2, "model": "google/gemma-3-27b-it"},
        None,
    ),
    "v1-0.10.1-debug-summary.log": (
        {
            "gpu_free_gib": 43.91,
            "gpu_total_gib": 44.4,
            "requested_gib": 39.96,
            "weights_gib": 24.38,
            "activation_peak_gib": 1.44,
            "non_torch_gib": 0.06,
            "cudagraph_gib": 0.0,
            "available_kv_gib": 14.08,
            "kv_cache_memory_to_requested_bytes": 14960998481,
            "kv_cache_memory_to_gpu_bytes": 19202278686,
            "free_after_profile_gib": 42.41,
            "gpu_kv_cache_tokens": 92272,
        },
        {"engine": "V1", "gpu_memory_bytes": round(44.4 * 2**30)},
        None,
    ),
    "v1-0.19-info-summary.log": (
        {
            "weights_gib": 14.99,
            "available_kv_gib": 58.11,
            "cudagraph_gib": 0.91,
            "cudagraph_estimate_gib": 0.84,
            "activation_peak_gib": 1.89,
            "non_torch_gib": 0.25,
            "requested_gib": 75.23,
            "gpu_total_gib": 79.19,
            "gpu_kv_cache_tokens": 476032,
        },
        {"engine": "V1"},
        None,
    ),
    "v1-0.19-tp4-ranks-only.log": (
        {"world_size": 4, "available_kv_gib": 67.34, "gpu_kv_cache_tokens": 5043648},
        {"engine": "V1", "tensor_parallel_size": 4, "gpu_memory_bytes": round(75.23 / 0.95 * 2**30)},
        None,
    ),
    "v1-0.19-tp-ranks-no-world-size.log": (
        {"weights_gib": 18.55, "gpu_kv_cache_tokens": 132128},
        {"engine": "V1", "tensor_parallel_size": 2, "model": "TechxGenus/Meta-Llama-3-70B-Instruct-AWQ"},
        None,
    ),
    "v1-0.33-failed-negative-kv.log": (
        {"available_kv_gib": -2.14, "weights_gib": 67.72, "version": "0.33.0"},
        {"engine": "V1", "tensor_parallel_size": 1, "model": "meta-llama/Llama-3.3-70B-Instruct"},
        kinds.NEGATIVE_KV_MEMORY,
    ),
    "v1-0.33-failed-kv-needed.log": (
        {
            "kv_needed_gib": 5.62,
            "available_kv_gib": 4.5,
            "max_model_len": 40960,
            "estimated_max_model_len": 32768,
        },
        {"engine": "V1", "model": "Qwen/Qwen3-8B"},
        kinds.KV_NEEDED_OVER_AVAILABLE,
    ),
    "v1-0.10-failed-models-max-seq-len.log": (
        {"kv_needed_gib": 5.62, "max_model_len": 40960, "estimated_max_model_len": 32768},
        {"engine": "V1"},
        kinds.KV_NEEDED_OVER_AVAILABLE,
    ),
    "v1-0.10.1-gpt-oss-marlin.log": (
        {
            "version": "0.10.1",
            "model": "openai/gpt-oss-120b",
            "max_model_len": 131072,
            "max_num_batched_tokens": 8192,
            "moe_backend": "Marlin",
            "weights_gib": 65.9651,
        },
        {"engine": "V1"},
        None,
    ),
    "v1-0.11-failed-cuda-oom.log": (
        {"oom_tried_gib": 3.5, "gpu_total_gib": 31.36, "weights_gib": 27.5185},
        {"engine": "V1", "gpu_memory_bytes": round(31.36 * 2**30), "model": "Qwen/Qwen3-14B"},
        kinds.CUDA_OUT_OF_MEMORY,
    ),
    "v1-0.33-one-line-capacity.log": (
        {
            "version": "0.33.0",
            "gpu_kv_cache_tokens": 476032,
            "max_concurrency": 58.11,
            "consumed_gib": 15.24,
            "activation_peak_gib": 1.89,
            "cudagraph_gib": 0.91,
            "available_kv_gib": 58.11,
            "gpu_memory_utilization": 0.95,
            "equivalent_gpu_memory_utilization": 0.9394,
            "suggested_gpu_memory_utilization": 0.9606,
            "kv_cache_memory_to_requested_bytes": 61181520281,
        },
        {"engine": "V1", "model": "meta-llama/Llama-3.1-8B-Instruct"},
        None,
    ),
    "local-path-awq.log": (
        {"quantization": "awq_marlin", "served_model_name": "qwen-32b", "available_kv_gib": 11.62},
        {"engine": "V1", "tensor_parallel_size": 2, "model": "/data/models/Qwen2.5-32B-Instruct-AWQ"},
        None,
    ),
    "docker-compose-prefix.log": (
        {
            "version": "0.9.0",
            "model": "Qwen/Qwen3-8B",
            "max_model_len": 16384,
            "available_kv_gib": 3.53,
            "gpu_kv_cache_tokens": 25696,
            "max_concurrency": 1.57,
        },
        {"engine": "V1", "model": "Qwen/Qwen3-8B"},
        None,
    ),
    "k9s-box.log": (
        {
            "weights_gib": 1.1201,
            "available_kv_gib": 2.14,
            "gpu_kv_cache_tokens": 20032,
            "max_concurrency": 9.78,
        },
        {"engine": "V1", "model": "Qwen/Qwen3-0.6B"},
        None,
    ),
    "kubectl-prefix-ray.log": (
        {"version": "0.10.0", "available_kv_gib": 31.44, "gpu_kv_cache_tokens": 412080},
        {"engine": "V1", "tensor_parallel_size": 4},
        None,
    ),
    "truncated-args.log": (
        {
            "model": "Qwen/Qwen3-32B",
            "max_model_len": 16384,
            "tensor_parallel_size": 2,
            "gpu_memory_utilization": 0.88,
            "kv_cache_dtype": "fp8",
            "enable_prefix_caching": True,
        },
        {"tensor_parallel_size": 2, "model": "Qwen/Qwen3-32B"},
        None,
    ),
    "quoted-flags.log": (
        {
            "model": "/models/Meta-Llama-3.1-8B-Instruct/",
            "max_model_len": 8192,
            "gpu_memory_utilization": 0.85,
            "enforce_eager": True,
        },
        {"engine": "V1", "model": "/models/Meta-Llama-3.1-8B-Instruct/"},
        None,
    ),
    "two-space-flags.log": (
        {
            "model": "/mnt/models/Mistral-7B-Instruct-v0.3",
            "tensor_parallel_size": 2,
            "gpu_kv_cache_tokens": 587856,
        },
        {"engine": "V1", "tensor_parallel_size": 2, "model": "/mnt/models/Mistral-7B-Instruct-v0.3"},
        None,
    ),
    "single-quoted-argv.log": (
        {
            "model": "ibm-granite/granite-3.3-8b-instruct",
            "max_model_len": 8192,
            "gpu_memory_utilization": 0.95,
        },
        {"engine": "V1", "model": "ibm-granite/granite-3.3-8b-instruct"},
        None,
    ),
    "iso-timestamps-indented.log": (
        {
            "version": "0.7.3",
            "weights_gib": 27.3852,
            "available_kv_gib": 41.84,
            "num_gpu_blocks": 13710,
            "max_concurrency": 13.39,
        },
        {"engine": "V0", "tensor_parallel_size": 1, "model": "microsoft/phi-4"},
        None,
    ),
    "nested-parens-engine-line.log": (
        {"version": "0.12.0", "tensor_parallel_size": 2, "kv_cache_dtype": "fp8", "max_model_len": 32768},
        {"engine": "V1", "tensor_parallel_size": 2, "model": "meta-llama/Llama-3.1-8B-Instruct"},
        None,
    ),
    "v1-pp2-tp2-worker-tags.log": (
        {"weights_gib": 3.75, "gpu_kv_cache_tokens": 2228864},
        {"engine": "V1", "pipeline_parallel_size": 2, "tensor_parallel_size": 2},
        None,
    ),
    "v1-dp2-enginecore.log": (
        {"version": "0.11.0", "available_kv_gib": 53.62},
        {"engine": "V1", "data_parallel_size": 2},
        None,
    ),
    "engine-0.33-tp2.log": (
        {"version": "0.33.0", "available_kv_gib": 1.29},
        {"engine": "V1", "tensor_parallel_size": 2, "model": "meta-llama/Llama-3.1-70B-Instruct"},
        None,
    ),
    "v0-0.6.3-llama-3-8b.log": (
        {"version": "0.6.3", "num_gpu_blocks": 27873, "available_kv_gib": 54.44, "max_concurrency": 54.44},
        {"engine": "V0", "tensor_parallel_size": 1, "model": "meta-llama/Meta-Llama-3-8B"},
        None,
    ),
}


def test_there_are_at_least_20_fixtures_and_each_is_expected():
    logs = {p.name for p in DATA.glob("*.log")}
    assert len(logs) >= 20
    assert logs == set(EXPECTED)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_each_fixture_reads_as_pasted_to_its_figures_inferences_and_failure(name):
    figures, inferred, failure = EXPECTED[name]
    log = read_log((DATA / name).read_text())
    assert {k: log.value(k) for k in figures} == figures
    got = {i.name: i.value for i in log.inferred}
    assert {k: got.get(k) for k in inferred} == inferred
    assert (log.failure.kind if log.failure else None) == failure
    for i in log.inferred:
        assert i.how and 1 <= i.line <= log.lines, i


def test_a_count_of_tp_ranks_is_said_to_be_a_lower_bound():
    log = read_log((DATA / "v1-0.19-tp-ranks-no-world-size.log").read_text())
    tp = log.inference("tensor_parallel_size")
    assert tp is not None and tp.value == 2 and "lower bound" in tp.how


def test_a_printed_tensor_parallel_size_beats_a_count_of_ray_workers():
    log = read_log((DATA / "v0-0.6.3-tp4-ray.log").read_text())
    tp = log.inference("tensor_parallel_size")
    assert tp is not None and tp.value == 4 and tp.how.startswith("printed on the engine-config line")


def test_world_size_beats_a_count_of_ranks():
    log = read_log((DATA / "v1-0.19-tp4-ranks-only.log").read_text())
    tp = log.inference("tensor_parallel_size")
    assert tp is not None and "world_size=4" in tp.how


def test_a_v1_ray_engine_counts_its_actors_without_a_driver_worker():
    log = read_log((DATA / "kubectl-prefix-ray.log").read_text())
    tp = log.inference("tensor_parallel_size")
    assert tp is not None and tp.value == 4 and "driver" not in tp.how


def test_a_local_path_is_kept_and_its_last_component_named():
    log = read_log((DATA / "local-path-awq.log").read_text())
    model = log.inference("model")
    assert model is not None and model.how.endswith("'Qwen2.5-32B-Instruct-AWQ' names the model")


def test_the_engine_kind_names_the_release_its_source_lines_belong_to():
    engine = read_log((DATA / "v1-0.19-info-summary.log").read_text()).inference("engine")
    assert engine is not None and "gpu_worker.py:436 is where vLLM 0.19.0 prints it" in engine.how


def test_a_negative_kv_memory_is_the_failure_though_engine_core_failed_to_start_is_printed_too():
    log = read_log((DATA / "v1-0.33-failed-negative-kv.log").read_text())
    assert log.failure is not None and log.failure.line == 6 and "-2.14 GiB" in log.failure.detail


def test_the_v0_failure_keeps_the_token_capacity_it_printed():
    log = read_log((DATA / "v0-0.6.3-failed-max-len.log").read_text())
    assert log.failure is not None and "98304 tokens" in log.failure.detail


def test_a_start_up_that_failed_says_so_only_when_it_did():
    failed = {n for n, (_, _, f) in EXPECTED.items() if f is not None}
    assert len(failed) == 5
    assert {read_log((DATA / n).read_text()).failure is None for n in set(EXPECTED) - failed} == {True}


def test_the_k9s_box_and_its_frame_are_not_read_as_figures():
    log = read_log((DATA / "k9s-box.log").read_text())
    assert all("│" not in f.text and "┌" not in f.text for f in log.figures)


def test_v1s_world_size_counts_data_parallel_ranks_too():
    log = read_log(
        "(EngineCore_DP1 pid=2) (Worker_DP1_TP1 pid=9) INFO 10-02 13:30:12 [parallel_state.py:1411] "
        "rank 5 in "
        "world size 8 is assigned as DP rank 1, PP rank 0, PCP rank 0, TP rank 1, EP rank 5"
    )
    got = {i.name: i.value for i in log.inferred}
    assert (got["data_parallel_size"], got["tensor_parallel_size"]) == (2, 4)


def test_an_out_of_memory_in_mib_is_a_failure_with_its_size():
    log = read_log(
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 20.00 MiB. GPU 0 has a total capacity "
        "of 14.74 GiB of which 6.12 MiB is free."
    )
    assert log.failure is not None and log.failure.kind == kinds.CUDA_OUT_OF_MEMORY
    assert "20.00 MiB" in log.failure.detail and log.value("oom_tried_mib") == 20.0
    assert log.value("gpu_total_gib") == 14.74
