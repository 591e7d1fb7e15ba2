"""Model families whose config.json vLLM reads by a rule of their own."""

from __future__ import annotations

# DeepSeek-MLA family model types (vllm/config/model.py `is_deepseek_mla`).
MLA_MODEL_TYPES = frozenset(
    {
        "deepseek_v2",
        "deepseek_v3",
        "deepseek_v32",
        "deepseek_mtp",
        "kimi_k2",
        "kimi_vl",
        "kimi_linear",
        "bailing_hybrid",
        "glm4_moe_lite",
        "glm_moe_dsa",
        "longcat_flash",
        "pangu_ultra_moe",
        "mistral_large_3",
        "hy_v4",
        "glm5_next_text",
        "dots3_note",
    }
)
