"""The lines vLLM prints about its memory, its KV cache capacity and its settings, from 0.4 to
0.33, V0 and V1, at INFO and DEBUG, and the figure each gives (tests/reconcile/data/README.md lists
the vLLM source of each form).

Each entry is (figure name, pattern, unit): the pattern's first group is the value. Every pattern
starts with literal text and has no nested repetition, so a line is read in linear time."""

from __future__ import annotations

import re

N = r"(-?\d[\d,]{0,20}(?:\.\d{1,12})?)"  # a number as vLLM prints it, thousands separated or not
G = N + r" ?(?:GiB|GB)"
_F = r"[\d.]{1,12}"  # a number not kept
_KVM = r"--kv-cache-memory=(\d{1,20})`(?: \([\d.]{1,12} GiB\))?"  # 0.33 adds the GiB
_VERSION = r"v?(\d{1,3}\.\d{1,3}[\w.+-]{0,40})"

_TABLE: tuple[tuple[str, str, str], ...] = (
    # Weights: V0 model_runner.py ("Loading model weights took %.4f GB", 0.4–0.7; "Model loading
    # took %.4f GiB and %.6f seconds", 0.8–0.10), V1 gpu_model_runner.py ("… GiB memory and …").
    ("weights_gib", r"Model loading took:? " + G, "GiB"),
    ("weights_gib", r"Loading model weights took " + G, "GiB"),
    ("weights_gib", r"model weights take " + G, "GiB"),
    ("weights_gib", r"weights memory: " + G, "GiB"),
    ("weights_gib", r"Actual usage is " + G + r" for weight", "GiB"),
    ("weights_gib", r"Actual usage: " + G + r" for weights", "GiB"),  # vllm-ascend's summary
    # Non-torch, activation, CUDA graphs: V0 worker.py (0.6.5–0.10), V1 gpu_worker.py and
    # mem_utils.py's MemoryProfilingResult (DEBUG), the start-up summary (INFO, 0.10 on).
    ("non_torch_gib", r"non_torch_memory takes " + G, "GiB"),
    ("non_torch_gib", r"non_torch_memory " + G, "GiB"),
    ("non_torch_gib", r"non-torch forward increase memory: " + G, "GiB"),
    ("non_torch_gib", r"post_profile=[\d.]{1,12}Gi[Bb] non_torch_memory=" + G, "GiB"),  # 0.6.4's summary
    ("non_torch_gib", r"GiB for peak activation, " + G + r" for non-torch memory", "GiB"),
    ("activation_peak_gib", r"PyTorch activation peak memory takes " + G, "GiB"),
    ("activation_peak_gib", r"PyTorch activation peak memory " + G, "GiB"),
    ("activation_peak_gib", r"torch peak memory increase: " + G, "GiB"),
    ("activation_peak_gib", r"(?:GiB for weights?|non-torch\)), " + G + r" for peak activation", "GiB"),
    ("peak_torch_gib", r"peak_torch_memory=" + G, "GiB"),  # 0.6.4: weights included
    ("initial_memory_usage_gib", r"initial_memory_usage=" + G, "GiB"),
    ("consumed_gib", r"total consumed \(from mem_get_info\): " + G, "GiB"),
    ("consumed_gib", r"Actual usage is " + G + r" for consumed memory", "GiB"),
    ("non_kv_gib", r"Total non KV cache memory: " + G, "GiB"),
    ("cudagraph_gib", r"Graph capturing finished in [\d.]{1,12} secs?, took " + G, "GiB"),
    ("cudagraph_gib", r"CUDA graph pool memory: " + G + r" \(actual\)", "GiB"),
    ("cudagraph_gib", r"(?:and|memory,) " + G + r" (?:for|of) (?:CUDAGraph|NPU graph) memory", "GiB"),
    ("cudagraph_estimate_gib", r"Estimated CUDA graph memory: " + G, "GiB"),
    ("cudagraph_estimate_gib", r"GiB \(actual\), " + G + r" \(estimated\)", "GiB"),
    # The KV cache's memory.
    ("available_kv_gib", r"the rest of the memory reserved for KV Cache is " + G, "GiB"),
    ("available_kv_gib", r"Available KV cache memory(?: in each GPU)?: " + G, "GiB"),
    ("available_kv_gib", r"available_kv_cache_memory " + G, "GiB"),
    ("available_kv_gib", r" kv_cache_size=" + G, "GiB"),
    ("available_kv_gib", r"Current kv cache memory in use is " + G, "GiB"),
    ("available_kv_gib", r"reserved " + G + r" memory for KV Cache", "GiB"),
    ("kv_cache_memory_to_requested_bytes", _KVM + r" to fit into requested", "bytes"),
    ("kv_cache_memory_to_gpu_bytes", _KVM + r" to fully", "bytes"),
    # The GPU's memory and the share asked for.
    ("requested_gib", r"Requested memory: [\d.]{1,12} \(util\), " + G, "GiB"),
    ("requested_gib", r"gpu_memory_utilization \([\d.]{1,12}\) = " + G, "GiB"),
    ("requested_gib", r"the current vLLM instance can use " + G, "GiB"),
    ("requested_gib", r"Desired GPU memory utilization is \([\d.]{1,12}, " + G, "GiB"),
    ("requested_gib", r"worker requested memory: " + G, "GiB"),
    ("gpu_memory_utilization", r"Requested memory: " + N + r" \(util\)", ""),
    ("gpu_memory_utilization", r"gpu_memory_utilization \(" + N + r"\)", ""),
    ("gpu_memory_utilization", r"gpu_memory_utilization[ =]" + N + r"\b", ""),
    ("gpu_memory_utilization", r"Desired GPU memory utilization is \(" + N + r",", ""),
    ("gpu_memory_utilization", r"The current --gpu-memory-utilization=" + N, ""),
    ("gpu_memory_utilization", r"--gpu-memory-utilization from " + N + r" to", ""),
    ("suggested_gpu_memory_utilization", r"--gpu-memory-utilization from [\d.]{1,12} to " + N, ""),
    ("equivalent_gpu_memory_utilization", r"is equivalent to --gpu-memory-utilization=" + N, ""),
    ("suggested_gpu_memory_utilization", r"increase --gpu-memory-utilization to " + N, ""),
    ("gpu_total_gib", r"total_gpu_memory \(" + G, "GiB"),
    ("gpu_total_gib", r"total_gpu_memory[ =]" + G, "GiB"),
    ("gpu_total_gib", r"Free memory on device:? \(?[\d.]{1,12} ?/ ?" + G, "GiB"),
    ("gpu_total_gib", r"has a total capacity of " + G, "GiB"),  # torch's CUDA OOM message
    ("gpu_total_gib", r"\(GPU \d{1,3}; " + G + r" total capacity", "GiB"),  # torch < 2.1's
    ("gpu_free_gib", r"Free memory on device:? \(?" + N + r" ?/", "GiB"),
    ("gpu_free_gib", r"Initial free memory:? " + G, "GiB"),
    ("gpu_free_gib", r"init memory snapshot: torch_peak=[\d.]{1,12}GiB, torch_allocated=[\d.]{1,12}GiB, "
     r"free_memory=" + G, "GiB"),
    ("gpu_total_gib", r", total_memory=" + G, "GiB"),  # mem_utils.py's MemorySnapshot (DEBUG)
    ("free_memory_grew_gib", r"Free memory grew by " + G + r" during profiling", "GiB"),
    ("torch_reserved_gib", r"Sizing the KV cache from the " + G + r" torch reserved", "GiB"),
    ("kv_padding_waste_pct", r"may waste at most " + N + r"% KV cache memory", "%"),
    ("free_after_profile_gib", r"Free memory after profiling: " + G, "GiB"),
    # Capacity: V1 kv_cache_utils.py, V0 gpu_executor.py (0.4–0.6) / executor_base.py (0.7–0.10).
    ("gpu_kv_cache_tokens", r"(?:GPU|host|CPU|XPU|TPU|HPU|NPU) KV cache size: " + N + r" tokens", "tokens"),
    ("max_concurrency", r"Maximum concurrency for [\d,]{1,12} tokens per request: " + N + r"x", "×"),
    ("concurrency_tokens_per_request", r"Maximum concurrency for " + N + r" tokens per request", "tokens"),
    ("num_gpu_blocks", r"(?:# |(?<![\w#] ))(?:GPU|CUDA|cuda|gpu|XPU|NPU) blocks: " + N, "blocks"),
    # V1's stat logger (vllm/v1/metrics/loggers.py): the blocks the engine settled on.
    ("num_gpu_blocks", r"with initialization after num_gpu_blocks is: " + N, "blocks"),
    ("num_cpu_blocks", r"# CPU blocks: " + N, "blocks"),
    ("num_gpu_blocks", r"num_gpu_blocks_override=" + N, "blocks"),
    # Failed start-ups: V0 worker.py raise_if_cache_size_invalid, V1 kv_cache_planning.py (0.33;
    # kv_cache_utils.py before) _check_enough_kv_cache_memory, torch's OOM message.
    ("kv_capacity_tokens", r"number of tokens that can be stored in KV cache \(" + N + r"\)", "tokens"),
    ("kv_needed_gib", G + r" KV cache is needed", "GiB"),
    ("available_kv_gib", r"larger than the available KV cache memory \(" + G + r"\)", "GiB"),
    ("estimated_max_model_len", r"the estimated maximum model length is " + N, "tokens"),
    ("max_model_len", r"with the models?'s max seq len \(" + N + r"\)", "tokens"),
    ("max_model_len", r"The model's max seq len \(" + N + r"\)", "tokens"),
    ("oom_tried_gib", r"Tried to allocate " + G, "GiB"),
    ("oom_tried_mib", r"Tried to allocate " + N + r" MiB", "MiB"),
    # Settings the engine prints.
    ("max_num_batched_tokens", r"max_num_batched_tokens=" + N, "tokens"),
    ("max_model_len", r"Using max model len " + N, "tokens"),
    ("max_model_len", r"max_seq_len=" + N, "tokens"),
    ("block_size", r"block_size=" + N, "tokens"),
    ("tensor_parallel_size", r"tensor_parallel_size=" + N, ""),
    ("pipeline_parallel_size", r"pipeline_parallel_size=" + N, ""),
    ("data_parallel_size", r"data_parallel_size=" + N, ""),
    ("world_size", r"world_size=" + N, ""),
    ("world_size", r" in world size " + N, ""),
    ("version", r"vLLM API server version " + _VERSION, ""),
    ("version", r"vLLM server version " + _VERSION, ""),
    ("version", r"Initializing an? (?:V[01] )?LLM engine \(" + _VERSION + r"\)", ""),
    ("version", r"vLLM:? v?(\d{1,3}\.\d{1,3}\.\d{1,3}[\w.+-]{0,40})", ""),
    # 0.33's logo (entrypoints/common/startup.py); a web page folds its two spaces into one.
    ("version", r"█ {1,2}version " + _VERSION, ""),
    ("engine", r"Initializing an? (V[01]) LLM engine", ""),
    ("model", r"vllm serve ['\"]?(?![-'\"])([^\s'\"│]{1,300})", ""),
    ("model", r"Starting to load model ([^\s│]{1,300}?)\.{3}", ""),
    ("model", r"with config: model='([^']{1,300})'", ""),
    ("model", r"serving model ([^\s│]{1,300})", ""),
    ("model", r"█ {1,2}model {1,4}([^\s│]{1,300})", ""),
    ("served_model_name", r"served_model_name=([^\s,]{1,300}),", ""),
    ("quantization", r" quantization=(\w{1,40}),", ""),
    # The MXFP4 MoE kernel: fused_moe/oracle/mxfp4.py (0.19 on) and quantization/mxfp4.py before,
    # and Marlin's weight-only FP4 warning (quantization/utils/marlin_utils_fp4.py).
    ("moe_backend", r"Using '(\w{1,40})' Mxfp4 MoE backend", ""),
    ("moe_backend", r"\] Using (Marlin|Triton) backend", ""),
    ("moe_backend", r"Using (FlashInfer MXFP4 [A-Z0-9 ]{3,20} backend for SM\d{2,3})", ""),
    ("moe_backend", r"FP4 compression will be used leveraging the (Marlin) kernel", ""),
    ("distributed_executor_backend", r"distributed_executor_backend=['\"]?(\w{1,20})", ""),
    ("kv_cache_dtype", r"kv_cache_dtype=(\w{1,20})", ""),
    ("dtype", r"dtype=torch\.(\w{1,20})", ""),
    ("enforce_eager", r"(?<!['`\"])enforce_eager=(True|False)", ""),
    ("gpu_name", r"(NVIDIA (?:GeForce |Tesla |Quadro )?"
     r"(?:(?:RTX|GTX) (?:PRO )?[A-Z]{0,2}\d{3,4}|[A-Z]{1,3}\d{1,4})[\w-]{0,24}"
     r"(?: (?:\d{1,3} ?GB|HBM3e?|PCIe|SXM\d?|NVL|D|Ti|Ada|Blackwell|Generation|Server|Edition)){0,3})", ""),
)  # fmt: skip

_META = set("\\()[]{}?*+|.^$")


def cue(pattern: str) -> str:
    """The longest run of literal text the pattern requires (outside every group, and not made
    optional by a quantifier): a line without it cannot match, and a substring test is ~50× cheaper
    than a search. '' when the pattern has no such run."""
    runs, run, depth, i = [], "", 0, 0
    while i < len(pattern):
        c = pattern[i]
        literal = None
        if c == "\\" and i + 1 < len(pattern):
            nxt = pattern[i + 1]
            literal = nxt if nxt in _META or nxt in "-/'\" " else None
            i += 2
        else:
            if c == "(":
                depth += 1
            elif c == ")":
                depth -= 1
            elif c not in _META:
                literal = c
            i += 1
        if literal is not None and depth == 0:
            if i < len(pattern) and pattern[i] in "?*{":
                literal = None  # optional: the run ends before it
            else:
                run += literal
                continue
        runs.append(run)
        run = ""
    runs.append(run)
    return max(runs, key=len)


# (name, compiled pattern, unit, cue): those that read a figure in GiB, tried only on a line that
# says GiB or GB, and the others.
Pattern = tuple[str, re.Pattern[str], str, str]
MEMORY_PATTERNS: tuple[Pattern, ...] = tuple(
    (name, re.compile(pattern), unit, cue(pattern)) for name, pattern, unit in _TABLE if G in pattern
)
OTHER_PATTERNS: tuple[Pattern, ...] = tuple(
    (name, re.compile(pattern), unit, cue(pattern)) for name, pattern, unit in _TABLE if G not in pattern
)
TEXT_FIGURES = frozenset(
    {"version", "model", "kv_cache_dtype", "dtype", "engine", "served_model_name", "quantization",
     "distributed_executor_backend", "gpu_name", "moe_backend"}
)  # fmt: skip
BOOL_FIGURES = frozenset({"enforce_eager", "enable_prefix_caching"})
INT_FIGURES = frozenset(
    {"gpu_kv_cache_tokens", "num_gpu_blocks", "num_cpu_blocks", "concurrency_tokens_per_request",
     "max_num_batched_tokens", "max_model_len", "block_size", "tensor_parallel_size",
     "pipeline_parallel_size", "data_parallel_size", "max_num_seqs", "world_size",
     "kv_capacity_tokens", "estimated_max_model_len", "kv_cache_memory_to_requested_bytes",
     "kv_cache_memory_to_gpu_bytes"}
)  # fmt: skip
# Cheap first test: a line without any of these says nothing kvplan reads.
INTERESTING = re.compile(
    r"GiB|GB|blocks|concurrency|KV cache|non-default args|LLM engine|vllm serve|version|"
    r"max_num_batched_tokens|max model len|--[a-z]|vLLM|world|"
    r"failed to start|initialization failed|hit an exception|out of memory|OutOfMemory|max seq len|NVIDIA|"
    r"load model|serving model|█|api_server|backend|Marlin kernel"
)
# vLLM's own log prefix (vllm/logger.py): `INFO 11-30 12:00:01 [gpu_worker.py:298] ` (file and line
# in brackets from 0.8, bare `file.py:298]` before). A line that has it is vLLM's even when it
# states no figure.
VLLM_PREFIX = re.compile(
    r"(?:DEBUG|INFO|WARNING|ERROR|CRITICAL) \d\d-\d\d \d\d:\d\d:\d\d(?:\.\d{1,6})? "
    r"\[?[\w/.-]{1,120}\.py:\d{1,6}\]"
)


def number(text: str, name: str) -> tuple[float | int, int] | None:
    """A printed number and its decimals; None when it is not one (`10k`)."""
    plain = text.replace(",", "")
    try:
        if name in INT_FIGURES:
            return int(plain), 0
        value = float(plain)
    except ValueError:
        return None
    return value, len(plain.partition(".")[2])
