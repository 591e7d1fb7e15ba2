"""What vLLM subtracts from its budget besides the weights and the KV cache: the activation peak
of its profiling run, non-torch memory and CUDA graphs (docs/memory-model.md).

The profiling run (vllm/v1/worker/gpu_model_runner.py profile_run, called from
vllm/v1/worker/gpu_worker.py determine_available_memory) runs a dummy forward pass of
max_num_batched_tokens tokens and a sampler pass over max_num_seqs dummy requests; its torch peak
above the weights is the activation peak. The sampler's fp32 logits (max_num_seqs × vocabulary,
in several copies: logits, softmax, log-softmax) dominate it; a fused-MoE layer adds its
per-token expert workspace; the rest is a floor for the forward pass. Non-torch memory is the CUDA
context and, with tensor parallel (TP > 1), NCCL and custom all-reduce buffers. CUDA-graph memory
grows with the layers captured. The constants of each term are fitted on real start-up logs per
engine profile (tests/calibration/memory.py); the residuals give the band."""

from __future__ import annotations

import msgspec


class ModelShape(msgspec.Struct, frozen=True, kw_only=True):
    """The sizes the profiling run's activations scale with, read from config.json."""

    hidden_size: int  # no term scales with it yet: its presence says the config was read
    vocab_size: int
    experts_per_token: int = 0
    moe_intermediate_size: int = 0
    # Routed experts (0: a dense model): how expert parallelism places them (core/budget/memory.py).
    num_experts: int = 0


class MemoryRules(msgspec.Struct, frozen=True, kw_only=True):
    """One engine profile's non-KV memory: fitted constants, in bytes (and bytes per unit)."""

    calibration: str  # which logs the constants come from
    activation_floor_bytes: int
    sampler_bytes_per_logit: int  # × max_num_seqs × vocab
    moe_bytes_per_token_expert_column: int  # × max_num_batched_tokens × top-k × moe_intermediate / TP
    non_torch_single_bytes: int  # TP 1 (any number of pipeline stages)
    non_torch_parallel_bytes: int  # TP > 1: NCCL and custom all-reduce buffers
    cudagraph_floor_bytes: int
    cudagraph_bytes_per_layer: int  # × decoder layers on the worker
    cudagraph_subtracted: bool  # the estimate comes off the KV budget (else captured afterwards)
    # The graphs vLLM captured on the calibration logs (cudagraphs.py); 0: the estimate does not
    # scale with the graphs captured (a profile whose capture rules kvplan does not mirror).
    cudagraph_calibration_graphs: int = 0
    # Residuals of available KV on the calibration logs (low is negative): the band.
    band_low_bytes: int
    band_high_bytes: int


class NonKvEstimate(msgspec.Struct, frozen=True, kw_only=True):
    activation_bytes: int
    non_torch_bytes: int
    cudagraph_bytes: int  # what graph capture takes (0 with enforce_eager)
    cudagraph_subtracted_bytes: int  # of it, what comes off the KV budget under this profile

    @property
    def non_kv_bytes(self) -> int:
        """What the caller's non_kv_bytes stands for: activation peak and non-torch memory."""
        return self.activation_bytes + self.non_torch_bytes


def activation_peak(
    rules: MemoryRules, shape: ModelShape, max_num_seqs: int, max_num_batched_tokens: int, tensor: int
) -> int:
    """The profiling run's torch peak above the weights (gpu_model_runner.py profile_run:
    _dummy_run of max_num_batched_tokens, then _dummy_sampler_run over max_num_seqs)."""
    sampler = rules.sampler_bytes_per_logit * max_num_seqs * shape.vocab_size
    moe = (
        rules.moe_bytes_per_token_expert_column
        * max_num_batched_tokens
        * shape.experts_per_token
        * shape.moe_intermediate_size
        // tensor
    )
    return rules.activation_floor_bytes + sampler + moe


def non_torch_memory(rules: MemoryRules, tensor: int) -> int:
    """CUDA context alone, or with NCCL and custom all-reduce buffers under tensor parallel
    (pipeline stages only pass activations: the logs show no jump)."""
    return rules.non_torch_parallel_bytes if tensor > 1 else rules.non_torch_single_bytes


def cudagraph_memory(
    rules: MemoryRules, layers_on_worker: int, enforce_eager: bool, graphs_captured: int | None = None
) -> int:
    """Graph capture's pool (gpu_model_runner.py capture_model); none with enforce_eager or when no
    graph is captured. The fitted figure stands for the calibration logs' graphs; another count
    scales it in proportion (an estimate: kvplan has no logs of other capture sets)."""
    if enforce_eager or graphs_captured == 0:
        return 0
    fitted = rules.cudagraph_floor_bytes + rules.cudagraph_bytes_per_layer * layers_on_worker
    if graphs_captured is None or not rules.cudagraph_calibration_graphs:
        return fitted
    return fitted * graphs_captured // rules.cudagraph_calibration_graphs


def estimate_non_kv(
    rules: MemoryRules,
    shape: ModelShape,
    *,
    max_num_seqs: int,
    max_num_batched_tokens: int,
    tensor: int,
    layers_on_worker: int,
    enforce_eager: bool,
    graphs_captured: int | None = None,
) -> NonKvEstimate:
    graphs = cudagraph_memory(rules, layers_on_worker, enforce_eager, graphs_captured)
    return NonKvEstimate(
        activation_bytes=activation_peak(rules, shape, max_num_seqs, max_num_batched_tokens, tensor),
        non_torch_bytes=non_torch_memory(rules, tensor),
        cudagraph_bytes=graphs,
        cudagraph_subtracted_bytes=graphs if rules.cudagraph_subtracted else 0,
    )


def model_shape(cfg: dict[str, object] | object) -> ModelShape | None:
    """The shape from a (language) config, or None when it lacks the hidden or vocabulary size."""
    if not isinstance(cfg, dict):
        return None

    def pos(*keys: str) -> int:
        for k in keys:
            v = cfg.get(k)
            if type(v) is int and v > 0:
                return v
        return 0

    hidden, vocab = pos("hidden_size", "d_model", "n_embd"), pos("vocab_size", "padded_vocab_size")
    if not hidden or not vocab:
        return None
    experts = pos("num_experts_per_tok", "experts_per_token", "moe_topk", "num_experts_per_token")
    routed = pos("n_routed_experts", "num_experts", "num_local_experts")
    if routed == 0:
        experts = 0
    moe_inter = pos("moe_intermediate_size") or (pos("intermediate_size") if experts else 0)
    return ModelShape(
        hidden_size=hidden,
        vocab_size=vocab,
        experts_per_token=experts,
        moe_intermediate_size=moe_inter,
        num_experts=routed,
    )


__all__ = [
    "MemoryRules",
    "ModelShape",
    "NonKvEstimate",
    "activation_peak",
    "cudagraph_memory",
    "estimate_non_kv",
    "model_shape",
    "non_torch_memory",
]
