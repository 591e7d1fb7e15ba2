"""Weights as vLLM loads them, from a checkpoint's tensor list (the safetensors headers): the
bytes each tensor holds as stored, packed int4, fp8, scales and zeros included
(docs/vllm-rules.md §2.2)."""

from __future__ import annotations

import re
from collections.abc import Iterable

import msgspec

from ..errors import InvalidInput

# Bytes per element of each safetensors dtype. Packed formats (int4 in I32, MXFP4 blocks in U8)
# are stored as their container dtype, so the stored bytes are exact.
SAFETENSORS_DTYPE_BYTES: dict[str, int] = {
    "F64": 8, "F32": 4, "F16": 2, "BF16": 2,
    "F8_E4M3": 1, "F8_E5M2": 1, "F8_E8M0": 1,
    "I64": 8, "I32": 4, "I16": 2, "I8": 1,
    "U64": 8, "U32": 4, "U16": 2, "U8": 1, "BOOL": 1,
}  # fmt: skip

# Tensors of routed experts (their bytes sit on the expert-parallel side of a layout).
_EXPERT = re.compile(r"\.experts\.|\.experts_|\.block_sparse_moe\.experts")
# Multi-token-prediction heads load only with speculative decoding (vLLM skips them otherwise).
_MTP = re.compile(r"(^|\.)mtp\.|^model\.mtp")
# A vision tower and its projector, as the models name them (Qwen-VL `visual`, LLaVA, Gemma-3 and
# Mistral-3 `vision_tower` + `multi_modal_projector`, Llama-4 and InternVL `vision_model`, Pixtral
# `vision_encoder` + `vision_language_adapter`, InternVL's projector `mlp1`).
_TOWER = re.compile(
    r"^(?:model\.)?(?:visual|vision_tower|vision_model|vision_encoder|multi_modal_projector|mm_projector|"
    r"vision_language_adapter|mlp1|embed_vision)\."
)
# A decoder layer of the language model (not of a vision or audio tower).
_LM_LAYER = re.compile(r"^(?:model\.|language_model\.model\.|model\.language_model\.)layers\.(\d+)\.")


# Tensors every tensor-parallel rank holds whole (vLLM builds them as ReplicatedLinear or norms):
# norms, MoE routers and shared-expert gates, MLA's down-projections, and the biases of
# row-parallel layers. Mamba2's gated norm is the exception: it is sharded with its heads
# (vllm/model_executor/layers/mamba/mamba_mixer2.py Mixer2RMSNormGated).
_REPLICATED = re.compile(
    r"(?<!mixer\.)norm\.|norm$|layernorm|\.(mlp|block_sparse_moe)\.gate\.(weight|bias)$|router\.|"
    r"shared_expert_gate\.|e_score_correction_bias|"
    r"kv_a_proj_with_mqa\.|q_a_proj\.|(o_proj|down_proj|dense|out_proj)\.bias$"
)
# K and V projections: sharded by KV head, so TP beyond the KV heads replicates them.
_KV_PROJ = re.compile(r"\.(k_proj|v_proj)\.")
# Q, K and V in one tensor (Phi-3, Falcon, GPT-NeoX): its K/V rows behave as above.
_QKV_FUSED = re.compile(r"\.(qkv_proj|query_key_value)\.")


class LoadedWeights(msgspec.Struct, frozen=True, kw_only=True):
    """Bytes of the weights a checkpoint loads: in all, of routed experts, and by stored dtype;
    of them, what every TP rank holds whole and what K/V projections take."""

    total_bytes: int
    expert_bytes: int
    replicated_bytes: int = 0
    kv_proj_bytes: int = 0
    qkv_fused_bytes: int = 0
    tower_bytes: int = 0  # the vision tower and its projector (counted in total_bytes)
    tower_replicated_bytes: int = 0  # of them, what every TP rank holds whole (in replicated_bytes)
    bytes_by_dtype: tuple[tuple[str, int], ...]  # (dtype, bytes), a tuple so geometries hash
    tensors: int
    skipped_tensors: int
    source: str


def loaded_weights(
    tensors: Iterable[tuple[str, str, int]], num_hidden_layers: int | None, source: str
) -> LoadedWeights:
    """From (name, safetensors dtype, elements) of every tensor. Layers past the language
    model's num_hidden_layers (DeepSeek's appended MTP layer) and `mtp.` heads are skipped, as
    vLLM does without speculative decoding; vision and audio towers are counted."""
    total = expert = count = skipped = replicated = kv_proj = qkv = tower = tower_replicated = 0
    by_dtype: dict[str, int] = {}
    for name, dtype, numel in tensors:
        size = SAFETENSORS_DTYPE_BYTES.get(dtype)
        if size is None:
            raise InvalidInput("model", f"tensor {name!r} has a dtype kvplan does not know: {dtype!r}")
        layer = _LM_LAYER.match(name)
        index = int(layer.group(1)) if layer is not None else -1
        beyond = num_hidden_layers is not None and index >= num_hidden_layers
        if _MTP.search(name) or beyond:
            skipped += 1
            continue
        nbytes = numel * size
        total += nbytes
        count += 1
        by_dtype[dtype] = by_dtype.get(dtype, 0) + nbytes
        if _EXPERT.search(name):
            expert += nbytes
        in_tower = _TOWER.match(name) is not None
        tower += nbytes if in_tower else 0
        if _REPLICATED.search(name):
            replicated += nbytes
            tower_replicated += nbytes if in_tower else 0
        elif _KV_PROJ.search(name):
            kv_proj += nbytes
        elif _QKV_FUSED.search(name):
            qkv += nbytes
    return LoadedWeights(
        total_bytes=total,
        expert_bytes=expert,
        replicated_bytes=replicated,
        kv_proj_bytes=kv_proj,
        qkv_fused_bytes=qkv,
        tower_bytes=tower,
        tower_replicated_bytes=tower_replicated,
        bytes_by_dtype=tuple(sorted(by_dtype.items())),
        tensors=count,
        skipped_tensors=skipped,
        source=source,
    )


def bytes_per_rank(w: LoadedWeights, tensor: int, pipeline: int, q_heads: int, kv_heads: int) -> int:
    """One GPU's share: sharded tensors split over TP, replicated ones whole on every rank, K/V
    projections split over at most the KV heads (vllm/model_executor/layers/linear.py
    QKVParallelLinear replicates heads when TP exceeds them; a fused QKV tensor's K/V rows are
    2·kv of its q + 2·kv heads); then an even split over pipeline stages (where embeddings and the
    head sit is not modelled)."""
    kv_shards = max(1, min(tensor, kv_heads))
    fused_kv = w.qkv_fused_bytes * 2 * kv_heads // max(1, q_heads + 2 * kv_heads)
    kv = w.kv_proj_bytes + fused_kv
    sharded = w.total_bytes - w.replicated_bytes - kv
    rank = -(-sharded // tensor) + w.replicated_bytes + -(-kv // kv_shards)
    return -(-rank // pipeline)
