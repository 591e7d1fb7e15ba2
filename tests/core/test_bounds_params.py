"""Issue 11: the parameter estimate is ≥ 0 for every config it accepts, and a config whose fields
are out of range is refused naming the field, never answered with negative counts."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from kvplan.core import limits
from kvplan.core.errors import InvalidConfig
from kvplan.core.hf.params import estimate_params

MODEL_TYPES = [
    "llama", "qwen2", "qwen2_moe", "qwen3", "qwen3_moe", "gemma3", "gemma3_text", "gpt_oss", "mixtral",
    "deepseek_v2", "deepseek_v3", "deepseek_v32", "kimi_k2", "glm4_moe", "glm_moe_dsa", "something_new",
]  # fmt: skip


def size(maximum: int) -> st.SearchStrategy[int]:
    """Mostly model-like sizes, sometimes anything up to the limit."""
    return st.one_of(st.integers(0, 64), st.integers(0, maximum))


@st.composite
def configs(draw, moe: bool | None = None):
    """A config.json with every field params.py reads either unset, null or within its range."""
    cfg: dict = {"model_type": draw(st.sampled_from(MODEL_TYPES))}

    def maybe(key: str, value: st.SearchStrategy) -> None:
        choice = draw(st.sampled_from(["set", "set", "null", "unset"]))
        if choice == "set":
            cfg[key] = draw(value)
        elif choice == "null":
            cfg[key] = None

    layers = draw(st.integers(1, 96) | st.integers(1, limits.MAX_LAYERS))
    cfg["num_hidden_layers"] = layers
    cfg[draw(st.sampled_from(["hidden_size", "d_model", "n_embd"]))] = draw(size(limits.MAX_HIDDEN_SIZE))
    cfg["vocab_size"] = draw(size(limits.MAX_VOCAB_SIZE))
    cfg["num_attention_heads"] = draw(size(limits.MAX_HEADS))
    maybe(draw(st.sampled_from(["num_key_value_heads", "num_kv_heads"])), size(limits.MAX_HEADS))
    maybe("head_dim", size(limits.MAX_HEAD_DIM))
    maybe(draw(st.sampled_from(["intermediate_size", "ffn_hidden_size"])), size(limits.MAX_INTERMEDIATE_SIZE))
    experts = draw(st.integers(1, 512) if moe else size(limits.MAX_EXPERTS) if moe is None else st.just(0))
    cfg[draw(st.sampled_from(["n_routed_experts", "num_experts", "num_local_experts"]))] = experts
    maybe(draw(st.sampled_from(["num_experts_per_tok", "moe_topk"])), st.integers(0, experts))
    maybe("moe_intermediate_size", size(limits.MAX_INTERMEDIATE_SIZE))
    maybe("n_shared_experts", size(limits.MAX_EXPERTS))
    maybe("shared_expert_intermediate_size", size(limits.MAX_INTERMEDIATE_SIZE))
    for key in (
        "kv_lora_rank",
        "q_lora_rank",
        "qk_rope_head_dim",
        "qk_nope_head_dim",
        "v_head_dim",
        "index_head_dim",
    ):
        maybe(key, size(limits.MAX_HEAD_DIM))
    maybe("index_n_heads", size(limits.MAX_HEADS))
    maybe("attention_bias", st.booleans())
    maybe("tie_word_embeddings", st.booleans())
    # Dense layers named both ways may overlap and together reach every layer.
    maybe("first_k_dense_replace", st.sampled_from([0, layers]) | st.integers(0, layers))
    every = list(range(layers))
    maybe(
        "mlp_only_layers", st.permutations(every).map(lambda ls: ls[: max(1, len(ls) // 2)]) | st.just(every)
    )
    maybe("moe_layer_freq", st.integers(1, 8) | st.integers(1, limits.MAX_LAYERS))
    maybe("decoder_sparse_step", st.integers(1, 8) | st.integers(1, limits.MAX_LAYERS))
    if draw(st.booleans()):  # multi-modal: the text model's fields sit in text_config
        return {"model_type": "wrapper", "text_config": cfg}
    return cfg


@settings(max_examples=400, deadline=None)
@given(cfg=configs())
def test_every_count_of_an_accepted_config_is_at_least_zero(cfg):
    try:
        est = estimate_params(cfg)
    except InvalidConfig as e:  # only the total may exceed its limit when every field is in range
        assert e.field == "config" and "MAX_PARAMS" in e.reason
        return
    if est is None:
        return
    assert est.total >= 1 and est.expert >= 0 and est.active >= 1
    assert est.expert <= est.total and est.active <= est.total


@settings(max_examples=200, deadline=None)
@given(cfg=configs(moe=True), data=st.data())
def test_an_out_of_range_field_is_refused_naming_it(cfg, data):
    text = cfg.get("text_config", cfg)
    text.update(hidden_size=64, num_attention_heads=8, vocab_size=1000, intermediate_size=256)
    text.update(
        moe_intermediate_size=64, n_shared_experts=0, num_hidden_layers=min(text["num_hidden_layers"], 96)
    )
    layers = text["num_hidden_layers"]
    for key in ("d_model", "n_embd", "ffn_hidden_size", "first_k_dense_replace", "mlp_only_layers"):
        text.pop(key, None)
    experts = next(text[k] for k in ("n_routed_experts", "num_experts", "num_local_experts") if k in text)
    field, value = data.draw(
        st.sampled_from(
            [
                ("hidden_size", -1),
                ("vocab_size", limits.MAX_VOCAB_SIZE + 1),
                ("num_attention_heads", "8"),
                ("head_dim", -128),
                ("num_experts_per_tok", experts + 1),
                ("first_k_dense_replace", layers + 1),
                ("moe_layer_freq", 0),
                ("decoder_sparse_step", -2),
                ("mlp_only_layers", list(range(layers + 1))),
                ("mlp_only_layers", [0, 0]),
                ("mlp_only_layers", [-1]),
                ("mlp_only_layers", 3),
            ]
        )
    )
    text[field] = value
    text.pop("moe_topk", None)
    try:
        estimate_params(cfg)
    except InvalidConfig as e:
        assert e.field.split("[")[0] == field
    else:
        raise AssertionError(f"{field} = {value!r} was accepted")
