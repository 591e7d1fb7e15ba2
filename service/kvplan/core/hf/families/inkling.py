"""Inkling (vllm/models/inkling: nvidia/sconv_swa_attn.py; its own InklingModelConfig,
vllm/models/inkling/configs.py): every decoder layer keeps a short-convolution state ahead of its
attention, sliding on local_layer_ids, full elsewhere. vLLM reads an inkling_mm_model config's
text_config (none: every default), the top level's dtype aside."""

from __future__ import annotations

from ...engine.dtypes import MODEL_DTYPE_ALIASES
from ...errors import InvalidConfig
from ...limits import MAX_HEAD_DIM, MAX_HEADS, MAX_HIDDEN_SIZE, MAX_LAYERS, MAX_TOKENS
from ...model.geometry import Geometry
from ..defaults import with_defaults
from ..family import Reading
from ..fields import cfg_int, config_geometry, derived_max_model_len, text_of

MODEL_TYPE = "inkling_model"
_MM = "inkling_mm_model"


def claim(r: Reading) -> Geometry:
    """Inkling's layers: an SCONV entry a decoder layer ahead of its attention, sliding
    (sliding_window_size) on local_layer_ids with the swa_ heads and dims, full elsewhere. vLLM
    reads neither layer_types nor sliding_window here. Read from the config as sent, whatever the
    families claiming it before said."""
    cfg = text_of(r.top, _MM)
    cfg = {**with_defaults({}, MODEL_TYPE), **{k: v for k, v in cfg.items() if v is not None}}
    n = cfg_int(cfg, "num_hidden_layers", MAX_LAYERS)
    q_heads = cfg_int(cfg, "num_attention_heads", MAX_HEADS)
    hidden = cfg_int(cfg, "hidden_size", MAX_HIDDEN_SIZE)
    kv = cfg_int(cfg, "num_key_value_heads", MAX_HEADS)
    head = cfg_int(cfg, "head_dim", MAX_HEAD_DIM) if "head_dim" in cfg else hidden // q_heads
    swa_kv = cfg_int(cfg, "swa_num_key_value_heads", MAX_HEADS) if "swa_num_key_value_heads" in cfg else kv
    swa_head = cfg_int(cfg, "swa_head_dim", MAX_HEAD_DIM) if "swa_head_dim" in cfg else head
    kernel_key = "sconv_kernel_size" if "sconv_kernel_size" in cfg else "conv_kernel_size"
    kernel = cfg_int(cfg, kernel_key, MAX_TOKENS) if kernel_key in cfg else 4
    local_ids = cfg.get("local_layer_ids") or []
    if not isinstance(local_ids, list) or not all(
        isinstance(i, int) and not isinstance(i, bool) for i in local_ids
    ):
        raise InvalidConfig("local_layer_ids", "must be a list of layer indices")
    local = set(local_ids)
    window = cfg_int(cfg, "sliding_window_size", MAX_TOKENS) if local & set(range(n)) else None
    raw_dtype = cfg.get("torch_dtype") or cfg.get("dtype") or "bfloat16"
    dtype = MODEL_DTYPE_ALIASES.get(str(raw_dtype), str(raw_dtype))
    if dtype not in ("bfloat16", "float32"):  # float32 checkpoints are served in bfloat16
        raise InvalidConfig(
            "torch_dtype",
            f"Inkling runs in bfloat16 only (its short-conv state asserts it; "
            f"vllm/models/inkling/nvidia/sconv_swa_attn.py), got {raw_dtype!r}",
        )
    types: list[str] = []
    for i in range(n):
        types += ["sconv", "sliding_attention" if i in local else "full_attention"]
    return config_geometry(
        name=r.name,
        model_type=MODEL_TYPE,
        num_layers=2 * n,
        num_attention_heads=q_heads,
        num_kv_heads=swa_kv,
        head_dim=swa_head,
        layer_types=tuple(types),
        sliding_window=window,
        max_position_embeddings=derived_max_model_len(cfg, MODEL_TYPE),
        full_head_dim=head,
        full_kv_heads=kv,
        sconv_kernel_size=kernel,
        sconv_hidden_size=hidden,
        decoder_layers=tuple(i // 2 for i in range(2 * n)),
        num_decoder_layers=n,
        prefix="",
    )
