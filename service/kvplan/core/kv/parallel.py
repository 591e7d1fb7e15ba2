"""Tensor, pipeline and decode-context parallel rules (docs/vllm-rules.md §6)."""

from __future__ import annotations

from bisect import bisect_left

import msgspec

from ..errors import InvalidLayout
from ..limits import MAX_PARALLEL_SIZE
from ..model.geometry import CIRCULAR_BUFFER, COMPRESSED_MLA, MAMBA_REPLICATED, SUMMARY, Geometry
from ..validate import SIZE, integer


# gc=False here and below: a value that cannot be in a cycle (see core/budget/types.py).
class Parallel(msgspec.Struct, frozen=True, gc=False):
    tensor: int = 1
    pipeline: int = 1
    decode_context: int = 1

    @property
    def workers(self) -> int:
        return self.tensor * self.pipeline


def _check_size(value: int, field: str) -> None:
    integer(value, field, MAX_PARALLEL_SIZE, 1, InvalidLayout, SIZE)


def check_sizes(par: Parallel) -> None:
    _check_size(par.tensor, "tensor_parallel_size")
    _check_size(par.pipeline, "pipeline_parallel_size")
    _check_size(par.decode_context, "decode_context_parallel_size")


# Families whose vLLM config update refuses more than one pipeline stage.
SINGLE_STAGE_MODEL_TYPES = frozenset({"alice_ai"})


def validate(geometry: Geometry, par: Parallel) -> None:
    """Raise InvalidLayout for a layout vLLM refuses (vllm/config/model.py verify_with_parallel_config)."""
    check_sizes(par)
    tp, pp, dcp = par.tensor, par.pipeline, par.decode_context
    q = geometry.num_attention_heads
    if geometry.attention_free:
        pass  # no heads to shard: the Mamba state's own widths are checked (core/model/mamba.py)
    elif q % tp:
        raise InvalidLayout(
            "tensor_parallel_size",
            f"{tp} does not divide the model's {q} query heads; valid: "
            + ", ".join(str(t) for t in valid_tensor_sizes(geometry, 64)),
        )
    if not geometry.is_mla and not geometry.attention_free:
        kv = geometry.num_kv_heads
        if kv % tp and tp % kv:
            raise InvalidLayout(
                "tensor_parallel_size",
                f"{tp} and the model's {kv} KV heads do not divide one another; "
                "valid: " + ", ".join(str(t) for t in valid_tensor_sizes(geometry, 64)),
            )
    if SUMMARY in geometry.layer_pattern:  # Step5's DSA layers (inline geometry too)
        _check_step5_dsa(geometry, tp)
    if dcp > 1 and {CIRCULAR_BUFFER, SUMMARY, COMPRESSED_MLA} & set(geometry.layer_pattern):
        raise InvalidLayout(
            "decode_context_parallel_size",
            "Step5's DSA and Qwen4-exp's QSA side caches are planned without decode context parallelism "
            "(vLLM's QSA refuses it)",
        )
    if pp > 1 and MAMBA_REPLICATED in geometry.layer_pattern:
        raise InvalidLayout(
            "pipeline_parallel_size",
            "vLLM runs Qwen4-exp's PLE layers without pipeline parallelism; use 1 "
            "(vllm/model_executor/models/config.py Qwen4ExpForConditionalGenerationConfig)",
        )
    if pp > 1 and geometry.model_type in SINGLE_STAGE_MODEL_TYPES:
        raise InvalidLayout(
            "pipeline_parallel_size",
            f"vLLM runs {geometry.model_type} without pipeline parallelism; use 1 "
            "(vllm/model_executor/models/config.py AliceAIForCausalLMConfig)",
        )
    if pp > geometry.decoder_layer_count:
        raise InvalidLayout(
            "pipeline_parallel_size", f"{pp} stages for {geometry.decoder_layer_count} layers"
        )
    if tp % dcp:
        raise InvalidLayout("decode_context_parallel_size", f"{dcp} must divide tensor_parallel_size {tp}")
    if geometry.sconv_kernel_size is not None:
        # Inkling: every layer's conv state keeps whole KV heads on each rank
        # (vllm/models/inkling/nvidia/sconv_swa_attn.py asserts tp_size <= num_kv_heads).
        for heads in {geometry.num_kv_heads, geometry.full_kv_heads or geometry.num_kv_heads}:
            if tp > heads or heads % tp:
                raise InvalidLayout(
                    "tensor_parallel_size",
                    f"Inkling's short-conv state shards whole KV heads: {tp} must divide the {heads} KV "
                    "heads of a layer (vLLM asserts tp_size <= num_kv_heads)",
                )
    if dcp > 1 and geometry.sliding_mla_dim is not None:
        # vllm/v1/kv_cache_interface.py SlidingWindowSpec.max_memory_usage_bytes asserts DCP 1.
        raise InvalidLayout(
            "decode_context_parallel_size",
            "sliding-window MLA layers (Dots3) do not take decode context parallel: vLLM asserts "
            "DCP 1 for sliding windows; use 1",
        )
    if dcp > 1 and geometry.indexer_layers:
        raise InvalidLayout(
            "decode_context_parallel_size",
            "MiniMax-M3's sparse attention does not return the softmax LSE that decode context "
            "parallel needs; vLLM refuses it (vllm/v1/worker/cp_utils.py); use 1",
        )


# Step5's DSA kernels: the local query heads a local KV group may have
# (vllm/models/step5/nvidia/model.py _validate_step5_dsa_parallel_geometry).
STEP5_DSA_Q_PER_KV = (4, 8, 16)


def _check_step5_dsa(geometry: Geometry, tp: int) -> None:
    """Step5's DSA kernels take 4, 8 or 16 local query heads per local KV group
    (vllm/models/step5/nvidia/model.py _validate_step5_dsa_parallel_geometry)."""
    kv = geometry.full_kv_heads or geometry.num_kv_heads
    local_kv = kv // tp if kv % tp == 0 else 1
    local_q = geometry.num_attention_heads // tp
    if local_q % local_kv or local_q // local_kv not in STEP5_DSA_Q_PER_KV:
        raise InvalidLayout(
            "tensor_parallel_size",
            f"{tp} leaves Step5's DSA layers {local_q} query heads for {local_kv} KV groups on a rank; "
            f"its DSA kernels take {', '.join(map(str, STEP5_DSA_Q_PER_KV))} query heads per KV group",
        )


def valid_tensor_sizes(geometry: Geometry, limit: int) -> list[int]:
    """Every TP size up to `limit` the heads allow."""
    out = []
    for tp in range(1, limit + 1):
        if geometry.attention_free:
            out.append(tp)
            continue
        if geometry.num_attention_heads % tp:
            continue
        kv = geometry.num_kv_heads
        if not geometry.is_mla and kv % tp and tp % kv:
            continue
        out.append(tp)
    return out


def kv_heads_per_gpu(geometry: Geometry, tp: int) -> int:
    """max(1, Hkv // TP); MLA keeps its single latent on every rank."""
    if geometry.is_mla:
        return 1
    return max(1, geometry.num_kv_heads // tp)


def kv_stage_ranges(geometry: Geometry, pp: int) -> tuple[tuple[int, int], ...]:
    """Per stage, the [start, end) of its entries in the layer pattern: the stages split the
    decoder layers, and each KV layer goes with its decoder layer."""
    if geometry.decoder_layers is None:
        return pp_stage_ranges(geometry.num_layers, pp)
    owners = geometry.decoder_layers
    return tuple(
        (bisect_left(owners, a), bisect_left(owners, b))
        for a, b in pp_stage_ranges(geometry.decoder_layer_count, pp)
    )


SRC_PP = "vllm/distributed/utils.py (get_pp_indices)"


def pp_stage_ranges(num_layers: int, pp: int) -> tuple[tuple[int, int], ...]:
    """Layer [start, end) per stage; remainder layers go to the stages before the last,
    counting back from the second-to-last (vllm/distributed/utils.py get_pp_indices)."""
    per = num_layers // pp
    parts = [per] * pp
    for i in range(2, num_layers % pp + 2):
        parts[-i] += 1
    ranges = []
    start = 0
    for n in parts:
        ranges.append((start, start + n))
        start += n
    return tuple(ranges)
