"""Bytes per parameter of a quantized checkpoint's linear layers, read from its
`quantization_config`, for when its tensors cannot be listed (no safetensors, or a config sent
inline): the packed weights plus the scales and zero points each format stores
(docs/vllm-rules.md §2.2). Embeddings, the LM head and norms keep the model dtype."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import msgspec

from ..errors import InvalidConfig
from ..validate import Wording, integer

SCALE_BYTES = 2  # bf16 / fp16 scales, as llm-compressor, AutoAWQ and GPTQ store them
FP32_SCALE_BYTES = 4


class QuantScheme(msgspec.Struct, frozen=True):
    """Bytes a quantized linear parameter takes, as the exact fraction num / den."""

    name: str
    num: int
    den: int


def _bits(v: Any, field: str) -> int:
    if v not in (2, 3, 4, 8):
        raise InvalidConfig(field, f"must be 2, 3, 4 or 8 bits, got {v!r}")
    return int(v)


PER_CHANNEL = -1  # GPTQ's and AWQ's group_size for one scale a row


_GROUP = Wording(*(["must be a positive group size (or -1, per channel), got {value!r}"] * 4))


def _group(v: Any, field: str) -> int:
    group = integer(v, field, 1 << 20, PER_CHANNEL, InvalidConfig, _GROUP)
    if group == 0:
        raise InvalidConfig(field, _GROUP.below.format(value=v))
    return group


def _grouped(name: str, bits: int, group: int, zero_bits: int, scale_bytes: int = SCALE_BYTES) -> QuantScheme:
    """bits a weight, plus a scale of scale_bytes and a zero point of zero_bits a group. Per
    channel, one scale a row of thousands: a negligible share."""
    if group == PER_CHANNEL:
        return QuantScheme(f"{name.rsplit(' ', 1)[0]} per channel", bits, 8)
    return QuantScheme(name, bits * group + 8 * scale_bytes + zero_bits, 8 * group)


def quant_scheme(config: Mapping[str, Any]) -> QuantScheme | None:
    """The scheme of `quantization_config`, or None when it has none kvplan reads (then the
    weights are parameters × the weight dtype, as before)."""
    q = config.get("quantization_config")
    if not isinstance(q, Mapping):
        return None
    method = str(q.get("quant_method", "")).lower()
    if method in ("awq", "gptq"):
        bits = _bits(q.get("bits", 4), "quantization_config.bits")
        group = _group(q.get("group_size", 128), "quantization_config.group_size")
        # Both keep a packed zero point a group (qzeros): GPTQ stores it even when symmetric.
        return _grouped(f"{method} int{bits} g{group}", bits, group, bits)
    if method == "fp8":
        block = q.get("weight_block_size")
        if isinstance(block, list) and len(block) == 2 and all(isinstance(b, int) and b > 0 for b in block):
            area = block[0] * block[1]  # one fp32 scale a block (DeepSeek-V3's 128 × 128)
            return QuantScheme(f"fp8 block {block[0]}×{block[1]}", area + FP32_SCALE_BYTES, area)
        return QuantScheme("fp8 per tensor", 1, 1)
    if method == "compressed-tensors":
        groups = q.get("config_groups")
        if not isinstance(groups, Mapping) or not groups:
            return None
        first = next(iter(groups.values()))
        w = first.get("weights") if isinstance(first, Mapping) else None
        if not isinstance(w, Mapping):
            return None
        bits = _bits(w.get("num_bits"), "quantization_config.config_groups.weights.num_bits")
        strategy = str(w.get("strategy", "tensor"))
        kind = "fp" if w.get("type") == "float" else "int"
        if strategy in ("group", "tensor_group"):
            group = _group(w.get("group_size"), "quantization_config.config_groups.weights.group_size")
            zero = 0 if w.get("symmetric", True) else bits
            # tensor_group (NVFP4): an fp8 scale a group under one fp32 scale a tensor.
            scale = 1 if strategy == "tensor_group" else SCALE_BYTES
            return _grouped(f"compressed-tensors {kind}{bits} {strategy} {group}", bits, group, zero, scale)
        # Per channel or per tensor: one scale a row or a matrix, a negligible share.
        return QuantScheme(f"compressed-tensors {kind}{bits} {strategy}", bits, 8)
    if method == "modelopt":  # NVIDIA ModelOpt checkpoints (hf_quant_config folded into config.json)
        algo = str(q.get("quant_algo", "")).upper()
        if algo == "FP8":
            return QuantScheme("modelopt fp8", 1, 1)
        if algo == "NVFP4":
            group = _group(q.get("group_size", 16), "quantization_config.group_size")
            return _grouped(f"modelopt nvfp4 g{group}", 4, group, 0, 1)
        return None
    if method == "bitsandbytes":
        if q.get("load_in_4bit"):
            return QuantScheme("bitsandbytes nf4", 4 * 64 + 8 * FP32_SCALE_BYTES, 8 * 64)  # absmax a 64
        if q.get("load_in_8bit"):
            return QuantScheme("bitsandbytes int8", 1, 1)
    return None


# vLLM's --quantization for a checkpoint whose config does not state one: the
# quantization_config each implies (AWQ and GPTQ as their common 4-bit, group-128 form).
QUANTIZATION_ARGS: dict[str, dict[str, Any]] = {
    "fp8": {"quant_method": "fp8"},  # online dynamic: per-tensor scales
    "awq": {"quant_method": "awq", "bits": 4, "group_size": 128},
    "gptq": {"quant_method": "gptq", "bits": 4, "group_size": 128},
    "bitsandbytes": {"quant_method": "bitsandbytes", "load_in_4bit": True},
    "modelopt": {"quant_method": "modelopt", "quant_algo": "FP8"},  # ModelOpt's FP8 checkpoints
    "modelopt_fp4": {"quant_method": "modelopt", "quant_algo": "NVFP4", "group_size": 16},
}


def quantization_arg(name: str) -> QuantScheme:
    """The scheme of `--quantization name` (a key of QUANTIZATION_ARGS)."""
    scheme = quant_scheme({"quantization_config": QUANTIZATION_ARGS[name]})
    assert scheme is not None
    return scheme
