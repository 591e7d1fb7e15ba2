"""The data of flags.py: every option `vllm serve` accepts in vLLM 0.33.0, one row each, as vLLM
defines it (vllm/engine/arg_utils.py EngineArgs.add_cli_args, vllm/entrypoints/common/cli_args.py
make_arg_parser and FrontendArgs) and as kvplan treats it. A row names its short aliases; flags.py
adds the option strings vLLM derives for a bool (--no-x, and --disable-x for --enable-x).

tests/autoscale/data/vllm-0.33.0-flag-types.txt, made from vLLM's source, is what the kinds,
defaults, choices and sources here must equal (tests/core/test_flags.py)."""

from __future__ import annotations

from typing import Literal

import msgspec

# How vLLM parses the value (vllm/engine/arg_utils.py _compute_kwargs over the field's type):
# int; human_int (human_readable_int: 32k, 32K); human_int_or_auto (the same, or auto / -1);
# float; str; json (json.loads, or a config dataclass's JSON); str_or_json (a JSON object, else
# the text); str_or_true (a value, or bare for True); bool (BooleanOptionalAction: --x, --no-x);
# switch (store_true: no value, no --no- form); choice (one of `choices`); list (nargs="+": the
# values up to the next option); append (one value, the option repeated for more).
Kind = Literal[
    "int", "human_int", "human_int_or_auto", "float", "str", "json", "str_or_json", "str_or_true", "bool",
    "switch", "choice", "list", "append",
]  # fmt: skip
# plan: kvplan models it (`field` names the BudgetRequest field or label it sets); memory: it
# changes what vLLM allocates or plans and kvplan does not model it yet (`reason` says what, and
# the vLLM file where); none: it changes no memory (host, port, logging, tokenizer, templates, …).
Effect = Literal["plan", "memory", "none"]
Default = int | float | str | bool | tuple[str, ...] | None


class Flag(msgspec.Struct, frozen=True, gc=False, kw_only=True):
    """One option of `vllm serve`: its other option strings, whether and how it takes a value,
    vLLM's default (None where vLLM computes it; a JSON kind's as JSON text), its choices
    (`open_choices`: the type is `Literal | str`, so the listed ones are the built-in values and a
    plugin may add more; the config checks them after parsing), what it does to the plan, and the
    vLLM file that defines it."""

    aliases: tuple[str, ...] = ()
    takes_value: bool
    kind: Kind
    default: Default = None
    effect: Effect
    field: str = ""
    reason: str = ""
    source: str
    choices: tuple[str, ...] = ()
    open_choices: bool = False


def _flag(kind: Kind, default: Default, source: str, aliases: tuple[str, ...], **kw: object) -> Flag:
    """A row as a Flag, checked against the struct's types (a misspelt kind fails at import)."""
    given = {"aliases": aliases, "kind": kind, "default": default, "source": source, **kw}
    return msgspec.convert(given | {"takes_value": kind not in ("bool", "switch")}, Flag)


def plan(field: str, kind: Kind, default: Default, source: str, *aliases: str, **kw: object) -> Flag:
    """A flag kvplan models: it sets the request field (or label) `field`."""
    return _flag(kind, default, source, aliases, effect="plan", field=field, **kw)


def memory(kind: Kind, default: Default, source: str, *aliases: str, reason: str, **kw: object) -> Flag:
    """A flag that changes vLLM's memory or plan in a way kvplan does not model yet: `reason` says
    what it changes, and the vLLM file where."""
    return _flag(kind, default, source, aliases, effect="memory", reason=reason, **kw)


def none(kind: Kind, default: Default, source: str, *aliases: str, **kw: object) -> Flag:
    """A flag that changes no memory."""
    return _flag(kind, default, source, aliases, effect="none", **kw)


def _c(text: str) -> tuple[str, ...]:
    return tuple(text.split())


MODEL = "vllm/config/model.py"
LOAD = "vllm/config/load.py"
ATTENTION = "vllm/config/attention.py"
MAMBA = "vllm/config/mamba.py"
STRUCTURED_OUTPUTS = "vllm/config/structured_outputs.py"
PARALLEL = "vllm/config/parallel.py"
CACHE = "vllm/config/cache.py"
OFFLOAD = "vllm/config/offload.py"
MULTIMODAL = "vllm/config/multimodal.py"
LORA = "vllm/config/lora.py"
VLLM = "vllm/config/vllm.py"
OBSERVABILITY = "vllm/config/observability.py"
SCHEDULER = "vllm/config/scheduler.py"
COMPILATION = "vllm/config/compilation.py"
KERNEL = "vllm/config/kernel.py"
SPECULATIVE = "vllm/config/speculative.py"
AUX_OUTPUT = "vllm/config/aux_output.py"
ARG_UTILS = "vllm/engine/arg_utils.py"
CLI_ARGS = "vllm/entrypoints/common/cli_args.py"
SERVE = "vllm/entrypoints/cli/serve.py"  # argparse's -h/--help on the serve subparser

# Choices too long for their row, as vLLM sorts them (a Literal's values, sorted).
_TOKENIZER_MODE = _c("alpamayo2_super auto cohere deepseek_v32 deepseek_v4 hf inkling kimi_k3 mistral")
_QUANTIZATION = _c(
    "auto_awq auto_gptq awq awq_marlin compressed-tensors deepseek_v4_fp8 experts_int8 fbgemm_fp8 fp8"
    " fp8_per_block fp8_per_channel fp8_per_tensor fp_quant gpt_oss_mxfp4 gptq gptq_marlin humming"
    " inc int8_per_channel_weight_only modelopt modelopt_fp4 modelopt_mixed modelopt_mxfp8 moe_wna16"
    " mxfp4 mxfp8 nvfp4_per_token online quark torchao"
)
_LOGPROBS_MODE = _c("processed_logits processed_logprobs raw_logits raw_logprobs")
_LOAD_FORMAT = _c(
    "auto dummy fastsafetensors hf instanttensor ipc_cache mistral modelexpress npcache pt"
    " runai_streamer runai_streamer_sharded safetensors sharded_state tensorizer"
)
_ALL2ALL_BACKEND = _c(
    "allgather_reducescatter deepep_high_throughput deepep_low_latency deepep_v2 flashinfer_all2allv"
    " flashinfer_nvlink_one_sided flashinfer_nvlink_two_sided moonep mori_high_throughput"
    " mori_low_latency naive nixl_ep pplx"
)
_KV_CACHE_DTYPE = _c(
    "auto bfloat16 float16 fp8 fp8_ds_mla fp8_e4m3 fp8_e5m2 fp8_inc fp8_per_token_head"
    " int4_per_token_head int8_per_token_head nvfp4 nvfp4_4over6 nvfp4_ds_mla octave_k3v3"
    " octave_k3v3_compact octave_k3v4 turboquant_3bit_nc turboquant_4bit_nc turboquant_k3v4_nc"
    " turboquant_k8v4 ultraquant_4bit"
)
_MOE_BACKEND = _c(
    "aiter aiter_mega_moe aiter_triton_mxfp4_bf16 aiter_triton_mxfp4_mxfp4 auto b12x batched_triton"
    " cutlass deep_gemm deep_gemm_mega_moe emulation flashinfer_b12x flashinfer_cutedsl"
    " flashinfer_cutlass flashinfer_moe_ep_cutedsl flashinfer_moe_ep_mega_deep_gemm flashinfer_trtllm"
    " flydsl hpc humming marlin rdna3 triton triton_unfused"
)
_LINEAR_BACKEND = _c(
    "aiter auto b12x conch cutlass deep_gemm emulation exllama fbgemm flashinfer_b12x"
    " flashinfer_cudnn flashinfer_cutedsl flashinfer_cutlass flashinfer_trtllm humming machete marlin"
    " torch triton xpu xpu_woq"
)
_SPARSE_INDEXER_TOPK_BACKEND = _c("aiter auto cooperative deep_select flashinfer per_row persistent torch")
_SPEC_METHOD = _c(
    "bailing_hybrid_mtp bailing_hybrid_v3_mtp custom_class deepseek_mtp dflash dots3_note_mtp"
    " draft_model dspark eagle eagle3 ernie_mtp exaone4_5_mtp exaone_moe_mtp extract_hidden_states"
    " gemma4_mtp glm4_moe_lite_mtp glm4_moe_mtp glm5_next_mtp glm_ocr_mtp hy_v3_mtp hy_v4_mtp"
    " inkling_mtp kimi_k3_mtp longcat_flash_mtp mimo_mtp mimo_v2_mtp minimax_m3_mtp mtp"
    " nemotron_h_mtp ngram ngram_gpu pangu_ultra_moe_mtp qwen3_5_mtp qwen3_next_mtp qwen4_exp_mtp"
    " step3p5_mtp step5_mtp suffix"
)

ROWS: dict[str, Flag] = {
    "--model": plan("model", "str", "Qwen/Qwen3-0.6B", MODEL),
    "--runner": memory("choice", "auto", MODEL, choices=_c("auto draft generate pooling"), reason=(
        "pooling: no sampler in the profiling run, and an encoder-only model holds no KV cache"
        " (vllm/v1/worker/gpu/model_runner.py)")),
    "--convert": memory("choice", "auto", MODEL, choices=_c("auto classify embed none"), reason=(
        "a generative model run as a pooling one: no sampler in the profiling run"
        " (vllm/v1/worker/gpu/model_runner.py)")),
    "--tokenizer": none("str", None, MODEL),
    "--tokenizer-mode": none("choice", "auto", MODEL, choices=_TOKENIZER_MODE, open_choices=True),
    "--trust-remote-code": none("bool", False, MODEL),
    "--dtype": plan("dtype", "choice", "auto", MODEL, choices=_c("auto bfloat16 float float16 float32 half"),
                    reason=("the unquantized weights' dtype, and the KV cache's under --kv-cache-dtype auto"
                            " (vllm/config/model.py _get_and_verify_dtype)")),
    "--seed": none("int", 0, MODEL),
    "--hf-config-path": memory("str", None, MODEL, reason=(
        "another config.json: the geometry the KV cache and weights follow"
        " (vllm/transformers_utils/config.py)")),
    "--allowed-local-media-path": none("str", "", MODEL),
    "--allowed-media-domains": none("list", None, MODEL),
    "--revision": plan("revision", "str", None, MODEL),
    "--code-revision": none("str", None, MODEL),
    "--tokenizer-revision": none("str", None, MODEL),
    "--max-model-len": plan("max_model_len", "human_int_or_auto", None, MODEL, reason=(
        "'auto' or -1: vLLM fits the longest length the KV cache holds"
        " (vllm/v1/core/kv_cache_planning.py)")),
    "--quantization": plan(
        "quantization", "choice", None, MODEL, "-q", choices=_QUANTIZATION, open_choices=True),
    "--quantization-config": memory("json", None, MODEL, reason=(
        "the quantization method's parameters: the weights' bytes on the GPU; its moe.activation mxfp8"
        " is read as flashinfer_moe_mxfp4_mxfp8 (vllm/config/quantization.py)")),
    "--allow-deprecated-quantization": none("bool", False, MODEL),
    "--enforce-eager": plan("enforce_eager", "bool", False, MODEL),
    "--enable-return-routed-experts": memory("bool", False, AUX_OUTPUT, reason=(
        "a buffer of each batched token's routed experts per MoE layer"
        " (vllm/model_executor/layers/fused_moe/routed_experts_capturer.py)")),
    "--return-sampling-mask": memory("bool", False, MODEL, reason=(
        "sampling without FlashInfer's fused sampler, with a mask per token: the sampler's profiled peak"
        " (vllm/v1/worker/gpu/sample/sampler.py)")),
    "--max-logprobs": none("int", 20, MODEL),
    "--logprobs-mode": none("choice", "raw_logprobs", MODEL, choices=_LOGPROBS_MODE),
    "--use-fp64-gumbel": memory("bool", False, MODEL, reason=(
        "the sampler's noise in float64: a larger sampling peak in the profiling run"
        " (vllm/v1/worker/gpu/sample/sampler.py)")),
    "--enable-trace-replay": none("bool", False, MODEL, reason=(
        "its per-request trace buffer is in pinned host memory, not on the GPU"
        " (vllm/v1/worker/gpu/sample/trace_replay.py)")),
    "--disable-sliding-window": memory("bool", False, MODEL, reason=(
        "sliding-window layers keep the whole context: their KV per request (vllm/config/model.py)")),
    "--disable-cascade-attn": none("bool", None, ARG_UTILS, reason=(
        "deprecated, no effect since cascade attention was removed")),
    "--skip-tokenizer-init": none("bool", False, MODEL),
    "--enable-prompt-embeds": memory("bool", False, MODEL, reason=(
        "an inputs_embeds buffer of max_num_batched_tokens × hidden size"
        " (vllm/v1/worker/gpu/model_states/default.py)")),
    "--served-model-name": plan("served_model_name", "list", None, MODEL),
    "--config-format": none("choice", "auto", MODEL, choices=_c("auto hf mistral"), open_choices=True),
    "--hf-token": none("str_or_true", None, MODEL),
    "--hf-overrides": memory("str_or_json", "{}", MODEL, reason=(
        "overrides config.json's fields, the geometry the KV cache and weights follow"
        " (vllm/config/model.py)")),
    "--model-class-overrides": memory("json", "{}", MODEL, reason=(
        "another model class for the architecture: its layers and KV layout (vllm/config/model.py)")),
    "--pooler-config": none("json", None, MODEL),
    "--generation-config": none("str", "auto", MODEL),
    "--override-generation-config": none("json", "{}", MODEL),
    "--enable-sleep-mode": memory("bool", False, MODEL, reason=(
        "weights and KV cache go through the CuMem pool, each allocation rounded to its granularity"
        " (vllm/device_allocator/cumem.py)")),
    "--sleep-mode-backend": none("str", "cumem", MODEL),
    "--sleep-mode-offload-cudagraph": none("bool", False, MODEL),
    "--sleep-preserve-parameter-names": none("list", (), MODEL),
    "--enable-cumem-allocator": memory("bool", False, MODEL, reason=(
        "weights and KV cache go through the CuMem pool, each allocation rounded to its granularity"
        " (vllm/device_allocator/cumem.py)")),
    "--enable-nccl-comm-suspend": none("bool", False, MODEL),
    "--model-impl": memory(
        "choice", "auto", MODEL, choices=_c("auto terratorch transformers vllm"), open_choices=True,
        reason=(
            "the Transformers backend's modelling code: its activation peak and the layers it supports"
            " (vllm/model_executor/models/transformers/)")),
    "--logits-processors": memory("list", None, MODEL, reason=(
        "custom logits processors' own GPU state, built before the KV cache is sized"
        " (vllm/v1/worker/gpu/model_runner.py)")),
    "--io-processor-plugin": none("str", None, MODEL),
    "--renderer-num-workers": none("int", 1, MODEL),
    "--load-format": none("choice", "auto", LOAD, choices=_LOAD_FORMAT, open_choices=True),
    "--download-dir": none("str", None, LOAD),
    "--safetensors-load-strategy": none("choice", None, LOAD, choices=_c("eager lazy prefetch torchao")),
    "--safetensors-prefetch-num-threads": none("int", 8, LOAD),
    "--safetensors-prefetch-block-size": none("human_int", 16777216, LOAD),
    "--model-loader-extra-config": none("str_or_json", "{}", LOAD),
    "--ignore-patterns": none("list", ("original/**/*",), LOAD),
    "--use-tqdm-on-load": none("bool", True, LOAD),
    "--pt-load-map-location": none("str_or_json", "cpu", LOAD),
    "--attention-backend": memory("str", None, ATTENTION, reason=(
        "the backend's KV layout and block size (FlashMLA 64, …) and its workspace"
        " (vllm/v1/attention/backends/)")),
    "--mamba-backend": none("str", "triton", MAMBA),
    "--mamba-ssu-algorithm": none("choice", None, MAMBA, choices=_c("auto horizontal simple vertical")),
    "--enable-mamba-cache-stochastic-rounding": none("bool", False, MAMBA),
    "--mamba-cache-philox-rounds": none("int", 0, MAMBA),
    "--reasoning-parser": none("str", "", STRUCTURED_OUTPUTS),
    "--reasoning-parser-plugin": none("str", "", STRUCTURED_OUTPUTS),
    "--distributed-executor-backend": none(
        "choice", None, PARALLEL, choices=_c("external_launcher mp ray uni"), open_choices=True),
    "--pipeline-parallel-size": plan("pipeline_parallel_size", "int", 1, PARALLEL, "-pp"),
    "--master-addr": none("str", "127.0.0.1", PARALLEL),
    "--master-port": none("int", 29501, PARALLEL),
    "--nnodes": none("int", 1, PARALLEL, "-n"),
    "--node-rank": none("int", 0, PARALLEL, "-r"),
    "--distributed-timeout-seconds": none("int", None, PARALLEL),
    "--cpu-distributed-timeout-seconds": none("int", None, PARALLEL),
    "--numa-bind": none("bool", False, PARALLEL),
    "--numa-bind-nodes": none("list", None, PARALLEL),
    "--numa-bind-cpus": none("list", None, PARALLEL),
    "--device-ids": none("str", None, ARG_UTILS),
    "--tensor-parallel-size": plan("tensor_parallel_size", "int", 1, PARALLEL, "-tp"),
    "--decode-context-parallel-size": plan("decode_context_parallel_size", "int", 1, PARALLEL, "-dcp"),
    "--dcp-comm-backend": none("choice", None, PARALLEL, choices=_c("a2a ag_rs")),
    "--dcp-q-replicate": memory("bool", None, PARALLEL, reason=(
        "the MLA query projection's weights replicated across the DCP group"
        " (vllm/model_executor/layers/mla.py)")),
    "--dcp-kv-cache-interleave-size": memory("int", 1, PARALLEL, reason=(
        "the unit in which DCP ranks split a request's tokens: its blocks per rank"
        " (vllm/config/parallel.py)")),
    "--cp-kv-cache-interleave-size": memory("int", None, PARALLEL, reason=(
        "the unit in which context-parallel ranks split a request's tokens: its blocks per rank"
        " (vllm/config/parallel.py)")),
    "--prefill-context-parallel-size": memory("int", 1, PARALLEL, "-pcp", reason=(
        "the KV cache sharded over PCP ranks as well, on TP × PP × PCP GPUs (vllm/config/parallel.py)")),
    "--data-parallel-size": plan("data_parallel_size", "int", 1, PARALLEL, "-dp", reason=(
        "one engine per DP rank, each with its own KV cache; the experts shard over DP × TP"
        " (vllm/model_executor/layers/fused_moe/config.py)")),
    "--data-parallel-rank": none("int", None, ARG_UTILS, "-dpn"),
    "--data-parallel-start-rank": none("int", None, ARG_UTILS, "-dpr"),
    "--data-parallel-size-local": none("int", None, ARG_UTILS, "-dpl"),
    "--data-parallel-address": none("str", None, ARG_UTILS, "-dpa"),
    "--data-parallel-rpc-port": none("int", None, ARG_UTILS, "-dpp"),
    "--data-parallel-backend": none("str", "mp", ARG_UTILS, "-dpb"),
    "--data-parallel-hybrid-lb": none("bool", False, PARALLEL, "-dph"),
    "--data-parallel-external-lb": none("bool", False, PARALLEL, "-dpe"),
    "--data-parallel-multi-port-external-lb": none("switch", False, ARG_UTILS, "-dpm"),
    "--enable-hc-sp": memory("bool", False, PARALLEL, reason=(
        "Qwen4Exp's HyperConnection activations split over TP ranks"
        " (vllm/models/qwen4_exp/common/hyperconnection.py)")),
    "--enable-expert-parallel": plan("enable_expert_parallel", "bool", False, PARALLEL, "-ep", reason=(
        "experts sharded whole over the TP × DP ranks instead of tensor-split"
        " (vllm/model_executor/layers/fused_moe/expert_map_manager.py)")),
    "--enable-batch-sharded-sampling": memory("bool", None, PARALLEL, reason=(
        "each TP rank samples a slice of the batch: the sampler's profiled peak"
        " (vllm/v1/worker/gpu/model_runner.py)")),
    "--enable-ep-weight-filter": none("bool", False, PARALLEL),
    "--all2all-backend": memory(
        "choice", "allgather_reducescatter", PARALLEL, choices=_ALL2ALL_BACKEND,
        reason=(
            "DeepEP, pplx and other all-to-all buffers on each GPU under expert parallel"
            " (vllm/distributed/device_communicators/all2all.py)")),
    "--enable-dbo": memory("bool", False, PARALLEL, reason=(
        "dual-batch overlap: micro-batched activations and CUDA graphs"
        " (vllm/v1/worker/gpu/model_runner.py)")),
    "--enable-shm-tensor-arena": none("bool", False, PARALLEL),
    "--ubatch-size": memory("int", 0, PARALLEL, reason=(
        "the micro-batches of dual-batch overlap: activations and CUDA graphs (vllm/config/parallel.py)")),
    "--enable-elastic-ep": memory("bool", False, PARALLEL, reason=(
        "all-to-all buffers sized for the largest DP size elastic EP may reach"
        " (vllm/distributed/device_communicators/all2all.py)")),
    "--elastic-ep-max-dp-size": memory("int", None, PARALLEL, reason=(
        "all-to-all buffers sized for this DP size (vllm/distributed/device_communicators/all2all.py)")),
    "--dbo-decode-token-threshold": none("int", 32, PARALLEL),
    "--dp-sync-interval": none("int", 16, PARALLEL),
    "--dbo-prefill-token-threshold": none("int", 512, PARALLEL),
    "--disable-nccl-for-dp-synchronization": none("bool", None, PARALLEL),
    "--enable-eplb": memory("bool", False, PARALLEL, reason=(
        "redundant experts' weights on each GPU (vllm/distributed/eplb/eplb_state.py)")),
    "--eplb-config": memory("json", None, PARALLEL, reason=(
        "num_redundant_experts: redundant experts' weights on each GPU"
        " (vllm/distributed/eplb/eplb_state.py)")),
    "--expert-placement-strategy": none("choice", "linear", PARALLEL, choices=_c("linear round_robin")),
    "--max-parallel-loading-workers": none("int", None, PARALLEL),
    "--ray-workers-use-nsight": none("bool", False, PARALLEL),
    "--disable-custom-all-reduce": memory("bool", False, PARALLEL, reason=(
        "NCCL in place of the custom all-reduce's IPC buffers: TP's non-torch memory"
        " (vllm/distributed/device_communicators/custom_all_reduce.py)")),
    "--worker-cls": none("str", "auto", PARALLEL),
    "--worker-extension-cls": none("str", "", PARALLEL),
    "--enable-fault-tolerance": none("bool", False, PARALLEL),
    "--fault-tolerance-config": none("json", None, PARALLEL),
    "--block-size": plan("block_size", "int", None, CACHE),
    "--gpu-memory-utilization": plan(
        "gpu_memory_utilization", "float", 0.92, CACHE, "--device-memory-utilization"),
    "--kv-cache-memory-bytes": plan("kv_cache_memory_bytes", "human_int", None, CACHE),
    "--kv-cache-dtype": plan(
        "kv_cache_dtype", "choice", "auto", CACHE, choices=_KV_CACHE_DTYPE, open_choices=True),
    "--num-gpu-blocks-override": plan("num_gpu_blocks_override", "int", None, CACHE),
    "--enable-prefix-caching": plan("enable_prefix_caching", "bool", None, CACHE),
    "--prefix-caching-hash-algo": none(
        "choice", "sha256", CACHE, choices=_c("sha256 sha256_cbor xxhash xxhash_cbor")),
    "--prefix-cache-retention-interval": none("int", 0, CACHE),
    "--kv-cache-dtype-skip-layers": plan("kv_cache_dtype_skip_layers", "list", (), CACHE),
    "--kv-sharing-fast-prefill": memory("bool", False, CACHE, reason=(
        "KV-sharing layers prefill only the tokens that decode: a different profiled peak"
        " (vllm/v1/worker/gpu/model_runner.py)")),
    "--swa-bounded-replay": none("bool", True, CACHE),
    "--mamba-cache-dtype": plan(
        "mamba_cache_dtype", "choice", "auto", CACHE, choices=_c("auto bfloat16 float16 float32")),
    "--mamba-ssm-cache-dtype": plan(
        "mamba_ssm_cache_dtype", "choice", "auto", CACHE, choices=_c("auto bfloat16 float16 float32")),
    "--mamba-block-size": plan("mamba_block_size", "int", None, CACHE),
    "--prefix-match-unit": none("int", None, CACHE),
    "--mamba-cache-mode": none("choice", None, CACHE, choices=_c("align none"), reason=(
        "deprecated, no effect: Mamba prefix caching follows --enable-prefix-caching")),
    "--enable-mamba-shared-prefix-checkpoint": memory("bool", False, CACHE, reason=(
        "another Mamba checkpoint at the shared-prefix junction: more state blocks per request"
        " (vllm/v1/core/single_type_kv_cache_manager.py)")),
    "--replayssm-buffer-len": memory("int", 16, CACHE, reason=(
        "the history ReplaySSM caches in each Mamba2 state page"
        " (vllm/v1/attention/backends/mamba_attn.py)")),
    "--use-replayssm": memory("bool", False, CACHE, reason=(
        "Mamba2 state pages that also cache recent SSM inputs (vllm/v1/attention/backends/mamba_attn.py)")),
    "--kv-offloading-size": plan("kv_offloading_bytes", "float", None, CACHE, reason=(
        "in GiB, the field in bytes")),
    "--kv-offloading-backend": memory("choice", "native", CACHE, choices=_c("lmcache native"), reason=(
        "lmcache's buffers in place of the native CPU offloading kvplan models (vllm/config/cache.py)")),
    "--offload-backend": memory("choice", "auto", OFFLOAD, choices=_c("auto prefetch uva"), reason=(
        "weights offloaded to the CPU (UVA or prefetch): fewer weight bytes on the GPU"
        " (vllm/config/offload.py)")),
    "--cpu-offload-gb": plan("cpu_offload_bytes", "float", 0, OFFLOAD, reason=(
        "GiB of weights per GPU kept in CPU memory (UVA), the field in bytes"
        " (vllm/model_executor/offloader/uva.py)")),
    "--cpu-offload-params": memory("list", (), OFFLOAD, reason=(
        "which weights --cpu-offload-gb offloads (vllm/model_executor/offloader/)")),
    "--offload-group-size": memory("int", 0, OFFLOAD, reason=(
        "prefetch offloading: layers whose weights stay in CPU memory (vllm/model_executor/offloader/)")),
    "--offload-num-in-group": memory("int", 1, OFFLOAD, reason=(
        "prefetch offloading: layers offloaded per group (vllm/model_executor/offloader/)")),
    "--offload-prefetch-step": memory("int", 1, OFFLOAD, reason=(
        "prefetch offloading: layers prefetched ahead, their GPU buffers (vllm/model_executor/offloader/)")),
    "--offload-params": memory("list", (), OFFLOAD, reason=(
        "prefetch offloading: which weights are offloaded (vllm/model_executor/offloader/)")),
    "--language-model-only": plan("language_model_only", "bool", False, MULTIMODAL),
    "--limit-mm-per-prompt": plan("mm_limit_zero", "json", "{}", MULTIMODAL, reason=(
        "a modality at 0 for every modality of a tower: the tower is not built or profiled"
        " (vllm/model_executor/models/interfaces.py _mark_tower_model); other limits size the"
        " encoder's profiling run (vllm/multimodal/encoder_budget.py), which kvplan's non-KV"
        " estimate does not take apart")),
    "--enable-mm-embeds": none("bool", False, MULTIMODAL),
    "--media-io-kwargs": none("json", "{}", MULTIMODAL),
    "--mm-processor-kwargs": memory("json", None, MULTIMODAL, reason=(
        "the processor's image or video size: the encoder's profiled peak and cache"
        " (vllm/multimodal/encoder_budget.py)")),
    "--mm-processor-cache-gb": none("float", 4, MULTIMODAL),
    "--mm-processor-cache-type": none("choice", "lru", MULTIMODAL, choices=_c("lru shm")),
    "--mm-hasher-algorithm": none("choice", "blake3", MULTIMODAL, choices=_c("blake3 sha256 sha512")),
    "--mm-shm-cache-max-object-size-mb": none("int", 128, MULTIMODAL),
    "--mm-encoder-only": memory("bool", False, MULTIMODAL, reason=(
        "only the multimodal encoder runs: no KV cache (vllm/config/vllm.py)")),
    "--mm-encoder-tp-mode": memory("choice", "weights", MULTIMODAL, choices=_c("data weights"), reason=(
        "data: the encoder's weights replicated on every TP rank (vllm/model_executor/models/vision.py)")),
    "--mm-encoder-attn-backend": memory("str", None, MULTIMODAL, reason=(
        "the encoder attention's profiled peak"
        " (vllm/model_executor/layers/attention/mm_encoder_attention.py)")),
    "--mm-encoder-attn-dtype": memory("choice", None, MULTIMODAL, choices=_c("fp8"), reason=(
        "fp8 encoder attention: the encoder's profiled peak"
        " (vllm/model_executor/layers/attention/mm_encoder_attention.py)")),
    "--mm-encoder-fp8-scale-path": none("str", None, MULTIMODAL),
    "--mm-encoder-fp8-scale-save-path": none("str", None, MULTIMODAL),
    "--mm-encoder-fp8-scale-save-margin": none("float", 1.5, MULTIMODAL),
    "--interleave-mm-strings": none("bool", False, MULTIMODAL),
    "--skip-mm-profiling": memory("bool", False, MULTIMODAL, reason=(
        "the encoder's activation peak is left out of the profiling run"
        " (vllm/v1/worker/gpu/model_runner.py)")),
    "--video-pruning-rate": memory("float", None, MULTIMODAL, reason=(
        "fewer tokens per video: the encoder cache and profiling inputs (vllm/config/multimodal.py)")),
    "--video-pruning-method": none("choice", "evs", MULTIMODAL, choices=_c("evs vidcom2")),
    "--mm-tensor-ipc": none("choice", "direct_rpc", MULTIMODAL, choices=_c("direct_rpc torch_shm")),
    "--mm-processor-device": memory(
        "choice", "auto", ARG_UTILS, choices=_c("auto cpu"), open_choices=True,
        reason="the HF processor's transforms on the GPU, beside the engine's budget (vllm/config/vllm.py)"),
    "--mm-ipc-gpu-memory-gb": memory("float", 0, MULTIMODAL, reason=(
        "GPU memory sequestered for multimodal tensor IPC (vllm/multimodal/gpu_ipc_memory.py)")),
    "--mm-device-do-normalize": none("bool", None, MULTIMODAL),
    "--enable-lora": plan("enable_lora", "bool", None, ARG_UTILS, reason=(
        "LoRA adapter slots on every GPU, counted with the weights (vllm/lora/model_manager.py)")),
    "--max-loras": plan("max_loras", "int", 1, LORA, reason="the adapter slots each wrapped module holds"),
    "--max-lora-rank": plan("max_lora_rank", "choice", 16, LORA, choices=_c("1 8 16 32 64 128 256 320 512"),
                            reason="the rank each slot holds"),
    "--lora-dtype": plan("lora_dtype", "choice", "auto", LORA, choices=_c("auto bfloat16 float16"), reason=(
        "the slots' dtype (auto: the model's)")),
    "--enable-tower-connector-lora": memory("bool", False, LORA, reason=(
        "LoRA slots for the vision tower and connector too (vllm/lora/model_manager.py)")),
    "--max-cpu-loras": none("int", None, LORA, reason=(
        "adapters cached in CPU memory, not on the GPU (vllm/lora/model_manager.py capacity); "
        "must be at least --max-loras")),
    "--fully-sharded-loras": plan("fully_sharded_loras", "bool", False, LORA, reason=(
        "column layers' A and row layers' B split over the TP ranks too (S-LoRA)")),
    "--lora-target-modules": plan("lora_target_modules", "list", None, LORA, reason=(
        "only the modules named get slots")),
    "--default-mm-loras": none("json", None, LORA),
    "--specialize-active-lora": memory("bool", False, LORA, reason=(
        "CUDA graphs for each power-of-2 count of active LoRAs (vllm/v1/cudagraph_dispatcher.py)")),
    "--enable-mixed-moe-lora-format": plan("enable_mixed_moe_lora_format", "bool", False, LORA, reason=(
        "a 3D-weight MoE model's experts get the 2D wrapper's slots (gate and up A apart)")),
    "--enable-moe-shared-loras": plan("enable_moe_shared_loras", "bool", False, LORA, reason=(
        "one gate/up A and one down B for all experts (expert dimension 1)")),
    "--max-lora-cls-labels": memory("int", None, LORA, reason=(
        "classification LoRA heads' slots (vllm/lora/model_manager.py)")),
    "--logging-config": none("json", None, VLLM),
    "--log-level": none("choice", None, ARG_UTILS, choices=_c("CRITICAL ERROR WARNING INFO DEBUG NOTSET")),
    "--log-config-file": none("str", None, ARG_UTILS),
    "--show-hidden-metrics-for-version": none("str", None, OBSERVABILITY),
    "--otlp-traces-endpoint": none("str", None, OBSERVABILITY),
    "--collect-detailed-traces": none("list", None, OBSERVABILITY, choices=_c("all model worker")),
    "--per-request-spec-decode-metrics": none(
        "choice", "none", OBSERVABILITY, choices=_c("detailed none summary")),
    "--kv-cache-metrics": none("bool", False, OBSERVABILITY),
    "--kv-cache-metrics-sample": none("float", 0.01, OBSERVABILITY),
    "--custom-histogram-buckets": none("json", None, OBSERVABILITY),
    "--cudagraph-metrics": none("bool", False, OBSERVABILITY),
    "--enable-layerwise-nvtx-tracing": none("bool", False, OBSERVABILITY),
    "--enable-mfu-metrics": none("bool", False, OBSERVABILITY),
    "--enable-logging-iteration-details": none("bool", False, OBSERVABILITY),
    "--jit-monitor-mode": none("choice", "warn", OBSERVABILITY, choices=_c("error warn")),
    "--jit-monitor-verbose": none("bool", False, OBSERVABILITY),
    "--max-num-batched-tokens": plan("max_num_batched_tokens", "human_int", None, SCHEDULER),
    "--max-num-scheduled-tokens": none("human_int", None, SCHEDULER),
    "--max-num-seqs": plan("max_num_seqs", "int", None, SCHEDULER),
    "--max-num-active-seqs": memory("int", None, SCHEDULER, reason=(
        "caps the requests running at once below max_num_seqs: the concurrency vLLM reaches"
        " (vllm/v1/core/sched/scheduler.py)")),
    "--max-num-queued-reqs": none("int", None, SCHEDULER),
    "--max-num-queued-tokens": none("human_int", None, SCHEDULER),
    "--long-prefill-token-threshold": none("int", 0, SCHEDULER),
    "--long-prefill-token-threshold-adaptive": none("bool", False, SCHEDULER),
    "--scheduling-policy": none("choice", "fcfs", SCHEDULER, choices=_c("fcfs priority")),
    "--enable-chunked-prefill": memory("bool", None, SCHEDULER, reason=(
        "off: max_num_batched_tokens defaults to at least max_model_len, the profiled batch"
        " (vllm/engine/arg_utils.py)")),
    "--disable-chunked-mm-input": none("bool", False, SCHEDULER),
    "--scheduler-cls": none("str", None, SCHEDULER),
    "--scheduler-reserve-full-isl": memory("bool", True, SCHEDULER, reason=(
        "off: a request is admitted when its first chunk fits, not its whole prompt"
        " (vllm/v1/core/sched/scheduler.py)")),
    "--watermark": memory("float", 0.0, SCHEDULER, reason=(
        "a fraction of the blocks kept free when admitting requests: fewer run at once"
        " (vllm/v1/core/sched/scheduler.py)")),
    "--prefill-schedule-interval": none("int", 1, SCHEDULER),
    "--disable-hybrid-kv-cache-manager": plan("hybrid_kv_cache_manager", "bool", None, SCHEDULER, reason=(
        "inverted: set, the manager is off")),
    "--async-scheduling": plan("async_scheduling", "bool", None, SCHEDULER),
    "--stream-interval": none("int", 1, SCHEDULER),
    "--cudagraph-capture-sizes": plan("cudagraph_capture_sizes", "list", None, COMPILATION),
    "--max-cudagraph-capture-size": plan("max_cudagraph_capture_size", "int", None, COMPILATION),
    "--ir-op-priority": none("json", None, KERNEL),
    "--enable-flashinfer-autotune": none("bool", None, KERNEL),
    "--monokernel": none("bool", False, KERNEL),
    "--moe-backend": plan("moe_backend", "choice", "auto", KERNEL, choices=_MOE_BACKEND, reason=(
        "the experts' kernel: the sizes it pads gpt-oss's MXFP4 experts to, and in the step-time model"
        " (marlin: AIConfigurator's Marlin MoE table); other kernels' weight layouts and workspaces are not"
        " budgeted (vllm/model_executor/layers/fused_moe/oracle/mxfp4.py)")),
    "--linear-backend": memory("choice", "auto", KERNEL, choices=_LINEAR_BACKEND, reason=(
        "the linear kernels' weight layout (emulation dequantizes) and workspace"
        " (vllm/model_executor/kernels/)")),
    "--sparse-indexer-topk-backend": none("choice", "auto", KERNEL, choices=_SPARSE_INDEXER_TOPK_BACKEND),
    # --speculative-config sets every speculative_* field its keys name (command.py); its
    # shorthands set one key each.
    "--speculative-config": plan("speculative_method", "json", None, VLLM, "-sc", reason=(
        "the draft's KV layers and weights, the lookahead in sliding windows and Mamba states"
        " (vllm/config/speculative.py)")),
    "--spec-method": plan("speculative_method", "choice", None, SPECULATIVE, choices=_SPEC_METHOD),
    "--spec-model": plan("speculative_model", "str", None, SPECULATIVE),
    "--spec-tokens": plan("num_speculative_tokens", "int", None, SPECULATIVE),
    "--watermark-config": none("json", None, VLLM),
    "--diffusion-config": memory("json", None, VLLM, "-dc", reason=(
        "diffusion decoding's canvas tokens per step, like speculative tokens (vllm/config/vllm.py)")),
    "--kv-transfer-config": memory("json", None, VLLM, reason=(
        "a KV connector's buffers, and what a prefill or decode instance holds"
        " (vllm/distributed/kv_transfer/)")),
    "--kv-events-config": none("json", None, VLLM),
    "--ec-transfer-config": memory("json", None, VLLM, reason=(
        "an encoder-cache producer allocates no KV cache (vllm/distributed/ec_transfer/)")),
    "--ec-manager-config": none("json", None, VLLM),
    # Its cudagraph_mode, mode, cudagraph_capture_sizes and max_cudagraph_capture_size are read
    # (command.py); its other keys change no memory kvplan models.
    "--compilation-config": plan("cudagraph_mode", "json", None, VLLM, "-cc"),
    "--attention-config": memory("json", None, VLLM, "-ac", reason=(
        "the attention backend: KV layout, block size and workspace (vllm/config/attention.py)")),
    "--engram-config": memory("json", None, VLLM, reason=(
        "Engram embedding tables on the GPU or in pinned host memory (vllm/config/engram.py)")),
    "--reasoning-config": none("json", None, VLLM),
    "--kernel-config": memory("json", None, VLLM, reason=(
        "the MoE and linear kernels: weight layouts and workspace (vllm/config/kernel.py)")),
    "--additional-config": none("str_or_json", "{}", VLLM),
    "--structured-outputs-config": none("json", None, VLLM),
    "--aux-output-config": memory("json", None, VLLM, reason=(
        "with routed experts returned, a buffer of each batched token's"
        " (vllm/model_executor/layers/fused_moe/routed_experts_capturer.py)")),
    "--profiler-config": none("json", None, VLLM),
    "--watchdog-config": none("json", None, VLLM),
    "--optimization-level": plan("optimization_level", "str", 2, VLLM),
    "--performance-mode": memory(
        "choice", "balanced", VLLM, choices=_c("balanced interactivity throughput"),
        reason="interactivity: CUDA graphs for every batch size up to 32 (vllm/config/vllm.py)"),
    "--weight-transfer-config": none("json", None, VLLM),
    "--disable-log-stats": none("switch", False, ARG_UTILS),
    "--aggregate-engine-logging": none("switch", False, ARG_UTILS),
    "--fail-on-environ-validation": none("bool", False, ARG_UTILS),
    "--shutdown-timeout": none("int", 0, ARG_UTILS),
    "--gdn-prefill-backend": none(
        "choice", None, ARG_UTILS, choices=_c("flashinfer triton cutedsl aiter_flydsl sycl")),
    "--kda-prefill-backend": none(
        "choice", None, ARG_UTILS, choices=_c("auto triton flashkda flashinfer fused")),
    "--kda-decode-backend": none("choice", None, ARG_UTILS, choices=_c("auto native flashinfer triton")),
    "--enable-log-requests": none("bool", False, ARG_UTILS),
    # The OpenAI server's own: make_arg_parser, FrontendArgs (vllm/entrypoints/common/cli_args.py).
    "--headless": none("switch", False, CLI_ARGS),
    "--api-server-count": none("int", None, CLI_ARGS, "-asc"),
    "--config": none("str", None, CLI_ARGS),
    "--grpc": none("switch", False, CLI_ARGS),
    "--lora-modules": none("list", None, CLI_ARGS),
    "--chat-template": none("str", None, CLI_ARGS),
    "--chat-template-content-format": none("choice", "auto", CLI_ARGS, choices=_c("auto openai string")),
    "--trust-request-chat-template": none("bool", False, CLI_ARGS),
    "--trust-request-mm-kwargs": none("bool", False, CLI_ARGS),
    "--default-chat-template-kwargs": none("json", None, CLI_ARGS),
    "--reasoning-effort-map": none("json", None, CLI_ARGS),
    "--response-role": none("str", "assistant", CLI_ARGS),
    "--return-tokens-as-token-ids": none("bool", False, CLI_ARGS),
    "--enable-auto-tool-choice": none("bool", False, CLI_ARGS),
    "--exclude-tools-when-tool-choice-none": none("bool", False, CLI_ARGS),
    "--tool-call-parser": none("str", None, CLI_ARGS),
    "--tool-parser-plugin": none("str", "", CLI_ARGS),
    "--tool-strict-level": none("choice", None, CLI_ARGS, choices=_c("auto function parameter")),
    "--tool-server": none("str", None, CLI_ARGS),
    "--max-log-len": none("int", None, CLI_ARGS),
    "--enable-prompt-tokens-details": none("bool", False, CLI_ARGS),
    "--enable-per-request-metrics": none("bool", False, CLI_ARGS),
    "--enable-server-load-tracking": none("bool", False, CLI_ARGS),
    "--enable-force-include-usage": none("bool", False, CLI_ARGS),
    "--sse-keep-alive-interval": none("int", 0, CLI_ARGS),
    "--enable-tokenizer-info-endpoint": none("bool", False, CLI_ARGS),
    "--enable-log-outputs": none("bool", False, CLI_ARGS),
    "--enable-log-deltas": none("bool", True, CLI_ARGS),
    "--cohere-is-reasoning-model": none("bool", True, CLI_ARGS),
    "--cohere-format": none("str", "cmd4", CLI_ARGS),
    "--anthropic-disabled-thinking-effort": none(
        "choice", "auto", CLI_ARGS, choices=_c("auto high low max medium none xhigh")),
    "--log-error-stack": none("bool", None, CLI_ARGS),
    "--tokens-only": none("bool", False, CLI_ARGS),
    "--enable-scale-out": none("bool", False, CLI_ARGS),
    "--fingerprint-mode": none("choice", "full", CLI_ARGS, choices=_c("custom full hash none")),
    "--fingerprint-value": none("str", None, CLI_ARGS),
    "--host": none("str", None, CLI_ARGS),
    "--port": none("int", 8000, CLI_ARGS),
    "--grpc-port": none("int", None, CLI_ARGS),
    "--data-parallel-supervisor-port": none("int", 9256, CLI_ARGS),
    "--dp-supervisor-probe-interval-s": none("float", 5.0, CLI_ARGS),
    "--dp-supervisor-probe-timeout-s": none("float", 5.0, CLI_ARGS),
    "--dp-supervisor-probe-failure-threshold": none("int", 3, CLI_ARGS),
    "--uds": none("str", None, CLI_ARGS),
    "--uvicorn-log-level": none(
        "choice", "info", CLI_ARGS, choices=_c("critical debug error info trace warning")),
    "--disable-uvicorn-access-log": none("bool", False, CLI_ARGS),
    "--disable-access-log-for-endpoints": none("str", None, CLI_ARGS),
    "--allow-credentials": none("bool", False, CLI_ARGS),
    "--allowed-origins": none("json", "[]", CLI_ARGS),
    "--allowed-methods": none("json", '["*"]', CLI_ARGS),
    "--allowed-headers": none("json", '["*"]', CLI_ARGS),
    "--api-key": none("list", None, CLI_ARGS),
    "--ssl-keyfile": none("str", None, CLI_ARGS),
    "--ssl-certfile": none("str", None, CLI_ARGS),
    "--ssl-ca-certs": none("str", None, CLI_ARGS),
    "--enable-ssl-refresh": none("bool", False, CLI_ARGS),
    "--ssl-cert-reqs": none("int", 0, CLI_ARGS),
    "--ssl-ciphers": none("str", None, CLI_ARGS),
    "--root-path": none("str", None, CLI_ARGS),
    "--middleware": none("append", (), CLI_ARGS),
    "--enable-request-id-headers": none("bool", False, CLI_ARGS),
    "--disable-fastapi-docs": none("bool", False, CLI_ARGS),
    "--h11-max-incomplete-event-size": none("int", 4194304, CLI_ARGS),
    "--h11-max-header-count": none("int", 256, CLI_ARGS),
    "--enable-offline-docs": none("bool", False, CLI_ARGS),
    "--enable-flash-late-interaction": memory("bool", True, CLI_ARGS, reason=(
        "late-interaction pooling models: MaxSim scoring on the GPU, beside the engine's budget"
        " (vllm/entrypoints/pooling/scoring/serving.py)")),
    "--help": none("switch", None, SERVE, "-h"),
}  # fmt: skip
