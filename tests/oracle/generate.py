"""Regenerate the oracle regression cases: vLLM's own planner (the oracle in
../shared/tools/vllm-oracle, vLLM 0.33.0 on CPU) run on real config.json files, written as
plain data that `make test` asserts kvplan against (tests/core/test_oracle_cases.py).

    make oracle                      # needs the oracle installed: install_lean.sh DIR
    ORACLE_PYTHON=DIR/venv-lean/bin/python ORACLE_DIR=../shared/tools/vllm-oracle make oracle

    ORACLE_ONLY=kimi make oracle     # only the cases whose name holds "kimi"; the rest are kept

Not part of `make test`: it needs a 2 GB install and runs for minutes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
CONFIGS = HERE.parent / "core" / "data" / "hf-configs"
OUT = HERE / "cases-vllm-0.33.0.json"
GiB = 1 << 30

SCOUT = "meta-llama--Llama-4-Scout-17B-16E-Instruct.json"
DEEPSEEK_V3 = "deepseek-ai--DeepSeek-V3.json"
COMMAND_R7B_MTP2 = "synthetic--command-r7b-mtp2-shaped.json"
MTP1 = {"method": "mtp", "num_speculative_tokens": 1}
MTP2 = {"method": "mtp", "num_speculative_tokens": 2}
NGRAM4 = {"method": "ngram", "num_speculative_tokens": 4}
# An EAGLE-3 head of one Llama layer with Command-R7B's KV page (8 KV heads of 128), as
# llama_eagle3.py builds it: its full-attention layer joins the target's 8.
EAGLE3_R7B = {
    "method": "eagle3",
    "num_speculative_tokens": 3,
    "draft_hf_config": {
        "architectures": ["LlamaForCausalLMEagle3"],
        "model_type": "llama",
        "hidden_size": 4096,
        "intermediate_size": 14336,
        "num_attention_heads": 32,
        "num_key_value_heads": 8,
        "num_hidden_layers": 1,
        "vocab_size": 256000,
        "draft_vocab_size": 32000,
        "torch_dtype": "bfloat16",
    },
}
MAVERICK = "meta-llama--Llama-4-Maverick-17B-128E-Instruct.json"
JAMBA = "ai21labs--AI21-Jamba-1.5-Mini.json"
QWEN3_NEXT = "Qwen--Qwen3-Next-80B-A3B-Instruct.json"
GRANITE_H = "ibm-granite--granite-4.0-h-small.json"
COMMAND_R7B = "CohereForAI--c4ai-command-r7b-12-2024.json"
FALCON_7B = "tiiuae--falcon-7b.json"
FALCON_H1 = "tiiuae--Falcon-H1-7B-Instruct.json"
NEMOTRON_H = "synthetic--nemotron-h-8b-shaped.json"
QWEN36 = "Qwen--Qwen3.6-35B-A3B.json"
FALCON_MAMBA = "synthetic--falcon-mamba-7b-shaped.json"
MAMBA2 = "synthetic--mamba2-codestral-shaped.json"
LFM2 = "synthetic--lfm2-1.2b-shaped.json"
OLMO_HYBRID = "synthetic--olmo-hybrid-defaults.json"
LFM2_MOE = "synthetic--lfm2-moe-defaults.json"
KIMI_LINEAR = "synthetic--kimi-linear-48b-shaped.json"
RING_25 = "synthetic--ring-2.5-1t-shaped.json"
BAILING_DEFAULTS = "synthetic--bailing-hybrid-defaults.json"
ZAMBA2 = "synthetic--zamba2-2.7b-shaped.json"
ZAMBA2_DEFAULTS = "synthetic--zamba2-defaults.json"
MINICPM_V46 = "synthetic--minicpm-v-4.6-defaults.json"
BAILING_V3 = "synthetic--bailing-v3-shaped.json"
ALICE_AI = "synthetic--alice-ai-shaped.json"
BEAM = "synthetic--beam-shaped.json"
FLINT = "synthetic--flint-shaped.json"
FLINT_DEFAULTS = "synthetic--flint-defaults.json"
GEMMA3N = "synthetic--gemma-3n-defaults.json"
GEMMA4 = "synthetic--gemma-4-defaults.json"
GEMMA4_SHARED = "synthetic--gemma-4-shared-shaped.json"
HY_V4_DEFAULTS = "synthetic--hy-v4-defaults.json"
STEP35 = "synthetic--step-3.5-shaped.json"
HY_V4_SPARSE = "synthetic--hy-v4-sparse-shaped.json"
MINIMAX_M3_DEFAULTS = "synthetic--minimax-m3-defaults.json"
MINIMAX_M3 = "synthetic--minimax-m3-shaped.json"
INKLING_DEFAULTS = "synthetic--inkling-defaults.json"
INKLING = "synthetic--inkling-shaped.json"
INKLING_7 = "synthetic--inkling-7-layers.json"
KIMI_K3 = "synthetic--kimi-k3-shaped.json"
KIMI_K3_DEFAULTS = "synthetic--kimi-k3-defaults.json"
GLM5_NEXT = "synthetic--glm-5-next-defaults.json"
GLM5_NEXT_VL = "synthetic--glm-5-next-vl-shaped.json"
MUSE_SPARK = "synthetic--muse-spark-shaped.json"
DOTS3 = "synthetic--dots3-note-shaped.json"
DOTS3_UNEVEN = "synthetic--dots3-note-uneven-shaped.json"
HY_V4_SHARED = "synthetic--hy-v4-sparse-shared-shaped.json"
DOTS3_ALL_SPARSE = "synthetic--dots3-note-all-sparse-shaped.json"
DOTS3_INDEXCACHE = "synthetic--dots3-note-indexcache-shaped.json"
HY_V4_MIXED = "synthetic--hy-v4-mixed-shaped.json"
HY_V4_NOSINK = "synthetic--hy-v4-sparse-nosink-shaped.json"
STEP5 = "synthetic--step5-shaped.json"
STEP5_DEFAULTS = "synthetic--step5-defaults.json"
STEP5_DENSE = "synthetic--step5-dense-sliding.json"
STEP5_VL = "synthetic--step5-vl-shaped.json"
QWEN4_EXP_DEFAULTS = "synthetic--qwen4-exp-defaults.json"
QWEN4_EXP = "synthetic--qwen4-exp-shaped.json"
QWEN4_EXP_QSA = "synthetic--qwen4-exp-qsa-shaped.json"
QWEN4_EXP_QSA_VL = "synthetic--qwen4-exp-qsa-vl-shaped.json"
QWEN4_EXP_PLE = "synthetic--qwen4-exp-ple-defaults.json"
QWEN4_EXP_QSA_PLE = "synthetic--qwen4-exp-qsa-ple-shaped.json"
QWEN4_EXP_QSA_PLE_42 = "synthetic--qwen4-exp-qsa-ple-42-shaped.json"
DSV4_FLASH = "synthetic--deepseek-v4-flash-shaped.json"
DSV4_DEFAULTS = "synthetic--deepseek-v4-defaults.json"
DSV4_NO_HCA = "synthetic--deepseek-v4-no-hca-shaped.json"
DSV4_SLIDING = "synthetic--deepseek-v4-sliding-shaped.json"
DSV41 = "synthetic--deepseek-v4.1-shaped.json"
H100 = "NVIDIA H100 80GB HBM3"
A100 = "NVIDIA A100-SXM4-80GB"
L40S = "NVIDIA L40S"

# Keys changed in a config before both planners read it, where a copy differs from what vLLM
# 0.33.0 accepts: falcon-7b's original RW architecture name was dropped in vLLM 0.28 (the Hub
# file now names FalconForCausalLM). It does not change the KV geometry.
OVERRIDES: dict[str, dict[str, object]] = {
    FALCON_7B: {"architectures": ["FalconForCausalLM"], "model_type": "falcon"},
}
# vLLM's multimodal model files import torchvision (through transformers' image processors),
# whose PyPI wheels do not match the oracle's CPU torch: an import-only stand-in is put on the
# oracle's PYTHONPATH (tests/oracle/stubs), so multimodal configs are planned whole.
STUBS = HERE / "stubs"
# The Scout mirror's attn_temperature_tuning is an int where transformers 5 wants a bool (no KV
# effect): the oracle gets the bool.
ORACLE_ONLY = {SCOUT: {"text_config": {"attn_temperature_tuning": True}},
               MAVERICK: {"text_config": {"attn_temperature_tuning": True}}}  # fmt: skip


def oracle_view(name: str, cfg: dict[str, object]) -> dict[str, object]:
    return _apply(cfg, ORACLE_ONLY.get(name, {}))


def _apply(cfg: dict[str, object], changes: dict[str, object]) -> dict[str, object]:
    """cfg with changes applied (nested one level for text_config)."""
    out = dict(cfg)
    for key, value in changes.items():
        current = out.get(key)
        out[key] = {**current, **value} if isinstance(value, dict) and isinstance(current, dict) else value
    return out


def load_config(name: str) -> dict[str, object]:
    """A config file with its OVERRIDES applied (nested one level for text_config)."""
    return _apply(json.loads((CONFIGS / name).read_text()), OVERRIDES.get(name, {}))


# (name, config file, planner inputs). Inputs use the oracle's names; kv dtype "auto" is the
# model dtype. Each family gets its default layout and the variations its rules turn on.
SCENARIOS: list[tuple[str, str, dict[str, object]]] = [
    ("scout-32k-40gib", SCOUT, {"available_memory_bytes": 40 * GiB, "max_model_len": 32768}),
    ("scout-128k-tp4-fp8", SCOUT, {"available_memory_bytes": 50 * GiB, "max_model_len": 131072,
                                   "tensor_parallel_size": 4, "dtype": "fp8"}),
    ("scout-8k-block32-mnbt2048", SCOUT, {"available_memory_bytes": 12 * GiB, "max_model_len": 8192,
                                          "block_size": 32, "max_num_batched_tokens": 2048}),
    ("scout-1m-tp8", SCOUT, {"available_memory_bytes": 20 * GiB, "max_model_len": 1048576,
                                       "tensor_parallel_size": 8}),
    ("maverick-64k-tp8", MAVERICK, {"available_memory_bytes": 30 * GiB, "max_model_len": 65536,
                                    "tensor_parallel_size": 8}),
    ("jamba-mini-32k", JAMBA, {"available_memory_bytes": 40 * GiB, "max_model_len": 32768}),
    ("jamba-mini-256k-tp2", JAMBA, {"available_memory_bytes": 60 * GiB, "max_model_len": 262144,
                                    "tensor_parallel_size": 2}),
    ("jamba-mini-16k-block64-fp8", JAMBA, {"available_memory_bytes": 20 * GiB, "max_model_len": 16384,
                                           "block_size": 64, "dtype": "fp8"}),
    ("qwen3-next-32k", QWEN3_NEXT, {"available_memory_bytes": 40 * GiB, "max_model_len": 32768}),
    ("qwen3-next-8k-tp4", QWEN3_NEXT, {"available_memory_bytes": 30 * GiB, "max_model_len": 8192,
                                       "tensor_parallel_size": 4}),
    ("qwen3-next-256k-tp2-fp8", QWEN3_NEXT, {"available_memory_bytes": 45 * GiB, "max_model_len": 262144,
                                             "tensor_parallel_size": 2, "dtype": "fp8"}),
    ("qwen3-next-4k-block64", QWEN3_NEXT, {"available_memory_bytes": 10 * GiB, "max_model_len": 4096,
                                           "block_size": 64}),
    ("qwen3.6-35b-a3b-64k", QWEN36, {"available_memory_bytes": 30 * GiB, "max_model_len": 65536}),
    ("qwen3.6-35b-a3b-256k-tp2-fp8", QWEN36, {"available_memory_bytes": 25 * GiB, "max_model_len": 262144,
                                              "tensor_parallel_size": 2, "dtype": "fp8"}),
    ("granite-h-small-128k", GRANITE_H, {"available_memory_bytes": 40 * GiB, "max_model_len": 131072}),
    ("granite-h-small-32k-tp4", GRANITE_H, {"available_memory_bytes": 20 * GiB, "max_model_len": 32768,
                                            "tensor_parallel_size": 4}),
    ("granite-h-small-8k-tp2-block32", GRANITE_H, {"available_memory_bytes": 8 * GiB, "max_model_len": 8192,
                                                   "tensor_parallel_size": 2, "block_size": 32}),
    ("command-r7b-128k", COMMAND_R7B, {"available_memory_bytes": 30 * GiB, "max_model_len": 131072}),
    ("command-r7b-8k-tp2-fp8", COMMAND_R7B, {"available_memory_bytes": 10 * GiB, "max_model_len": 8192,
                                             "tensor_parallel_size": 2, "dtype": "fp8"}),
    ("falcon-7b-default-len", FALCON_7B, {"available_memory_bytes": 20 * GiB,
                                          "auto_fit_max_model_len": True}),
    ("falcon-h1-7b-32k", FALCON_H1, {"available_memory_bytes": 40 * GiB, "max_model_len": 32768}),
    ("falcon-h1-7b-128k-tp2", FALCON_H1, {"available_memory_bytes": 30 * GiB, "max_model_len": 131072,
                                          "tensor_parallel_size": 2}),
    ("nemotron-h-shaped-8k", NEMOTRON_H, {"available_memory_bytes": 20 * GiB, "max_model_len": 8192}),
    ("nemotron-h-shaped-8k-tp4-fp8", NEMOTRON_H, {"available_memory_bytes": 10 * GiB, "max_model_len": 8192,
                                                  "tensor_parallel_size": 4, "dtype": "fp8"}),
    ("falcon-mamba-shaped-8k", FALCON_MAMBA, {"available_memory_bytes": 20 * GiB, "max_model_len": 8192}),
    ("falcon-mamba-shaped-32k-tp2", FALCON_MAMBA, {"available_memory_bytes": 10 * GiB, "max_model_len": 32768,
                                                   "tensor_parallel_size": 2}),
    ("mamba2-shaped-16k", MAMBA2, {"available_memory_bytes": 20 * GiB, "max_model_len": 16384}),
    ("lfm2-shaped-32k", LFM2, {"available_memory_bytes": 10 * GiB, "max_model_len": 32768}),
    ("lfm2-shaped-128k-tp2-fp8", LFM2, {"available_memory_bytes": 8 * GiB, "max_model_len": 128000,
                                        "tensor_parallel_size": 2, "dtype": "fp8"}),
    ("olmo-hybrid-defaults-32k", OLMO_HYBRID, {"available_memory_bytes": 20 * GiB, "max_model_len": 32768}),
    ("olmo-hybrid-defaults-64k-tp2", OLMO_HYBRID, {"available_memory_bytes": 20 * GiB, "max_model_len": 65536,
                                                   "tensor_parallel_size": 2}),
    ("lfm2-moe-defaults-32k", LFM2_MOE, {"available_memory_bytes": 10 * GiB, "max_model_len": 32768}),
    # Kimi-Linear, shaped like Kimi-Linear-48B-A3B: KDA layers (linear_attn_config.kda_layers,
    # 1-based) beside MLA, the KDA recurrent state in float32.
    ("kimi-linear-shaped-128k", KIMI_LINEAR, {"available_memory_bytes": 40 * GiB, "max_model_len": 131072}),
    ("kimi-linear-shaped-32k-tp4-fp8", KIMI_LINEAR, {"available_memory_bytes": 10 * GiB,
                                                     "max_model_len": 32768, "tensor_parallel_size": 4,
                                                     "dtype": "fp8"}),
    ("kimi-linear-shaped-1m-tp2-block64", KIMI_LINEAR, {"available_memory_bytes": 30 * GiB,
                                                        "max_model_len": 1048576, "tensor_parallel_size": 2,
                                                        "block_size": 64}),
    # Bailing linear (BailingMoeV2_5ForCausalLM, model_type bailing_hybrid): shaped like Ring-2.5-1T
    # (layer_group_size 8: 70 linear-attention layers, 10 MLA), and the config class's defaults
    # (layer_group_size 6, 42 layers). The linear state's head_dim is qk_rope_head_dim.
    ("ring-2.5-shaped-128k-tp8", RING_25, {"available_memory_bytes": 30 * GiB, "max_model_len": 131072,
                                           "tensor_parallel_size": 8}),
    ("ring-2.5-shaped-32k-tp4-fp8", RING_25, {"available_memory_bytes": 20 * GiB, "max_model_len": 32768,
                                              "tensor_parallel_size": 4, "dtype": "fp8"}),
    ("bailing-hybrid-defaults-64k-block32", BAILING_DEFAULTS, {"available_memory_bytes": 20 * GiB,
                                                               "max_model_len": 65536, "block_size": 32}),
    # Zamba2: shaped like Zamba2-2.7B (54 Mamba2 layers, 9 of them hybrid with a KV cache of
    # their own for the shared attention), and the config class's defaults with use_long_context
    # (the default layer pattern, 8 Mamba heads, 16k positions).
    ("zamba2-shaped-4k", ZAMBA2, {"available_memory_bytes": 8 * GiB, "max_model_len": 4096}),
    ("zamba2-shaped-4k-tp2-fp8", ZAMBA2, {"available_memory_bytes": 4 * GiB, "max_model_len": 4096,
                                          "tensor_parallel_size": 2, "dtype": "fp8"}),
    ("zamba2-defaults-16k-block32", ZAMBA2_DEFAULTS, {"available_memory_bytes": 6 * GiB,
                                                      "max_model_len": 16384, "block_size": 32}),
    # MiniCPM-V 4.6: MiniCPMV4_6Config's defaults (a qwen3_5_text language model), its text config
    # stating mamba_ssm_dtype float32 as Qwen3.5 checkpoints do, which vLLM applies only to Qwen3.5.
    ("minicpm-v-4.6-defaults-32k", MINICPM_V46, {"available_memory_bytes": 10 * GiB, "max_model_len": 32768}),
    ("minicpm-v-4.6-defaults-32k-tp2-fp8", MINICPM_V46, {"available_memory_bytes": 10 * GiB,
                                                         "max_model_len": 32768, "tensor_parallel_size": 2,
                                                         "dtype": "fp8"}),
    # Bailing V3 (BailingMoeV3ForCausalLM, model_type bailing_hybrid): BailingHybridConfig's defaults
    # with 45 layers, so the 3 past the last group of 6 are MLA (transformers' layer_types says
    # linear); KDA state of num_attention_heads × head_dim (= qk_rope_head_dim), float32.
    ("bailing-v3-shaped-32k", BAILING_V3, {"available_memory_bytes": 20 * GiB, "max_model_len": 32768}),
    ("bailing-v3-shaped-128k-tp4-fp8", BAILING_V3, {"available_memory_bytes": 20 * GiB,
                                                    "max_model_len": 131072, "tensor_parallel_size": 4,
                                                    "dtype": "fp8"}),
    ("falcon-7b-2k-block32", FALCON_7B, {"available_memory_bytes": 3 * GiB, "max_model_len": 2048,
                                         "block_size": 32}),
    ("alice-ai-shaped-64k", ALICE_AI, {"available_memory_bytes": 20 * GiB, "max_model_len": 65536}),
    ("alice-ai-shaped-128k-tp2-fp8", ALICE_AI, {"available_memory_bytes": 15 * GiB, "max_model_len": 131072,
                                                 "tensor_parallel_size": 2, "dtype": "fp8"}),
    ("alice-ai-shaped-32k-block64-tp4", ALICE_AI, {"available_memory_bytes": 8 * GiB, "max_model_len": 32768,
                                                    "block_size": 64, "tensor_parallel_size": 4}),
    ("beam-shaped-32k", BEAM, {"available_memory_bytes": 20 * GiB, "max_model_len": 32768}),
    ("beam-shaped-32k-tp2-fp8-block32", BEAM, {"available_memory_bytes": 10 * GiB, "max_model_len": 32768,
                                                "tensor_parallel_size": 2, "dtype": "fp8", "block_size": 32}),
    ("flint-shaped-256k", FLINT, {"available_memory_bytes": 20 * GiB, "max_model_len": 262144}),
    ("flint-shaped-64k-tp4", FLINT, {"available_memory_bytes": 8 * GiB, "max_model_len": 65536,
                                     "tensor_parallel_size": 4}),
    ("flint-defaults-32k", FLINT_DEFAULTS, {"available_memory_bytes": 8 * GiB, "max_model_len": 32768}),
    ("gemma-3n-defaults-32k", GEMMA3N, {"available_memory_bytes": 4 * GiB, "max_model_len": 32768}),
    ("gemma-3n-defaults-8k-tp2-fp8", GEMMA3N, {"available_memory_bytes": 2 * GiB, "max_model_len": 8192,
                                               "tensor_parallel_size": 2, "dtype": "fp8"}),
    ("gemma-4-defaults-32k", GEMMA4, {"available_memory_bytes": 8 * GiB, "max_model_len": 32768}),
    ("gemma-4-defaults-128k-tp2-fp8", GEMMA4, {"available_memory_bytes": 6 * GiB, "max_model_len": 131072,
                                               "tensor_parallel_size": 2, "dtype": "fp8"}),
    ("gemma-4-shared-shaped-64k-block32", GEMMA4_SHARED, {"available_memory_bytes": 6 * GiB,
                                                          "max_model_len": 65536, "block_size": 32}),
    ("gemma-4-shared-shaped-32k-tp4", GEMMA4_SHARED, {"available_memory_bytes": 4 * GiB,
                                                      "max_model_len": 32768, "tensor_parallel_size": 4}),
    # HY-V4: HYV4Config's defaults (no layer_types: dense MLA on every layer, no indexer cache
    # though index_topk is set), and 16 layers all sparse, each with its own indexer (the
    # DeepSeek-V3.2 layout: block sizes multiples of 64, fp8 as fp8_ds_mla).
    ("hy-v4-defaults-64k", HY_V4_DEFAULTS, {"available_memory_bytes": 30 * GiB, "max_model_len": 65536}),
    ("hy-v4-defaults-256k-tp8-fp8", HY_V4_DEFAULTS, {"available_memory_bytes": 20 * GiB,
                                                    "max_model_len": 262144, "tensor_parallel_size": 8,
                                                    "dtype": "fp8"}),
    ("hy-v4-sparse-shaped-64k-block64", HY_V4_SPARSE, {"available_memory_bytes": 20 * GiB,
                                                       "max_model_len": 65536, "block_size": 64}),
    ("hy-v4-sparse-shaped-128k-tp4-fp8-block64", HY_V4_SPARSE, {"available_memory_bytes": 20 * GiB,
                                                                "max_model_len": 131072, "block_size": 64,
                                                                "tensor_parallel_size": 4, "dtype": "fp8"}),
    ("step-3.5-shaped-64k-tp4", STEP35, {"available_memory_bytes": 20 * GiB, "max_model_len": 65536,
                                         "tensor_parallel_size": 4}),
    ("step-3.5-shaped-128k-tp8-fp8", STEP35, {"available_memory_bytes": 20 * GiB, "max_model_len": 128000,
                                              "tensor_parallel_size": 8, "dtype": "fp8"}),
    # MiniMax-M3: MiniMaxM3Config's defaults (60 layers, the first 3 dense, 57 sparse with an
    # indexer cache each) and a 40-layer text config with dense layers between the sparse ones.
    # Every layer's K/V and every index cache share one group (pages of two sizes); the sparse
    # kernels take blocks of exactly 128, vLLM's pick when --block-size is not given.
    ("minimax-m3-defaults-128k-block128", MINIMAX_M3_DEFAULTS,
     {"available_memory_bytes": 30 * GiB, "max_model_len": 131072, "block_size": 128}),
    ("minimax-m3-defaults-512k-tp4-fp8-block128", MINIMAX_M3_DEFAULTS,
     {"available_memory_bytes": 20 * GiB, "max_model_len": 524288, "block_size": 128,
      "tensor_parallel_size": 4, "dtype": "fp8"}),
    ("minimax-m3-shaped-64k-block256", MINIMAX_M3,
     {"available_memory_bytes": 11 * GiB, "max_model_len": 65536, "block_size": 256}),
    ("minimax-m3-shaped-32k-tp8-fp8-block128", MINIMAX_M3,
     {"available_memory_bytes": 6 * GiB, "max_model_len": 32768, "block_size": 128,
      "tensor_parallel_size": 8, "dtype": "fp8"}),
    # Inkling: InklingMMConfig's defaults (16 full-attention layers, no local layer, no context
    # length: 2048) and a 24-layer text config with 20 local (sliding, 512) layers of fewer KV
    # heads. Every layer also keeps its short-convolution state as a sliding window of
    # sconv_kernel_size tokens in blocks of that size, which the page unification scales.
    ("inkling-defaults-auto-len", INKLING_DEFAULTS,
     {"available_memory_bytes": 10 * GiB, "auto_fit_max_model_len": True}),
    ("inkling-defaults-2k-tp2-fp8", INKLING_DEFAULTS,
     {"available_memory_bytes": 4 * GiB, "max_model_len": 2048, "tensor_parallel_size": 2, "dtype": "fp8"}),
    ("inkling-shaped-32k", INKLING, {"available_memory_bytes": 20 * GiB, "max_model_len": 32768}),
    ("inkling-shaped-128k-tp4-fp8", INKLING,
     {"available_memory_bytes": 12 * GiB, "max_model_len": 131072, "tensor_parallel_size": 4,
      "dtype": "fp8"}),
    ("inkling-defaults-2k-block64", INKLING_DEFAULTS,
     {"available_memory_bytes": 1 * GiB, "max_model_len": 2048, "block_size": 64}),
    ("inkling-7-layers-8k", INKLING_7, {"available_memory_bytes": 8 * GiB, "max_model_len": 8192}),
    ("inkling-shaped-16k-block32-mnbt2048", INKLING,
     {"available_memory_bytes": 6 * GiB, "max_model_len": 16384, "block_size": 32,
      "max_num_batched_tokens": 2048}),
    # Kimi-K3 (KimiK3ForConditionalGeneration): Kimi-Linear's layout in a text_config, its KDA with
    # the full-rank gate (KimiK3DeltaAttention). FlashKDA, which it prefills with on SM 9.0+ when
    # the KDA head dim is 128, the model bf16 and gate_lower_bound set, keeps a prefill checkpoint:
    # a third state block a request. The defaults config (KimiLinearConfig's defaults, no gate
    # bound) prefills with Triton: no checkpoint.
    ("kimi-k3-shaped-256k", KIMI_K3, {"available_memory_bytes": 40 * GiB, "max_model_len": 262144}),
    ("kimi-k3-shaped-128k-tp8-fp8", KIMI_K3, {"available_memory_bytes": 4 * GiB, "max_model_len": 131072,
                                              "tensor_parallel_size": 8, "dtype": "fp8"}),
    ("kimi-k3-shaped-64k-tp4-block768", KIMI_K3, {"available_memory_bytes": 12 * GiB, "max_model_len": 65536,
                                                  "tensor_parallel_size": 4, "block_size": 768}),
    ("kimi-k3-shaped-256k-tight", KIMI_K3, {"available_memory_bytes": 6 * GiB, "max_model_len": 262144}),
    # The same KDA on GPUs FlashKDA does not run on (SM 8.x): Triton prefills it, no checkpoint.
    ("kimi-k3-shaped-256k-a100", KIMI_K3, {"available_memory_bytes": 40 * GiB, "max_model_len": 262144,
                                           "gpu_name": A100}),
    ("kimi-k3-shaped-128k-tp8-fp8-l40s", KIMI_K3, {"available_memory_bytes": 4 * GiB,
                                                   "max_model_len": 131072, "tensor_parallel_size": 8,
                                                   "dtype": "fp8", "gpu_name": L40S}),
    ("kimi-k3-defaults-4k", KIMI_K3_DEFAULTS, {"available_memory_bytes": 2 * GiB, "max_model_len": 4096}),
    ("kimi-k3-defaults-4k-tp2-fp8", KIMI_K3_DEFAULTS, {"available_memory_bytes": 1 * GiB,
                                                       "max_model_len": 4096, "tensor_parallel_size": 2,
                                                       "dtype": "fp8"}),
    # GLM-5-next (Glm5NextForCausalLM), Glm5NextTextConfig's defaults: 34 KDA layers (FlashKDA
    # checkpoint) and 11 sparse MLA layers, each with a kpool indexer and a ring, packed
    # block-outermost by vLLM on an SM 9.0 GPU; blocks of index_kpool × 32 tokens and more.
    ("glm-5-next-defaults-128k", GLM5_NEXT, {"available_memory_bytes": 20 * GiB, "max_model_len": 131072}),
    ("glm-5-next-defaults-64k-tp4-fp8", GLM5_NEXT, {"available_memory_bytes": 8 * GiB, "max_model_len": 65536,
                                                    "tensor_parallel_size": 4, "dtype": "fp8"}),
    ("glm-5-next-defaults-1m-tp8-block768", GLM5_NEXT, {"available_memory_bytes": 30 * GiB,
                                                        "max_model_len": 1048576, "tensor_parallel_size": 8,
                                                        "block_size": 768}),
    ("glm-5-next-defaults-1m-tight", GLM5_NEXT, {"available_memory_bytes": 18 * GiB,
                                                 "max_model_len": 1048576}),
    # The multimodal model (Glm5NextConfig's text_config): every 3rd layer sparse MLA, index_kpool 32
    # (blocks of 1024 tokens and more), an unbounded KDA gate (safe_gate off): Triton, no checkpoint.
    ("glm-5-next-vl-shaped-128k", GLM5_NEXT_VL, {"available_memory_bytes": 10 * GiB,
                                                 "max_model_len": 131072}),
    ("glm-5-next-vl-shaped-256k-tp2-fp8", GLM5_NEXT_VL, {"available_memory_bytes": 6 * GiB,
                                                         "max_model_len": 262144, "tensor_parallel_size": 2,
                                                         "dtype": "fp8"}),
    # Muse Spark (MuseSparkForConditionalGeneration): MuseSparkTextConfig has no defaults, so a
    # shape: 48 layers, every 4th full, the rest sliding within sliding_window (8192), as
    # MuseSpark1xAttention reads layer_types; 8 KV heads of 128.
    ("muse-spark-shaped-32k", MUSE_SPARK, {"available_memory_bytes": 20 * GiB, "max_model_len": 32768}),
    ("muse-spark-shaped-256k-tp8-fp8", MUSE_SPARK, {"available_memory_bytes": 20 * GiB,
                                                    "max_model_len": 262144, "tensor_parallel_size": 8,
                                                    "dtype": "fp8"}),
    ("muse-spark-shaped-256k-tight-block32", MUSE_SPARK, {"available_memory_bytes": 16 * GiB,
                                                          "max_model_len": 262144, "block_size": 32}),
    ("muse-spark-shaped-16k-tp2-mnbt2048", MUSE_SPARK, {"available_memory_bytes": 6 * GiB,
                                                        "max_model_len": 16384, "tensor_parallel_size": 2,
                                                        "max_num_batched_tokens": 2048}),
    # Dots3 (Dots3NoteForCausalLM): 30 sliding-window MLA layers (latent 1024 + 64, window 4096)
    # and 10 sparse MLA layers with indexers, rows padded to 1088; and 47 layers, the first and
    # every 5th sparse (10 beside 37 sliding, window 2048). The padded sparse backend takes only
    # BLHNC, so the planner packs the mixed pages; blocks multiples of 64; 16-bit KV only.
    ("dots3-note-shaped-32k-block64", DOTS3, {"available_memory_bytes": 20 * GiB, "max_model_len": 32768,
                                              "block_size": 64}),
    ("dots3-note-shaped-128k-tp4-block64", DOTS3, {"available_memory_bytes": 30 * GiB,
                                                   "max_model_len": 131072, "block_size": 64,
                                                   "tensor_parallel_size": 4}),
    ("dots3-note-shaped-128k-tight-block128", DOTS3, {"available_memory_bytes": 8 * GiB,
                                                      "max_model_len": 131072, "block_size": 128}),
    ("dots3-note-uneven-shaped-64k-block64-mnbt2048", DOTS3_UNEVEN, {"available_memory_bytes": 20 * GiB,
                                                                     "max_model_len": 65536, "block_size": 64,
                                                                     "max_num_batched_tokens": 2048}),
    ("dots3-note-uneven-shaped-256k-tp2-block192", DOTS3_UNEVEN, {"available_memory_bytes": 40 * GiB,
                                                                  "max_model_len": 262144, "block_size": 192,
                                                                  "tensor_parallel_size": 2}),
    # HY-V4's layouts beyond the V3.2 one: every layer sparse with HYV4Config's indexer_types (5 of
    # 16 compute their top-k, the rest keep no indexer cache); sparse (odd) beside dense (even)
    # layers, 16-bit only (fp8 turns the shared dtype into fp8_ds_mla, which no dense backend
    # takes); every layer sparse without the learnable sink (the selector's sparse backend).
    ("hy-v4-sparse-shared-shaped-64k-block64", HY_V4_SHARED, {"available_memory_bytes": 20 * GiB,
                                                              "max_model_len": 65536, "block_size": 64}),
    ("hy-v4-sparse-shared-shaped-128k-tp4-fp8-block128", HY_V4_SHARED, {"available_memory_bytes": 10 * GiB,
                                                                        "max_model_len": 131072,
                                                                        "block_size": 128,
                                                                        "tensor_parallel_size": 4,
                                                                        "dtype": "fp8"}),
    ("hy-v4-mixed-shaped-64k-block64", HY_V4_MIXED, {"available_memory_bytes": 20 * GiB,
                                                     "max_model_len": 65536, "block_size": 64}),
    ("hy-v4-mixed-shaped-256k-tp2-block128", HY_V4_MIXED, {"available_memory_bytes": 12 * GiB,
                                                           "max_model_len": 262144, "block_size": 128,
                                                           "tensor_parallel_size": 2}),
    ("hy-v4-sparse-nosink-shaped-64k-block64", HY_V4_NOSINK, {"available_memory_bytes": 20 * GiB,
                                                              "max_model_len": 65536, "block_size": 64}),
    ("hy-v4-sparse-nosink-shaped-128k-tp8-fp8-block64", HY_V4_NOSINK, {"available_memory_bytes": 8 * GiB,
                                                                       "max_model_len": 131072,
                                                                       "block_size": 64,
                                                                       "tensor_parallel_size": 8,
                                                                       "dtype": "fp8"}),
    # Dots3 with every layer sparse: one group of layers beside their indexers, the block still
    # rounded to the padded row and (at block 128) to the indexer's 64-token kernel block.
    ("dots3-note-all-sparse-shaped-64k-block128", DOTS3_ALL_SPARSE, {"available_memory_bytes": 20 * GiB,
                                                                     "max_model_len": 65536,
                                                                     "block_size": 128}),
    # Dots3 with IndexCache (index_topk_freq 2): 4 of its 10 sparse layers reuse a top-k and keep no
    # indexer, so the sparse bucket is no repeating pattern: it stays whole, and the sliding bucket
    # splits into as many groups as the widest group's block needs (a state bucket).
    ("dots3-note-indexcache-shaped-32k-block64", DOTS3_INDEXCACHE, {"available_memory_bytes": 20 * GiB,
                                                                    "max_model_len": 32768,
                                                                    "block_size": 64}),
    ("dots3-note-indexcache-shaped-64k-tp2-block128", DOTS3_INDEXCACHE, {"available_memory_bytes": 20 * GiB,
                                                                         "max_model_len": 65536,
                                                                         "block_size": 128,
                                                                         "tensor_parallel_size": 2}),
    # Step5: every 4th layer DSA (full attention with a summary cache and a CSA ring beside it),
    # the rest sliding with heads and head dim of their own (attention_other_setting); and
    # Step5Config's defaults with sparse_config disabled (no layer_types, no window: all full).
    ("step5-shaped-64k", STEP5, {"available_memory_bytes": 20 * GiB, "max_model_len": 65536}),
    ("step5-shaped-256k-tp8-fp8-block32", STEP5, {"available_memory_bytes": 10 * GiB,
                                                  "max_model_len": 262144, "tensor_parallel_size": 8,
                                                  "dtype": "fp8", "block_size": 32}),
    ("step5-shaped-128k-tp2-block64", STEP5, {"available_memory_bytes": 7 * GiB, "max_model_len": 131072,
                                              "tensor_parallel_size": 2, "block_size": 64}),
    ("step5-shaped-256k-tight", STEP5, {"available_memory_bytes": 23 * GiB, "max_model_len": 262144}),
    ("step5-defaults-4k-tp2", STEP5_DEFAULTS, {"available_memory_bytes": 8 * GiB, "max_model_len": 4096,
                                               "tensor_parallel_size": 2}),
    # The shaped config with sparse_config disabled: no DSA, FlashAttention everywhere, so the
    # sliding layers' pages (head dim 128) are padded to the full layers' (head dim 192).
    ("step5-dense-sliding-64k", STEP5_DENSE, {"available_memory_bytes": 20 * GiB, "max_model_len": 65536}),
    ("step5-dense-sliding-32k-tp4-fp8", STEP5_DENSE, {"available_memory_bytes": 4 * GiB,
                                                      "max_model_len": 32768, "tensor_parallel_size": 4,
                                                      "dtype": "fp8"}),
    # Qwen4-exp without QSA or PLE layers: gated delta nets beside full attention (the Qwen3.5
    # contract: mamba_ssm_dtype read); the attention block is sized for the largest of the GDN
    # state and the TP-replicated PLE short-conv state, which wins at TP 16.
    ("qwen4-exp-defaults-32k", QWEN4_EXP_DEFAULTS, {"available_memory_bytes": 20 * GiB,
                                                    "max_model_len": 32768}),
    ("qwen4-exp-defaults-8k-tp16", QWEN4_EXP_DEFAULTS, {"available_memory_bytes": 2 * GiB,
                                                        "max_model_len": 8192, "tensor_parallel_size": 16}),
    ("qwen4-exp-shaped-128k-tp4-fp8", QWEN4_EXP, {"available_memory_bytes": 20 * GiB, "max_model_len": 131072,
                                                  "tensor_parallel_size": 4, "dtype": "fp8"}),
    ("qwen4-exp-shaped-32k-block64-tight", QWEN4_EXP, {"available_memory_bytes": 3 * GiB,
                                                       "max_model_len": 32768, "block_size": 64}),
    # Qwen4-exp with QSA (indexer_n_heads set): each indexed layer keeps a raw-key ring and a
    # compressed key cache beside its KV; QSAStateBackend's BLNHC layout packs the groups.
    ("qwen4-exp-qsa-shaped-32k", QWEN4_EXP_QSA, {"available_memory_bytes": 20 * GiB, "max_model_len": 32768}),
    ("qwen4-exp-qsa-shaped-128k-tp4-fp8", QWEN4_EXP_QSA, {"available_memory_bytes": 8 * GiB,
                                                          "max_model_len": 131072, "tensor_parallel_size": 4,
                                                          "dtype": "fp8"}),
    ("qwen4-exp-qsa-shaped-64k-tp8-block128", QWEN4_EXP_QSA, {"available_memory_bytes": 4 * GiB,
                                                              "max_model_len": 65536,
                                                              "tensor_parallel_size": 8, "block_size": 128}),
    ("qwen4-exp-qsa-shaped-256k-tp2-tight", QWEN4_EXP_QSA, {"available_memory_bytes": 10 * GiB,
                                                            "max_model_len": 262144,
                                                            "tensor_parallel_size": 2}),
    # The multimodal model keeps MRoPE: its rings hold each raw key's three int64 positions too.
    ("qwen4-exp-qsa-vl-shaped-32k-tp2-fp8", QWEN4_EXP_QSA_VL, {"available_memory_bytes": 6 * GiB,
                                                               "max_model_len": 32768,
                                                               "tensor_parallel_size": 2, "dtype": "fp8"}),
    # Step5's multimodal model (Step3p7's frontend around the Step5 text model).
    ("step5-vl-shaped-64k-tp2", STEP5_VL, {"available_memory_bytes": 20 * GiB, "max_model_len": 65536,
                                           "tensor_parallel_size": 2}),
    # Qwen4-exp with PLE layers: each keeps a TP-replicated short-conv state (a MambaSpec of its
    # own, apart from the sharded GDN states), beside plain attention and beside QSA.
    ("qwen4-exp-ple-defaults-32k", QWEN4_EXP_PLE, {"available_memory_bytes": 20 * GiB,
                                                   "max_model_len": 32768}),
    ("qwen4-exp-ple-defaults-8k-tp16", QWEN4_EXP_PLE, {"available_memory_bytes": 2 * GiB,
                                                       "max_model_len": 8192, "tensor_parallel_size": 16}),
    ("qwen4-exp-qsa-ple-shaped-32k", QWEN4_EXP_QSA_PLE, {"available_memory_bytes": 20 * GiB,
                                                         "max_model_len": 32768}),
    ("qwen4-exp-qsa-ple-shaped-64k-tp8-fp8", QWEN4_EXP_QSA_PLE, {"available_memory_bytes": 4 * GiB,
                                                                 "max_model_len": 65536,
                                                                 "tensor_parallel_size": 8, "dtype": "fp8"}),
    # 2 PLE states beside 31 gated delta nets: one uniform type (MambaSpec), one state bucket.
    ("qwen4-exp-qsa-ple-42-shaped-32k", QWEN4_EXP_QSA_PLE_42, {"available_memory_bytes": 20 * GiB,
                                                               "max_model_len": 32768}),
    # DeepSeek-V4: shaped like DeepSeek-V4-Flash (legacy compress_ratios: 2 sliding-only layers,
    # then ratio 4 and 128 alternating), and DeepseekV4Config's defaults (2 ratio-128 layers, then
    # 128 / 4 alternating, 128 first). Every layer's SWA cache, the compressed MLA and indexer caches and the
    # compressor rings are packed into block-outermost groups; the KV cache is fp8_ds_mla whatever
    # the dtype asked (auto included), and the block a multiple of 256 (vLLM's own pick is 256).
    ("dsv4-flash-shaped-64k-block256", DSV4_FLASH, {"available_memory_bytes": 40 * GiB,
                                                    "max_model_len": 65536, "block_size": 256}),
    ("dsv4-flash-shaped-1m-tp8-fp8-block256", DSV4_FLASH, {"available_memory_bytes": 30 * GiB,
                                                           "max_model_len": 1048576, "block_size": 256,
                                                           "tensor_parallel_size": 8, "dtype": "fp8"}),
    ("dsv4-flash-shaped-8k-block256-tight", DSV4_FLASH, {"available_memory_bytes": 7 * GiB // 2,
                                                         "max_model_len": 8192, "block_size": 256}),
    ("dsv4-flash-shaped-128k-block512-mnbt2048", DSV4_FLASH, {"available_memory_bytes": 20 * GiB,
                                                              "max_model_len": 131072, "block_size": 512,
                                                              "max_num_batched_tokens": 2048}),
    ("dsv4-defaults-256k-tp4-block256", DSV4_DEFAULTS, {"available_memory_bytes": 50 * GiB,
                                                        "max_model_len": 262144, "block_size": 256,
                                                        "tensor_parallel_size": 4}),
    ("dsv4-defaults-32k-block1024-fp8-sync", DSV4_DEFAULTS, {"available_memory_bytes": 14 * GiB,
                                                             "max_model_len": 32768, "block_size": 1024,
                                                             "dtype": "fp8", "async_scheduling": False}),
    # compress_rates sending heavily_compressed_attention to 0 (those layers keep the window alone:
    # ratio-4 layers and sliding ones are packed), and every layer sliding (one group of all).
    ("dsv4-no-hca-shaped-128k-tp2-block256", DSV4_NO_HCA, {"available_memory_bytes": 6 * GiB,
                                                           "max_model_len": 131072, "block_size": 256,
                                                           "tensor_parallel_size": 2}),
    ("dsv4-sliding-shaped-32k-block512", DSV4_SLIDING, {"available_memory_bytes": 2 * GiB,
                                                        "max_model_len": 32768, "block_size": 512}),
    # Pipeline stages: each stage packs its own layers' caches into the global groups; every stage
    # gets the smallest stage's block count (PP + 1 batches in flight).
    ("dsv4-flash-shaped-64k-pp2-block256", DSV4_FLASH, {"available_memory_bytes": 20 * GiB,
                                                        "max_model_len": 65536, "block_size": 256,
                                                        "pipeline_parallel_size": 2}),
    ("dsv4-defaults-128k-pp3-tp2-fp8-block256", DSV4_DEFAULTS, {"available_memory_bytes": 12 * GiB,
                                                                "max_model_len": 131072, "block_size": 256,
                                                                "pipeline_parallel_size": 3,
                                                                "tensor_parallel_size": 2, "dtype": "fp8"}),
    # DeepSeek-V4.1 on an SM90 GPU (gpu_name: kvplan plans that GPU's layout, the oracle builds it):
    # kv-source layers own the compressed and indexer caches the layers after them read, every
    # layer a 32-token-block window cache, ratio-2 sources a compressor ring (one block a request).
    # Blocks are multiples of 64 (vLLM's pick); above 64 a block's stride aligns to every
    # compressed cache's 64-token page.
    ("dsv41-shaped-64k-h100-block64", DSV41, {"available_memory_bytes": 20 * GiB, "max_model_len": 65536,
                                              "block_size": 64, "gpu_name": H100}),
    ("dsv41-shaped-256k-tp8-fp8-h100-block64", DSV41, {"available_memory_bytes": 30 * GiB,
                                                       "max_model_len": 262144, "block_size": 64,
                                                       "tensor_parallel_size": 8, "dtype": "fp8",
                                                       "gpu_name": H100}),
    ("dsv41-shaped-16k-h100-block128-mnbt2048", DSV41, {"available_memory_bytes": 24 * GiB,
                                                        "max_model_len": 16384, "block_size": 128,
                                                        "max_num_batched_tokens": 2048, "gpu_name": H100}),
    # Two stages split the 40 layers at 20, where a kv-sharing group starts (a split inside one is
    # refused: vLLM raises NotImplementedError).
    ("dsv41-shaped-64k-pp2-h100-block64", DSV41, {"available_memory_bytes": 10 * GiB, "max_model_len": 65536,
                                                  "block_size": 64, "pipeline_parallel_size": 2,
                                                  "gpu_name": H100}),
    # --dtype (model_dtype: the oracle's ModelConfig dtype, vllm/config/model.py _get_and_verify_dtype)
    # sets the KV cache's dtype under --kv-cache-dtype auto: float32 doubles a bf16 config's pages,
    # float16 keeps their size; an explicit fp8 cache does not follow it.
    ("weights-dtype-float32-command-r7b", COMMAND_R7B, {"available_memory_bytes": 8 * GiB,
                                                       "max_model_len": 8192, "model_dtype": "float32"}),
    ("weights-dtype-float16-falcon-7b", FALCON_7B, {"available_memory_bytes": 6 * GiB, "max_model_len": 2048,
                                                   "model_dtype": "float16"}),
    ("weights-dtype-float32-fp8-kv-falcon-7b", FALCON_7B, {"available_memory_bytes": 6 * GiB,
                                                          "max_model_len": 2048, "model_dtype": "float32",
                                                          "dtype": "fp8"}),
    # The Mamba cache dtypes and prefix caching (--mamba-ssm-cache-dtype, --mamba-cache-dtype,
    # --enable-prefix-caching): the state's bytes, hence the attention block that holds it (page
    # unification), and mamba_cache_mode "none" without prefix caching (one state a request in a
    # block of max_model_len). Nemotron-H's "auto" is float32 (its config hook), which a dtype
    # given overrides.
    *[(f"layout-{name}", config, {"available_memory_bytes": gib * GiB, "max_model_len": mml, **kw})
      for name, config, gib, mml, kw in (
        ("qwen3-next-32k-ssm-fp32", QWEN3_NEXT, 40, 32768, {"mamba_ssm_cache_dtype": "float32"}),
        ("qwen3-next-32k-no-prefix-caching", QWEN3_NEXT, 40, 32768, {"enable_prefix_caching": False}),
        ("qwen3-next-8k-tp4-ssm-fp32-no-prefix-caching", QWEN3_NEXT, 30, 8192,
         {"tensor_parallel_size": 4, "mamba_ssm_cache_dtype": "float32", "enable_prefix_caching": False}),
        ("nemotron-h-shaped-8k-ssm-auto", NEMOTRON_H, 20, 8192, {"mamba_ssm_cache_dtype": "auto"}),
        ("nemotron-h-shaped-8k-ssm-bf16", NEMOTRON_H, 20, 8192, {"mamba_ssm_cache_dtype": "bfloat16"}),
        ("nemotron-h-shaped-8k-no-prefix-caching", NEMOTRON_H, 20, 8192, {"enable_prefix_caching": False}),
        ("falcon-h1-7b-32k-ssm-fp32", FALCON_H1, 40, 32768, {"mamba_ssm_cache_dtype": "float32"}),
        ("falcon-h1-7b-32k-no-prefix-caching", FALCON_H1, 40, 32768, {"enable_prefix_caching": False}),
        ("falcon-h1-7b-128k-tp2-fp16-no-prefix-caching", FALCON_H1, 30, 131072,
         {"tensor_parallel_size": 2, "mamba_cache_dtype": "float16", "enable_prefix_caching": False}),
        ("granite-h-small-32k-ssm-fp32", GRANITE_H, 20, 32768, {"mamba_ssm_cache_dtype": "float32"}),
        ("granite-h-small-32k-mamba-fp32", GRANITE_H, 20, 32768, {"mamba_cache_dtype": "float32"}),
        ("granite-h-small-32k-no-prefix-caching", GRANITE_H, 20, 32768, {"enable_prefix_caching": False}),
        # More families: Jamba (Mamba1), Qwen3.6 (Qwen3.5's hook: its config's mamba_ssm_dtype,
        # which a dtype given overrides), MiniCPM-V 4.6 (no hook), LFM2 (short conv: one dtype),
        # Zamba2, Kimi-K3 (KDA: float32 SSM state; FlashKDA's checkpoint only in "align" mode),
        # Bailing linear (one state in --mamba-cache-dtype).
        ("jamba-mini-32k-ssm-fp32", JAMBA, 40, 32768, {"mamba_ssm_cache_dtype": "float32"}),
        ("jamba-mini-32k-no-prefix-caching", JAMBA, 40, 32768, {"enable_prefix_caching": False}),
        ("qwen3.6-35b-a3b-64k-ssm-bf16", QWEN36, 30, 65536, {"mamba_ssm_cache_dtype": "bfloat16"}),
        ("qwen3.6-35b-a3b-64k-mamba-fp16-no-prefix-caching", QWEN36, 30, 65536,
         {"mamba_cache_dtype": "float16", "enable_prefix_caching": False}),
        ("minicpm-v-4.6-defaults-32k-ssm-fp32", MINICPM_V46, 10, 32768, {"mamba_ssm_cache_dtype": "float32"}),
        ("lfm2-shaped-32k-mamba-fp32-no-prefix-caching", LFM2, 10, 32768,
         {"mamba_cache_dtype": "float32", "enable_prefix_caching": False}),
        ("zamba2-shaped-4k-ssm-fp32", ZAMBA2, 8, 4096, {"mamba_ssm_cache_dtype": "float32"}),
        ("kimi-k3-shaped-256k-no-prefix-caching", KIMI_K3, 40, 262144, {"enable_prefix_caching": False}),
        ("kimi-k3-shaped-256k-mamba-fp32", KIMI_K3, 40, 262144, {"mamba_cache_dtype": "float32"}),
        ("ring-2.5-shaped-128k-tp8-mamba-fp32", RING_25, 30, 131072,
         {"tensor_parallel_size": 8, "mamba_cache_dtype": "float32"}),
        # An attention-free model with prefix caching on: "align" mode (2 states and Mamba2's
        # checkpoint), in blocks of --mamba-block-size, else --block-size.
        ("mamba2-shaped-16k-prefix-caching", MAMBA2, 20, 16384, {"enable_prefix_caching": True}),
        ("mamba2-shaped-16k-prefix-caching-mbs256", MAMBA2, 20, 16384,
         {"enable_prefix_caching": True, "mamba_block_size": 256}),
    )],
    # Speculative decoding (oracle_more.py: the draft's layers as vLLM's MTP model files build them,
    # VllmConfig.speculative_config answering with SpeculativeConfig's own methods). MTP layers join
    # the target's groups; every Mamba state keeps num_speculative_tokens more blocks (n-gram too);
    # multi-module MTP keeps num_speculative_tokens − 1 more tokens in every sliding window.
    ("spec-qwen3-next-mtp1-32k", QWEN3_NEXT, {"available_memory_bytes": 40 * GiB, "max_model_len": 32768,
                                              "speculative": MTP1}),
    ("spec-qwen3-next-mtp2-8k-tp4", QWEN3_NEXT, {"available_memory_bytes": 30 * GiB, "max_model_len": 8192,
                                                 "tensor_parallel_size": 4, "speculative": MTP2}),
    ("spec-qwen3-next-ngram4-32k", QWEN3_NEXT, {"available_memory_bytes": 40 * GiB, "max_model_len": 32768,
                                                "speculative": NGRAM4}),
    ("spec-qwen36-mtp3-32k", QWEN36, {"available_memory_bytes": 30 * GiB, "max_model_len": 32768,
                                      "speculative": {"method": "mtp", "num_speculative_tokens": 3}}),
    ("spec-deepseek-v3-mtp1-32k-tp8", DEEPSEEK_V3, {"available_memory_bytes": 60 * GiB,
                                                    "max_model_len": 32768, "tensor_parallel_size": 8,
                                                    "block_size": 64, "speculative": MTP1}),
    ("spec-command-r7b-mtp2-shaped-32k", COMMAND_R7B_MTP2, {"available_memory_bytes": 10 * GiB,
                                                            "max_model_len": 32768, "speculative": MTP2}),
    ("spec-command-r7b-eagle3-32k", COMMAND_R7B, {"available_memory_bytes": 10 * GiB, "max_model_len": 32768,
                                                  "speculative": EAGLE3_R7B}),
    ("spec-command-r7b-eagle3-8k-tp2", COMMAND_R7B, {"available_memory_bytes": 6 * GiB, "max_model_len": 8192,
                                                     "tensor_parallel_size": 2, "speculative": EAGLE3_R7B}),
]  # fmt: skip

DEFAULTS = {"block_size": 16, "dtype": "auto", "tensor_parallel_size": 1,
            "max_num_batched_tokens": 8192, "async_scheduling": True}  # fmt: skip


def oracle_requests() -> list[dict[str, object]]:
    out = []
    for name, config, inputs in SCENARIOS:
        cfg = oracle_view(config, load_config(config))
        out.append({"name": name, "hf_config": cfg, **DEFAULTS, **inputs})
    return out


def summarise(
    name: str, config: str, inputs: dict[str, object], answer: dict[str, object]
) -> dict[str, object]:
    """The figures a case asserts, from the oracle's answer."""
    head = {"name": name, "config": config, "inputs": {**DEFAULTS, **inputs}}
    if "exception" in answer:
        return {**head, "vllm_raises": answer["exception"]}
    groups = [
        {k: g[k] for k in ("spec", "num_layers", "block_size", "page_size_bytes", "blocks_per_request")}
        # Packed groups (GLM-5-next) are UniformTypeKVCacheSpecs of any kind: name their layers'.
        | ({"layer_spec": g["layer_spec"]} if g["layer_spec"] not in (g["spec"], "MLAAttentionSpec") else {})
        for g in answer["kv_cache_groups"]  # type: ignore[union-attr]
    ]
    return {
        **head,
        "vllm": {
            "max_model_len": answer["max_model_len"],
            "bytes_per_block": answer["bytes_per_block"],
            "num_blocks": answer["num_blocks"],
            "blocks_per_request": answer["blocks_per_request"],
            "enough_memory": answer["enough_memory"],
            "estimated_max_model_len": answer["estimated_max_model_len"],
            "kv_cache_size_tokens": answer["kv_cache_size_tokens"],
            "max_concurrency": answer["max_concurrency"],
            "max_in_flight_tokens": answer.get("max_in_flight_tokens"),
            "groups": groups,
            "log_line": answer.get("vllm_log_line"),
        },
    }


# VllmConfig.max_concurrent_batches and max_in_flight_tokens for pipeline sizes, with and without
# async scheduling (the in-flight bound of sliding and chunked layers; vllm/config/vllm.py).
PIPELINE_PROBE = """
import json, sys
sys.path.insert(0, sys.argv[1])
import oracle as O
out = []
for pp in (1, 2, 4):
    for async_ in (True, False):
        vc = O.make_vllm_config({"block_size": 16, "max_model_len": 8192, "dtype": "bf16",
                                 "max_num_batched_tokens": 8192, "async_scheduling": async_})
        vc.parallel_config.pipeline_parallel_size = pp
        out.append({"pipeline_parallel_size": pp, "async_scheduling": async_,
                    "max_num_batched_tokens": 8192,
                    "max_concurrent_batches": vc.max_concurrent_batches,
                    "max_in_flight_tokens": vc.max_in_flight_tokens})
print(json.dumps(out))
"""


# The block sizes the sparse-MLA kernels take (DeepSeek-V3.2, GLM-5): vLLM picks no backend for
# a block size none of them supports.
SPARSE_MLA_PROBE = """
import json, vllm
from vllm.v1.attention.backends.mla.flashmla_sparse import FlashMLASparseBackend
from vllm.v1.attention.backends.mla.indexer import DeepseekV32IndexerBackend
def show(sizes):
    return [s if isinstance(s, int) else {"multiple_of": s.base} for s in sizes]
sparse = FlashMLASparseBackend.get_supported_kernel_block_sizes()
indexer = DeepseekV32IndexerBackend.get_supported_kernel_block_sizes()
print(json.dumps({"FLASHMLA_SPARSE": show(sparse), "DEEPSEEK_V32_INDEXER": show(indexer)}))
"""


def _req(arrival: int, prompt: int, output: int, prefix: str | None = None, shared: int = 0) -> dict:
    r: dict[str, object] = {"arrival_step": arrival, "prompt_tokens": prompt, "output_tokens": output}
    if prefix is not None:
        r |= {"prefix_id": prefix, "prefix_tokens": shared}
    return r


# Workloads for vLLM's own V1 scheduler (sched_oracle.py): tight pools with chunked prefill, where
# the admission rule (scheduler_reserve_full_isl: the whole prompt must fit, not its first chunk)
# decides preemptions; and looser ones, where it must not change anything.
SCHEDULER_SCENARIOS: list[tuple[str, dict[str, object]]] = [
    ("tight-pool-two-prompts", {"num_blocks": 16, "block_size": 16, "max_num_seqs": 4,
                                "max_num_batched_tokens": 64,
                                "requests": [_req(0, 150, 10), _req(0, 100, 10)]}),
    ("tight-pool-three-staggered", {"num_blocks": 24, "block_size": 16, "max_num_seqs": 4,
                                    "max_num_batched_tokens": 96,
                                    "requests": [_req(0, 200, 30), _req(1, 120, 40), _req(2, 90, 20)]}),
    ("tight-pool-shared-prefix", {"num_blocks": 20, "block_size": 16, "max_num_seqs": 8,
                                  "max_num_batched_tokens": 64,
                                  "requests": [_req(0, 120, 8, "sys", 96), _req(0, 130, 8, "sys", 96),
                                               _req(3, 110, 8, "sys", 96), _req(5, 60, 4)]}),
    ("decode-growth-preempts", {"num_blocks": 12, "block_size": 8, "max_num_seqs": 4,
                                "max_num_batched_tokens": 128,
                                "requests": [_req(0, 30, 40), _req(0, 30, 40), _req(0, 20, 30)]}),
    ("roomy-pool-many-small", {"num_blocks": 200, "block_size": 16, "max_num_seqs": 8,
                               "max_num_batched_tokens": 256,
                               "requests": [_req(i // 3, 50 + 7 * i, 5 + i) for i in range(12)]}),
]  # fmt: skip


def scheduler_requests() -> list[dict[str, object]]:
    return [
        {k: v for k, v in body.items() if k != "requests"} | {"workload": {"requests": body["requests"]}}
        for _, body in SCHEDULER_SCENARIOS
    ]


def main() -> int:
    python = os.environ.get("ORACLE_PYTHON")
    oracle_dir = Path(os.environ.get("ORACLE_DIR", HERE.parents[2] / "shared" / "tools" / "vllm-oracle"))
    if not python:
        print("set ORACLE_PYTHON to the oracle's python (install_lean.sh DIR → DIR/venv-lean/bin/python)")
        return 2
    only = os.environ.get("ORACLE_ONLY", "")
    reqs = oracle_requests()
    scenarios = list(SCENARIOS)
    if only:  # a quick rerun of some families: every other case and probe is kept as it was
        picked = [i for i, (n, _, _) in enumerate(SCENARIOS) if only in n]
        reqs, scenarios = [reqs[i] for i in picked], [scenarios[i] for i in picked]
    env = {**os.environ, "PYTHONPATH": str(STUBS)}
    run = subprocess.run(
        [python, str(HERE / "oracle_more.py"), str(oracle_dir)],
        input=json.dumps(reqs),
        capture_output=True,
        text=True,
        check=True,
        env=env,
    )
    answers = json.loads(run.stdout)
    cases = [summarise(n, c, i, a) for (n, c, i), a in zip(scenarios, answers, strict=True)]
    version = next((a.get("vllm_version") for a in answers if "vllm_version" in a), "unknown")
    if only:
        data = json.loads(OUT.read_text())
        fresh = {c["name"]: c for c in cases}
        order = [n for n, _, _ in SCENARIOS]
        kept = {c["name"]: c for c in data["cases"] if c["name"] in order}
        data["cases"] = [fresh.get(n) or kept[n] for n in order if n in fresh or n in kept]
        OUT.write_text(json.dumps(data, indent=1) + "\n")
        print(f"{len(cases)} of {len(data['cases'])} cases rerun with vLLM {version} → {OUT}")
        return 0
    probe = subprocess.run(
        [python, "-c", PIPELINE_PROBE, str(oracle_dir)], capture_output=True, text=True, check=True
    )
    batches = json.loads(probe.stdout.strip().splitlines()[-1])
    sparse = subprocess.run([python, "-c", SPARSE_MLA_PROBE], capture_output=True, text=True, check=True)
    sched = subprocess.run(
        [python, str(oracle_dir / "sched_oracle.py")],
        input=json.dumps(scheduler_requests()),
        capture_output=True,
        text=True,
        check=True,
    )
    runs = json.loads(sched.stdout.strip().splitlines()[-1])
    keep = ("steps", "completed", "preemptions", "recomputed_tokens", "cache_hit_tokens",
            "peak_blocks_in_use", "peak_running", "finish_order", "finish_step")  # fmt: skip
    scheduler_cases = [
        {
            "name": name,
            "inputs": body,
            "scheduler_reserve_full_isl": run["resolved_config"]["scheduler_reserve_full_isl"],
            "vllm": {k: run[k] for k in keep},
        }
        for (name, body), run in zip(SCHEDULER_SCENARIOS, runs, strict=True)
    ]
    data = {
        "vllm_version": version,
        "oracle": "oracle_ext.py + tests/oracle/oracle_more.py",
        "cases": cases,
        "in_flight_batches": batches,
        "sparse_mla_kernel_block_sizes": json.loads(sparse.stdout.strip().splitlines()[-1]),
        "scheduler_cases": scheduler_cases,
    }
    OUT.write_text(json.dumps(data, indent=1) + "\n")
    print(f"{len(cases)} cases from vLLM {version} → {OUT}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
