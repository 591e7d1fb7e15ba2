"""Warnings are data: a stable code, a message and a severity. Codes never change meaning, and a
code's severity is stated once, here (docs/messages.md lists them)."""

from __future__ import annotations

from enum import StrEnum

import msgspec
from msgspec.structs import force_setattr

BUDGET_INSUFFICIENT = "budget_insufficient"
MAX_MODEL_LEN_DOES_NOT_FIT = "max_model_len_does_not_fit"
MLA_REPLICATED_UNDER_TP = "mla_replicated_under_tp"
KV_HEADS_REPLICATED = "kv_heads_replicated"
FP8_DEFAULT_SCALES = "fp8_default_scales"
NVFP4_FLASHINFER_ONLY = "nvfp4_flashinfer_only"
POOLED_NOT_DEPLOYABLE = "pooled_not_deployable"
OFFLOAD_IS_NOT_CONCURRENCY = "offload_is_not_concurrency"
HYBRID_PADDING = "hybrid_padding"
HYBRID_MANAGER_DISABLED = "hybrid_manager_disabled"
BLOCK_SIZE_RAISED = "block_size_raised"
NUM_GPU_BLOCKS_OVERRIDDEN = "num_gpu_blocks_overridden"
NOMINAL_GPU_MEMORY = "nominal_gpu_memory"
CONTEXT_EXCEEDS_MAX_POSITION = "context_exceeds_max_position"
PREEMPTION = "preemption"
MAX_NUM_SEQS_LIMITS = "max_num_seqs_limits"
CHEAPEST_MIX_SEARCH_LIMIT = "cheapest_mix_search_limit"
MAX_MODEL_LEN_EXCEEDS_DERIVED = "max_model_len_exceeds_derived"
NON_KV_ESTIMATED = "non_kv_estimated"
WEIGHTS_DO_NOT_FIT = "weights_do_not_fit"
NON_KV_NOT_ESTIMATED = "non_kv_not_estimated"
DESIRED_ABOVE_MAX_REPLICAS = "desired_above_max_replicas"
NO_READY_REPLICAS = "no_ready_replicas"
MEAN_PROMPT_ASSUMED = "mean_prompt_assumed"
REQUEST_RATE_NOT_GIVEN = "request_rate_not_given"
REQUEST_RATE_UNUSED = "request_rate_unused"
SCRAPE_CLEANED = "scrape_cleaned"
SCRAPE_MODEL_DIFFERS = "scrape_model_differs"
FLAGS_NOT_MODELLED = "flags_not_modelled"
WEIGHTS_OFFLOADED = "weights_offloaded"
DATA_PARALLEL_ENGINES = "data_parallel_engines"
LORA_NOT_MODELLED = "lora_not_modelled"
NO_TOWER_KNOWN = "no_tower_known"
MXFP4_PADDING_NOT_MODELLED = "mxfp4_padding_not_modelled"

CODES: dict[str, str] = {
    BUDGET_INSUFFICIENT: "The KV budget holds no request of the asked context.",
    MAX_MODEL_LEN_DOES_NOT_FIT: "vLLM would refuse to start: one max_model_len request does not fit.",
    MLA_REPLICATED_UNDER_TP: "MLA's latent is replicated on every TP rank; TP does not shrink it.",
    KV_HEADS_REPLICATED: "TP exceeds the KV heads: heads are replicated, one per GPU.",
    FP8_DEFAULT_SCALES: "fp8 KV uses scale 1.0 unless calibrated: accuracy risk is yours.",
    NVFP4_FLASHINFER_ONLY: "nvfp4 KV cache needs the FlashInfer attention backend.",
    POOLED_NOT_DEPLOYABLE: "A pooled-memory figure is arithmetic only, not a deployment.",
    OFFLOAD_IS_NOT_CONCURRENCY: "CPU KV offload retains more KV; it adds no GPU blocks.",
    HYBRID_PADDING: "Hybrid KV groups are padded with empty layer slots that waste memory.",
    HYBRID_MANAGER_DISABLED: "With the hybrid manager disabled, sliding layers cost full blocks.",
    BLOCK_SIZE_RAISED: "vLLM raised some layers' block size to unify page sizes.",
    NUM_GPU_BLOCKS_OVERRIDDEN: "num_gpu_blocks_override replaced the computed block count.",
    NOMINAL_GPU_MEMORY: "The GPU's memory is a nominal figure, not what the driver reports.",
    CONTEXT_EXCEEDS_MAX_POSITION: "The context is longer than the model's max_position_embeddings.",
    MAX_NUM_SEQS_LIMITS: "vLLM schedules at most max_num_seqs requests, fewer than the KV cache holds.",
    PREEMPTION: "The simulated workload preempted requests: their work is thrown away and recomputed.",
    CHEAPEST_MIX_SEARCH_LIMIT: "The cheapest-mix search hit its step limit: best found, not proven cheapest.",
    WEIGHTS_DO_NOT_FIT: (
        "The weights and reserved memory exceed one GPU's budget: the warning names the TP sizes that fit."
    ),
    NON_KV_ESTIMATED: (
        "The activation peak, non-torch and CUDA-graph memory are estimated (calibrated on real vLLM "
        "logs; see memory and band): give non_kv_bytes from your engine's log to be exact."
    ),
    NON_KV_NOT_ESTIMATED: (
        "The model's shape (hidden size, vocabulary) is unknown, so nothing is subtracted besides "
        "the weights: the figures are optimistic; give non_kv_bytes."
    ),
    DESIRED_ABOVE_MAX_REPLICAS: (
        "The demand needs more replicas than max_replicas allows: the deployment will run above its "
        "target utilization, and requests will queue."
    ),
    NO_READY_REPLICAS: "No ready replica was observed: the desired count is min_replicas.",
    MEAN_PROMPT_ASSUMED: (
        "Waiting requests were counted at an assumed prompt length (the scrapes' lifetime mean, or "
        "context_tokens): give mean_prompt_tokens, the last 5 minutes' mean, to match Prometheus's rule."
    ),
    REQUEST_RATE_NOT_GIVEN: (
        "The deployment plans a sustainable request rate under its latency targets, but the observed "
        "rate was not given: the count leaves the rate term out; give request_rate_per_s, the last 5 "
        "minutes' Σ rate(vllm:request_success_total), to match Prometheus's rule."
    ),
    REQUEST_RATE_UNUSED: (
        "An observed request rate was given for a deployment without latency targets (slo): its count "
        "has no rate term."
    ),
    SCRAPE_CLEANED: (
        "Lines around a pasted /metrics that are not the exposition were dropped (a fence, a shell line)."
    ),
    SCRAPE_MODEL_DIFFERS: (
        "A scrape's series name another model than the deployment's: is it this deployment's replica?"
    ),
    FLAGS_NOT_MODELLED: (
        "Flags of the command change what vLLM allocates in ways kvplan does not model yet: the plan is "
        "the engine's without them."
    ),
    MAX_MODEL_LEN_EXCEEDS_DERIVED: (
        "max_model_len is above the model's derived maximum: vLLM refuses to start unless "
        "VLLM_ALLOW_LONG_MAX_MODEL_LEN=1; the figures hold only if overridden."
    ),
    WEIGHTS_OFFLOADED: (
        "--cpu-offload-gb keeps weights in CPU memory: vLLM moves whole parameters of the decoder "
        "layers until the budget is reached, so it offloads up to one parameter more, never the "
        "embeddings or the head."
    ),
    DATA_PARALLEL_ENGINES: (
        "Under data parallelism each DP rank is its own engine with its own KV cache: the figures are "
        "one engine's; data_parallel totals them."
    ),
    NO_TOWER_KNOWN: (
        "--language-model-only or --limit-mm-per-prompt 0 asks vLLM to leave a vision tower out, but the "
        "model as kvplan knows it has none (no vision_config): nothing is taken off its weights."
    ),
    LORA_NOT_MODELLED: (
        "LoRA is enabled on a model whose wrapped modules kvplan does not know (not the Llama layout, "
        "or no config.json): its adapter slots are not subtracted, so the KV figures are optimistic."
    ),
    MXFP4_PADDING_NOT_MODELLED: (
        "gpt-oss's MXFP4 experts run on ROCm's AITER kernels here, whose padding kvplan does not "
        "model: the checkpoint's bytes are planned, so the KV figures may be optimistic."
    ),
}


class Severity(StrEnum):
    """How much a warning weighs. Errors are not warnings: they are 4xx answers."""

    INFO = "info"  # how a figure was obtained or what vLLM did with it; the plan holds as asked
    WARNING = "warning"  # the plan may not hold as asked: check it before you rely on it


SEVERITY: dict[str, Severity] = {
    BUDGET_INSUFFICIENT: Severity.WARNING,
    MAX_MODEL_LEN_DOES_NOT_FIT: Severity.WARNING,
    MLA_REPLICATED_UNDER_TP: Severity.INFO,
    KV_HEADS_REPLICATED: Severity.INFO,
    FP8_DEFAULT_SCALES: Severity.WARNING,
    NVFP4_FLASHINFER_ONLY: Severity.WARNING,
    POOLED_NOT_DEPLOYABLE: Severity.WARNING,
    OFFLOAD_IS_NOT_CONCURRENCY: Severity.INFO,
    HYBRID_PADDING: Severity.INFO,
    HYBRID_MANAGER_DISABLED: Severity.INFO,
    BLOCK_SIZE_RAISED: Severity.INFO,
    NUM_GPU_BLOCKS_OVERRIDDEN: Severity.INFO,
    NOMINAL_GPU_MEMORY: Severity.INFO,
    CONTEXT_EXCEEDS_MAX_POSITION: Severity.WARNING,
    MAX_NUM_SEQS_LIMITS: Severity.INFO,
    PREEMPTION: Severity.WARNING,
    CHEAPEST_MIX_SEARCH_LIMIT: Severity.INFO,
    WEIGHTS_DO_NOT_FIT: Severity.WARNING,
    NON_KV_ESTIMATED: Severity.INFO,
    NON_KV_NOT_ESTIMATED: Severity.WARNING,
    MAX_MODEL_LEN_EXCEEDS_DERIVED: Severity.WARNING,
    DESIRED_ABOVE_MAX_REPLICAS: Severity.WARNING,
    NO_READY_REPLICAS: Severity.INFO,
    MEAN_PROMPT_ASSUMED: Severity.INFO,
    REQUEST_RATE_NOT_GIVEN: Severity.WARNING,
    REQUEST_RATE_UNUSED: Severity.INFO,
    SCRAPE_CLEANED: Severity.INFO,
    SCRAPE_MODEL_DIFFERS: Severity.WARNING,
    FLAGS_NOT_MODELLED: Severity.WARNING,
    WEIGHTS_OFFLOADED: Severity.INFO,
    DATA_PARALLEL_ENGINES: Severity.INFO,
    LORA_NOT_MODELLED: Severity.WARNING,
    MXFP4_PADDING_NOT_MODELLED: Severity.WARNING,
    NO_TOWER_KNOWN: Severity.WARNING,
}


# gc=False here and below: a value that cannot be in a cycle (see core/budget/types.py).
class Warning(msgspec.Struct, frozen=True, gc=False):
    """One warning. Its severity follows from its code (SEVERITY), whatever a caller passes."""

    code: str
    message: str
    severity: Severity = Severity.WARNING

    def __post_init__(self) -> None:
        force_setattr(self, "severity", SEVERITY[self.code])
