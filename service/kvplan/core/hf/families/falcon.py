"""Falcon (vllm/model_executor/models/falcon.py; transformers' FalconConfig, which also reads the
old RefinedWeb model types): its KV heads as vllm/config/model.py get_total_num_kv_heads reads
them."""

from __future__ import annotations

from ..family import Config


def attention_config(cfg: Config, n: int, q_heads: int) -> Config:
    """The old decoder with multi_query keeps one KV head, without it one a query head; the new
    decoder reads num_kv_heads / n_head_kv as any config."""
    if cfg.get("n_head_kv") is not None or cfg.get("new_decoder_architecture"):
        return cfg
    return {**cfg, "num_kv_heads": 1 if cfg.get("multi_query") else q_heads}
