"""The values a config.json may leave out, as vLLM sees them through transformers: each family's
config class fills them in (a llava-next `text_config` names only what differs from Mistral's;
Gemma-3's omits `head_dim`, which is 256, not hidden ÷ heads). Only fields the geometry and the
parameter estimate read (Llama's and Qwen's configs leave `tie_word_embeddings` False), and only
constant defaults (head_dim where transformers derives it from the hidden size is left out,
as are sliding windows of families that do not slide by design).

Read from the config classes of transformers 5.20.2 (`CONFIG_MAPPING[model_type]()`), the
version vLLM 0.33.0's oracle runs with."""

from __future__ import annotations

from typing import Any

TRANSFORMERS_VERSION = "5.20.2"

DEFAULTS: dict[str, dict[str, Any]] = {
    "llama": {"tie_word_embeddings": False,
              "num_hidden_layers": 32, "num_attention_heads": 32, "hidden_size": 4096,
              "max_position_embeddings": 2048},
    "mistral": {"tie_word_embeddings": False,
                "num_hidden_layers": 32, "num_attention_heads": 32, "num_key_value_heads": 8,
                "hidden_size": 4096, "max_position_embeddings": 131072},
    "mixtral": {"tie_word_embeddings": False,
                "num_hidden_layers": 32, "num_attention_heads": 32, "num_key_value_heads": 8,
                "hidden_size": 4096, "max_position_embeddings": 131072},
    "qwen2": {"tie_word_embeddings": False,
              "num_hidden_layers": 32, "num_attention_heads": 32, "num_key_value_heads": 32,
              "hidden_size": 4096, "max_position_embeddings": 32768},
    "qwen3": {"tie_word_embeddings": False,
              "num_hidden_layers": 32, "num_attention_heads": 32, "num_key_value_heads": 32,
              "head_dim": 128, "hidden_size": 4096, "max_position_embeddings": 32768},
    "qwen3_moe": {"tie_word_embeddings": False,
                  "num_hidden_layers": 24, "num_attention_heads": 32, "num_key_value_heads": 4,
                  "hidden_size": 2048, "max_position_embeddings": 32768},
    "qwen3_next": {"num_hidden_layers": 48, "num_attention_heads": 16, "num_key_value_heads": 2,
                   "head_dim": 256, "hidden_size": 2048, "max_position_embeddings": 32768,
                   "full_attention_interval": 4, "linear_num_key_heads": 16,
                   "linear_num_value_heads": 32, "linear_key_head_dim": 128,
                   "linear_value_head_dim": 128, "linear_conv_kernel_dim": 4},
    "gemma": {"num_hidden_layers": 28, "num_attention_heads": 16, "num_key_value_heads": 16,
              "head_dim": 256, "hidden_size": 3072, "max_position_embeddings": 8192},
    "gemma2": {"num_hidden_layers": 26, "num_attention_heads": 8, "num_key_value_heads": 4,
               "head_dim": 256, "hidden_size": 2304, "max_position_embeddings": 8192,
               "sliding_window": 4096},
    "gemma3_text": {"num_hidden_layers": 26, "num_attention_heads": 8, "num_key_value_heads": 4,
                    "head_dim": 256, "hidden_size": 2304, "max_position_embeddings": 131072,
                    "sliding_window": 4096, "sliding_window_pattern": 6, "vocab_size": 262208},
    "cohere2": {"num_hidden_layers": 40, "num_attention_heads": 64, "num_key_value_heads": 64,
                "hidden_size": 8192, "max_position_embeddings": 8192, "sliding_window": 4096,
                "sliding_window_pattern": 4},
    "falcon": {"num_hidden_layers": 32, "num_attention_heads": 71, "hidden_size": 4544,
               "max_position_embeddings": 2048, "multi_query": True,
               "new_decoder_architecture": False},
    "jamba": {"num_hidden_layers": 32, "num_attention_heads": 32, "num_key_value_heads": 8,
              "hidden_size": 4096, "max_position_embeddings": 262144, "attn_layer_period": 8,
              "attn_layer_offset": 4, "mamba_d_state": 16, "mamba_d_conv": 4, "mamba_expand": 2},
    "granitemoehybrid": {"num_hidden_layers": 32, "num_attention_heads": 32,
                         "num_key_value_heads": 32, "hidden_size": 4096,
                         "max_position_embeddings": 2048, "mamba_d_state": 256, "mamba_d_conv": 4,
                         "mamba_expand": 2, "mamba_n_groups": 1, "mamba_n_heads": 128,
                         "mamba_d_head": 64},
    "llama4_text": {"num_hidden_layers": 48, "num_attention_heads": 40, "num_key_value_heads": 8,
                    "head_dim": 128, "hidden_size": 5120, "max_position_embeddings": 131072,
                    "attention_chunk_size": 8192, "no_rope_layer_interval": 4},
    "deepseek_v3": {"num_hidden_layers": 61, "num_attention_heads": 128, "hidden_size": 7168,
                    "max_position_embeddings": 4096, "kv_lora_rank": 512, "qk_rope_head_dim": 64,
                    "qk_nope_head_dim": 128, "v_head_dim": 128},
    # Dots3NoteConfig (vllm/transformers_utils/configs/dots3_note.py): DeepseekV3Config's; its
    # sliding-layer (swa_*) keys, layer_types and the indexer's have no default.
    "dots3_note": {"tie_word_embeddings": False, "num_hidden_layers": 61, "num_attention_heads": 128,
                   "hidden_size": 7168, "max_position_embeddings": 4096, "kv_lora_rank": 512,
                   "qk_rope_head_dim": 64, "qk_nope_head_dim": 128, "v_head_dim": 128, "q_lora_rank": 1536,
                   "vocab_size": 129280, "intermediate_size": 18432, "moe_intermediate_size": 2048,
                   "n_routed_experts": 256, "n_shared_experts": 1, "num_experts_per_tok": 8,
                   "first_k_dense_replace": 3},
    # BailingHybridConfig; its __post_init__ also sets head_dim to qk_rope_head_dim.
    "bailing_hybrid": {"tie_word_embeddings": False, "num_hidden_layers": 42, "num_attention_heads": 32,
                       "num_key_value_heads": 32, "hidden_size": 2560, "max_position_embeddings": 262144,
                       "kv_lora_rank": 512, "qk_rope_head_dim": 64, "qk_nope_head_dim": 128,
                       "v_head_dim": 128, "layer_group_size": 6, "short_conv_kernel_size": 4,
                       "vocab_size": 157184,
                       "intermediate_size": 6144, "moe_intermediate_size": 768, "num_experts": 512,
                       "num_experts_per_tok": 8, "n_shared_experts": 1, "first_k_dense_replace": 2},
    # Zamba2Config; layers_block_type's default pattern is core/hf/families/zamba2.py's.
    "zamba2": {"tie_word_embeddings": True, "num_hidden_layers": 54, "num_attention_heads": 32,
               "hidden_size": 2560, "max_position_embeddings": 4096, "vocab_size": 32000,
               "mamba_d_state": 64, "mamba_d_conv": 4, "mamba_expand": 2, "mamba_ngroups": 1,
               "n_mamba_heads": 8},
    # HYV4Config (vllm/transformers_utils/configs/hy_v4.py): no layer_types, so no sparse layer.
    "hy_v4": {"tie_word_embeddings": False, "num_hidden_layers": 34, "num_attention_heads": 32,
              "hidden_size": 2816, "max_position_embeddings": 262144, "kv_lora_rank": 512,
              "qk_rope_head_dim": 64, "qk_nope_head_dim": 192, "v_head_dim": 256, "q_lora_rank": 1536,
              "index_topk": 2048, "index_head_dim": 128, "index_n_heads": 16, "learnable_sink": True,
              "vocab_size": 120832, "intermediate_size": 6912, "moe_intermediate_size": 768,
              "n_routed_experts": 256, "n_shared_experts": 1, "num_experts_per_tok": 8},
    # DeepseekV4Config; its layer_types and compress_rates defaults are rules (families/deepseek_v4.py).
    "deepseek_v4": {"tie_word_embeddings": False, "num_hidden_layers": 43, "num_attention_heads": 64,
                    "num_key_value_heads": 1, "head_dim": 512, "hidden_size": 4096,
                    "max_position_embeddings": 1048576, "sliding_window": 128, "index_head_dim": 128,
                    "index_n_heads": 64, "index_topk": 512, "q_lora_rank": 1024, "o_lora_rank": 1024,
                    "o_groups": 8, "vocab_size": 129280, "moe_intermediate_size": 2048,
                    "n_routed_experts": 256, "n_shared_experts": 1, "num_experts_per_tok": 6},
    "gpt_oss": {"num_hidden_layers": 36, "num_attention_heads": 64, "num_key_value_heads": 8,
                "head_dim": 64, "hidden_size": 2880, "max_position_embeddings": 131072,
                "sliding_window": 128},
    # vLLM's own config classes (vllm/transformers_utils/configs/beam.py, vllm/models/flint/configs.py).
    "beam": {"tie_word_embeddings": False, "num_hidden_layers": 24, "num_attention_heads": 32,
             "num_key_value_heads": 4, "hidden_size": 2048, "max_position_embeddings": 32768,
             "sliding_window": 4096},
    # vLLM's KimiLinearConfig (vllm/transformers_utils/configs/kimi_linear.py), Kimi-K3's text_config.
    "kimi_linear": {"tie_word_embeddings": False, "num_hidden_layers": 32, "num_attention_heads": 32,
                    "hidden_size": 4096, "intermediate_size": 11008, "max_position_embeddings": 4096,
                    "vocab_size": 163840},
    # Glm5NextTextConfig (GLM-5-next, and its multimodal model's text_config); its __post_init__
    # fills layer_types in (core/hf/families/glm5_next.py layer_types).
    "glm5_next_text": {"tie_word_embeddings": False, "num_hidden_layers": 45, "num_attention_heads": 64,
                       "num_key_value_heads": 64, "hidden_size": 4096, "max_position_embeddings": 1048576,
                       "kv_lora_rank": 512, "q_lora_rank": 1536, "qk_rope_head_dim": 0,
                       "qk_nope_head_dim": 256, "v_head_dim": 256, "index_topk": 2048, "index_head_dim": 128,
                       "index_n_heads": 32, "index_kpool": 16, "index_kpool_always_select_tail": True,
                       "linear_head_dim": 128, "linear_num_heads": 64, "linear_conv_kernel_dim": 4,
                       "linear_lower_bound": -5.0, "vocab_size": 154880, "intermediate_size": 12288,
                       "moe_intermediate_size": 2048, "n_routed_experts": 288, "n_shared_experts": 1,
                       "num_experts_per_tok": 8},
    "flint": {"tie_word_embeddings": False, "num_hidden_layers": 49, "num_attention_heads": 32,
              "num_key_value_heads": 4, "head_dim": 128, "hidden_size": 2048,
              "max_position_embeddings": 262144, "sliding_window": 513},
    # Qwen4ExpTextConfig (transformers' qwen4_exp): layer_types every 4th indexed_attention (the
    # GDN families' full_attention_interval rule), no indexer (so no QSA), no PLE layer.
    "qwen4_exp_text": {"tie_word_embeddings": False, "num_hidden_layers": 40, "num_attention_heads": 16,
                       "num_key_value_heads": 2, "head_dim": 256, "hidden_size": 2048,
                       "max_position_embeddings": 32768, "linear_conv_kernel_dim": 4,
                       "linear_key_head_dim": 128, "linear_value_head_dim": 128,
                       "linear_num_key_heads": 16, "linear_num_value_heads": 32, "hc_count": 4,
                       "ple_conv_kernel_size": 4, "ngram_size": 3, "vocab_size": 248320,
                       "num_experts": 512, "num_experts_per_tok": 10, "moe_intermediate_size": 512,
                       "shared_expert_intermediate_size": 512},
    # Step5Config (vllm/transformers_utils/configs/step5.py): max_position_embeddings is max_seq_len
    # when left out, and max_seq_len is always set, so vLLM's smallest length key is at most it.
    "step5": {"tie_word_embeddings": False, "num_hidden_layers": 48, "num_attention_heads": 40,
              "num_attention_groups": 8, "hidden_size": 5120, "max_seq_len": 4096,
              "intermediate_size": 13312, "vocab_size": 65536, "att_impl_type": "GQA"},
    # MiniMaxM3TextConfig (vllm/transformers_utils/configs/minimax_m3.py): the first 3 layers dense,
    # the other 57 sparse MoE layers, each with an indexer cache.
    "minimax_m3_text": {"tie_word_embeddings": False, "num_hidden_layers": 60, "num_attention_heads": 64,
                        "num_key_value_heads": 4, "head_dim": 128, "hidden_size": 6144,
                        "max_position_embeddings": 524288,
                        "sparse_attention_config": {
                            "use_sparse_attention": True, "sparse_index_dim": 128,
                            "sparse_num_index_heads": 4,
                            "sparse_topk_blocks": 16, "sparse_block_size": 128,
                            "sparse_disable_index_value": [0] * 3 + [1] * 57, "sparse_score_type": "max",
                            "sparse_init_block": 0, "sparse_local_block": 1,
                            "sparse_attention_freq": [0] * 3 + [1] * 57}},
    # InklingModelConfig (vllm/models/inkling/configs.py): head_dim is hidden ÷ heads, the swa_ heads
    # and dims are the full layers' own, no layer is local and the conv kernel is 4 unless given.
    "inkling_model": {"tie_word_embeddings": False, "vocab_size": 201024, "hidden_size": 1536,
                      "num_hidden_layers": 16, "num_attention_heads": 12, "num_key_value_heads": 4,
                      "sliding_window_size": 512, "intermediate_size": 768},
}  # fmt: skip


def with_defaults(cfg: dict[str, Any], model_type: str) -> dict[str, Any]:
    """cfg with its family's defaults under it (a value the config states, null included, wins)."""
    defaults = DEFAULTS.get(model_type)
    return cfg if defaults is None else {**defaults, **cfg}
