"""Fixture repos for the fake Hub, with real tensor names, shapes and dtypes.

Configs come from ``tests/hub/data/`` (copies of ``shared/data/hf-configs``; see ``data/README.md`` for how
exact each is). Tensor sets are derived from the configs following each checkpoint format:

- HF Llama/Qwen2/Qwen3 dense naming (``model.layers.{i}.self_attn.q_proj.weight`` ...);
- compressed-tensors ``float-quantized`` (FP8 per-channel: ``weight`` F8_E4M3 [out,in] + ``weight_scale`` BF16
  [out,1]) and ``pack-quantized`` (W4A16 group 128: ``weight_packed`` I32 [out,in/8], ``weight_scale`` BF16
  [out,in/128], ``weight_shape`` I64 [2]); lm_head stays BF16 (``ignore: ["lm_head"]``);
- AutoAWQ GEMM (``qweight`` I32 [in,out/8], ``qzeros`` I32 [in/128,out/8], ``scales`` F16 [in/128,out]);
- gpt-oss MXFP4 (experts ``*_blocks`` U8 [E,out,in/32,16] + ``*_scales`` U8 [E,out,in/32], BF16 biases,
  attention with biases and ``sinks``, ``mlp.router``);
- Qwen2.5-VL original checkpoint naming (``visual.*`` + ``model.*`` + ``lm_head``).

Shard counts and file names follow the real repos where known; which tensor lands in which shard is a greedy
split in model order (the real split differs, the set of tensors does not).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from tests.hub.fakehub import (
    FakeRepo,
    Shard,
    expected_bytes_by_dtype,
    expected_total_bytes,
)
from tests.hub.safetensors_header import nbytes

DATA = Path(__file__).parent / "data"

Tensors = dict[str, tuple[str, tuple[int, ...]]]

__all__ = [
    "ALL_REPOS",
    "AWQ",
    "FP8_DYNAMIC",
    "GATED",
    "GPT_OSS",
    "OVERSIZED_CONFIG",
    "OVERSIZED_HEADER",
    "PRIVATE",
    "QWEN3_8B_BASE",
    "QWEN3_SINGLE",
    "QWEN25_VL",
    "REPOS",
    "SLOW",
    "UNKNOWN_REPO_ID",
    "W4A16",
    "expected_bytes_by_dtype",
    "expected_total_bytes",
    "fake_sha",
    "load_config",
]


def load_config(name: str) -> dict[str, Any]:
    with open(DATA / name) as f:
        cfg: dict[str, Any] = json.load(f)
    return cfg


def fake_sha(repo_id: str) -> str:
    """A stable 40-hex commit id per repo."""
    return hashlib.sha1(f"fakehub:{repo_id}".encode()).hexdigest()


# ------------------------------------------------------------------------------------- tensor builders


def _linear(prefix: str, out: int, inp: int, scheme: str, dtype: str, bias: bool = False) -> Tensors:
    t: Tensors = {}
    if scheme == "dense":
        t[f"{prefix}.weight"] = (dtype, (out, inp))
    elif scheme == "fp8":  # compressed-tensors float-quantized, per-channel (strategy "channel")
        t[f"{prefix}.weight"] = ("F8_E4M3", (out, inp))
        t[f"{prefix}.weight_scale"] = (dtype, (out, 1))
    elif scheme == "w4a16":  # compressed-tensors pack-quantized, int4 symmetric, group 128
        t[f"{prefix}.weight_packed"] = ("I32", (out, inp // 8))
        t[f"{prefix}.weight_scale"] = (dtype, (out, inp // 128))
        t[f"{prefix}.weight_shape"] = ("I64", (2,))
    elif scheme == "awq":  # AutoAWQ GEMM: input-major packing, 8 int4 per int32
        t[f"{prefix}.qweight"] = ("I32", (inp, out // 8))
        t[f"{prefix}.qzeros"] = ("I32", (inp // 128, out // 8))
        t[f"{prefix}.scales"] = ("F16", (inp // 128, out))
    else:
        raise ValueError(scheme)
    if bias:
        t[f"{prefix}.bias"] = (dtype, (out,))
    return t


def decoder_tensors(
    cfg: dict[str, Any],
    *,
    scheme: str = "dense",
    dtype: str = "BF16",
    qk_norm: bool = False,
    qkv_bias: bool = False,
    prefix: str = "model",
    lm_head: bool | None = None,
) -> Tensors:
    """A Llama/Qwen2/Qwen3-style decoder as HF names it, linears per ``scheme`` (lm_head always ``dtype``)."""
    h = cfg["hidden_size"]
    heads = cfg["num_attention_heads"]
    kv = cfg.get("num_key_value_heads", heads)
    hd = cfg.get("head_dim") or h // heads
    inter = cfg["intermediate_size"]
    vocab = cfg["vocab_size"]
    t: Tensors = {f"{prefix}.embed_tokens.weight": (dtype, (vocab, h))}
    for i in range(cfg["num_hidden_layers"]):
        p = f"{prefix}.layers.{i}"
        t[f"{p}.input_layernorm.weight"] = (dtype, (h,))
        t.update(_linear(f"{p}.mlp.down_proj", h, inter, scheme, dtype))
        t.update(_linear(f"{p}.mlp.gate_proj", inter, h, scheme, dtype))
        t.update(_linear(f"{p}.mlp.up_proj", inter, h, scheme, dtype))
        t[f"{p}.post_attention_layernorm.weight"] = (dtype, (h,))
        t.update(_linear(f"{p}.self_attn.k_proj", kv * hd, h, scheme, dtype, bias=qkv_bias))
        if qk_norm:
            t[f"{p}.self_attn.k_norm.weight"] = (dtype, (hd,))
        t.update(_linear(f"{p}.self_attn.o_proj", h, heads * hd, scheme, dtype))
        t.update(_linear(f"{p}.self_attn.q_proj", heads * hd, h, scheme, dtype, bias=qkv_bias))
        if qk_norm:
            t[f"{p}.self_attn.q_norm.weight"] = (dtype, (hd,))
        t.update(_linear(f"{p}.self_attn.v_proj", kv * hd, h, scheme, dtype, bias=qkv_bias))
    t[f"{prefix}.norm.weight"] = (dtype, (h,))
    if lm_head if lm_head is not None else not cfg.get("tie_word_embeddings", False):
        t["lm_head.weight"] = (dtype, (vocab, h))
    return t


def gpt_oss_tensors(cfg: dict[str, Any]) -> Tensors:
    """openai/gpt-oss: MXFP4 experts (U8 blocks, 32 fp4 = 16 bytes; U8 e8m0 scales), BF16 rest."""
    keys = ("hidden_size", "num_attention_heads", "num_key_value_heads", "head_dim", "intermediate_size")
    h, heads, kv, hd, inter = (cfg[k] for k in keys)
    experts, vocab, bf = cfg["num_local_experts"], cfg["vocab_size"], "BF16"
    t: Tensors = {"model.embed_tokens.weight": (bf, (vocab, h))}
    for i in range(cfg["num_hidden_layers"]):
        p = f"model.layers.{i}"
        t[f"{p}.input_layernorm.weight"] = (bf, (h,))
        t[f"{p}.mlp.experts.down_proj_bias"] = (bf, (experts, h))
        t[f"{p}.mlp.experts.down_proj_blocks"] = ("U8", (experts, h, inter // 32, 16))
        t[f"{p}.mlp.experts.down_proj_scales"] = ("U8", (experts, h, inter // 32))
        t[f"{p}.mlp.experts.gate_up_proj_bias"] = (bf, (experts, 2 * inter))
        t[f"{p}.mlp.experts.gate_up_proj_blocks"] = ("U8", (experts, 2 * inter, h // 32, 16))
        t[f"{p}.mlp.experts.gate_up_proj_scales"] = ("U8", (experts, 2 * inter, h // 32))
        t[f"{p}.mlp.router.bias"] = (bf, (experts,))
        t[f"{p}.mlp.router.weight"] = (bf, (experts, h))
        t[f"{p}.post_attention_layernorm.weight"] = (bf, (h,))
        t.update(_linear(f"{p}.self_attn.k_proj", kv * hd, h, "dense", bf, bias=True))
        t.update(_linear(f"{p}.self_attn.o_proj", h, heads * hd, "dense", bf, bias=True))
        t.update(_linear(f"{p}.self_attn.q_proj", heads * hd, h, "dense", bf, bias=True))
        t[f"{p}.self_attn.sinks"] = (bf, (heads,))
        t.update(_linear(f"{p}.self_attn.v_proj", kv * hd, h, "dense", bf, bias=True))
    t["model.norm.weight"] = (bf, (h,))
    t["lm_head.weight"] = (bf, (vocab, h))
    return t


def qwen25_vl_tensors(cfg: dict[str, Any]) -> Tensors:
    """Qwen2.5-VL as its checkpoint names it: ``visual.*`` (ViT + merger), then the Qwen2 LM."""
    v = cfg["vision_config"]
    vh = v["hidden_size"]
    vi = v["intermediate_size"]
    merged = vh * v["spatial_merge_size"] ** 2
    bf = "BF16"
    t: Tensors = {
        "visual.patch_embed.proj.weight": (
            bf,
            (vh, v["in_chans"], v["temporal_patch_size"], v["patch_size"], v["patch_size"]),
        )
    }
    for i in range(v["depth"]):
        p = f"visual.blocks.{i}"
        t.update(_linear(f"{p}.attn.proj", vh, vh, "dense", bf, bias=True))
        t.update(_linear(f"{p}.attn.qkv", 3 * vh, vh, "dense", bf, bias=True))
        t.update(_linear(f"{p}.mlp.down_proj", vh, vi, "dense", bf, bias=True))
        t.update(_linear(f"{p}.mlp.gate_proj", vi, vh, "dense", bf, bias=True))
        t.update(_linear(f"{p}.mlp.up_proj", vi, vh, "dense", bf, bias=True))
        t[f"{p}.norm1.weight"] = (bf, (vh,))
        t[f"{p}.norm2.weight"] = (bf, (vh,))
    t["visual.merger.ln_q.weight"] = (bf, (vh,))
    t.update(_linear("visual.merger.mlp.0", merged, merged, "dense", bf, bias=True))
    t.update(_linear("visual.merger.mlp.2", v["out_hidden_size"], merged, "dense", bf, bias=True))
    t.update(decoder_tensors(cfg, qkv_bias=True))
    return t


def split_shards(
    tensors: Tensors,
    n: int,
    name: str = "model-{i:05d}-of-{n:05d}.safetensors",
    first: int = 1,
    last: int | None = None,
) -> tuple[Shard, ...]:
    """Greedy split in insertion (model) order into ``n`` shards of about equal bytes."""
    total = sum(nbytes(d, s) for d, s in tensors.values())
    target = total / n
    groups: list[Tensors] = [{}]
    acc = 0
    for tname, (dtype, shape) in tensors.items():
        size = nbytes(dtype, shape)
        if groups[-1] and acc + size / 2 > target * len(groups) and len(groups) < n:
            groups.append({})
        groups[-1][tname] = (dtype, shape)
        acc += size
    while len(groups) < n:  # degenerate tiny inputs
        groups.append({})
    last_idx = last if last is not None else n
    return tuple(Shard(name.format(i=first + k, n=last_idx), g) for k, g in enumerate(groups))


def single_file(tensors: Tensors) -> tuple[Shard, ...]:
    return (Shard("model.safetensors", tensors),)


def _with_quant(cfg: dict[str, Any], qc: dict[str, Any], **extra: Any) -> dict[str, Any]:
    out = {**cfg, **extra}
    out["quantization_config"] = qc
    return out


def _ct_scheme(weights: dict[str, Any], inputs: dict[str, Any] | None, fmt: str) -> dict[str, Any]:
    """A compressed-tensors quantization_config as llm-compressor writes it (Linear group, no lm_head)."""
    base: dict[str, Any] = {
        "actorder": None,
        "block_structure": None,
        "dynamic": False,
        "group_size": None,
        "observer": "minmax",
        "observer_kwargs": {},
        "symmetric": True,
    }
    return {
        "config_groups": {
            "group_0": {
                "input_activations": inputs,
                "output_activations": None,
                "targets": ["Linear"],
                "weights": {**base, **weights},
            }
        },
        "format": fmt,
        "global_compression_ratio": None,
        "ignore": ["lm_head"],
        "kv_cache_scheme": None,
        "quant_method": "compressed-tensors",
        "quantization_status": "compressed",
    }


FP8_DYNAMIC_QC = _ct_scheme(
    {"num_bits": 8, "strategy": "channel", "type": "float"},
    {
        "actorder": None,
        "block_structure": None,
        "dynamic": True,
        "group_size": None,
        "num_bits": 8,
        "observer": None,
        "observer_kwargs": {},
        "strategy": "token",
        "symmetric": True,
        "type": "float",
    },
    "float-quantized",
)
W4A16_QC = _ct_scheme(
    {"num_bits": 4, "strategy": "group", "group_size": 128, "type": "int"}, None, "pack-quantized"
)
AWQ_QC = {
    "bits": 4,
    "group_size": 128,
    "modules_to_not_convert": None,
    "quant_method": "awq",
    "version": "gemm",
    "zero_point": True,
}


# ------------------------------------------------------------------------------------------- the repos

_QWEN3_8B = load_config("Qwen--Qwen3-8B.json")
_QWEN3_06B = load_config("Qwen--Qwen3-0.6B.json")

# Qwen3-8B-Base served with Qwen3-8B's config (same geometry; the Base repo's own config differs only in
# bookkeeping such as max_position_embeddings, which is not in shared/).
QWEN3_8B_BASE = FakeRepo(
    repo_id="Qwen/Qwen3-8B-Base",
    sha=fake_sha("Qwen/Qwen3-8B-Base"),
    config=_QWEN3_8B,
    shards=split_shards(decoder_tensors(_QWEN3_8B, qk_norm=True), 5),
)

# Single-file safetensors. The Qwen3-0.6B file stores lm_head.weight although tie_word_embeddings is true
# (the Hub lists ~752M safetensors params for it); kept so as to exercise "tied in config, present in file".
QWEN3_SINGLE = FakeRepo(
    repo_id="Qwen/Qwen3-0.6B",
    sha=fake_sha("Qwen/Qwen3-0.6B"),
    config=_QWEN3_06B,
    shards=single_file(decoder_tensors(_QWEN3_06B, qk_norm=True, lm_head=True)),
)

FP8_DYNAMIC = FakeRepo(
    repo_id="RedHatAI/Qwen3-8B-FP8-dynamic",
    sha=fake_sha("RedHatAI/Qwen3-8B-FP8-dynamic"),
    config=_with_quant(_QWEN3_8B, FP8_DYNAMIC_QC),
    shards=split_shards(decoder_tensors(_QWEN3_8B, scheme="fp8", qk_norm=True), 2),
)

W4A16 = FakeRepo(
    repo_id="RedHatAI/Qwen3-8B-quantized.w4a16",
    sha=fake_sha("RedHatAI/Qwen3-8B-quantized.w4a16"),
    config=_with_quant(_QWEN3_8B, W4A16_QC),
    shards=split_shards(decoder_tensors(_QWEN3_8B, scheme="w4a16", qk_norm=True), 2),
)

AWQ = FakeRepo(
    repo_id="Qwen/Qwen3-8B-AWQ",
    sha=fake_sha("Qwen/Qwen3-8B-AWQ"),
    config=_with_quant(_QWEN3_8B, AWQ_QC, torch_dtype="float16"),
    shards=split_shards(decoder_tensors(_QWEN3_8B, scheme="awq", dtype="F16", qk_norm=True), 2),
)

_GPT_OSS = load_config("openai--gpt-oss-20b.json")
GPT_OSS = FakeRepo(
    repo_id="openai/gpt-oss-20b",
    sha=fake_sha("openai/gpt-oss-20b"),
    config=_GPT_OSS,
    # the real repo numbers its 3 shards from 0: model-00000-of-00002 .. model-00002-of-00002
    shards=split_shards(gpt_oss_tensors(_GPT_OSS), 3, first=0, last=2),
)

_QWEN25_VL = load_config("Qwen--Qwen2.5-VL-7B-Instruct.json")
QWEN25_VL = FakeRepo(
    repo_id="Qwen/Qwen2.5-VL-7B-Instruct",
    sha=fake_sha("Qwen/Qwen2.5-VL-7B-Instruct"),
    config=_QWEN25_VL,
    shards=split_shards(qwen25_vl_tensors(_QWEN25_VL), 5),
    pipeline_tag="image-text-to-text",
)

_LLAMA = load_config("meta-llama--Llama-3.1-8B-Instruct.json")
GATED = FakeRepo(
    repo_id="meta-llama/Llama-3.1-8B-Instruct",
    sha=fake_sha("meta-llama/Llama-3.1-8B-Instruct"),
    config=_LLAMA,
    shards=split_shards(decoder_tensors(_LLAMA), 4),
    gated="manual",
)

# Behaviour repos (small Qwen3-0.6B content).


def _behaviour_repo(name: str, **behaviour: Any) -> FakeRepo:
    """kvplan-test/<name>: Qwen3-0.6B's config and weights in a repo with one behaviour of a
    real hub (slow, oversized, private)."""
    repo_id = f"kvplan-test/{name}"
    return FakeRepo(
        repo_id=repo_id, sha=fake_sha(repo_id), config=_QWEN3_06B, shards=QWEN3_SINGLE.shards, **behaviour
    )


SLOW = _behaviour_repo("slow-model", slow=2.0)
OVERSIZED_CONFIG = _behaviour_repo("oversized-config", oversized_config_bytes=100 * 1024 * 1024)
OVERSIZED_HEADER = _behaviour_repo("oversized-header", oversized_header_bytes=100 * 1024 * 1024)
PRIVATE = _behaviour_repo("private-model", private=True)

UNKNOWN_REPO_ID = "kvplan-test/does-not-exist"

ALL_REPOS: tuple[FakeRepo, ...] = (
    QWEN3_8B_BASE,
    QWEN3_SINGLE,
    FP8_DYNAMIC,
    W4A16,
    AWQ,
    GPT_OSS,
    QWEN25_VL,
    GATED,
    SLOW,
    OVERSIZED_CONFIG,
    OVERSIZED_HEADER,
    PRIVATE,
)
REPOS: dict[str, FakeRepo] = {r.repo_id: r for r in ALL_REPOS}


def repos(*ids: str) -> Iterable[FakeRepo]:
    return [REPOS[i] for i in ids]
