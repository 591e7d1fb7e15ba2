"""The family table: which module under core/hf/families/ reads which architectures and model
types, and through which hooks (core/hf/family.py says what each hook is asked). It plays the part
of vLLM's vllm/model_executor/models/registry.py, which maps an architecture to the module that
builds it. A model type no row declares is read by the standard reader's own rules alone.

Changing a family is its module plus its row. Each architecture and model type is declared by
one row only (tests/core/test_families.py). Order matters for the rows that claim a config by
its architectures (`claim`): the reader walks them top to bottom, a later claim overriding an
earlier one's model type, the rows claiming by name too (claim_by_name) last."""

from __future__ import annotations

from ..family import Family
from . import (
    alice_ai,
    bailing,
    cohere,
    deepseek_v4,
    dots3,
    falcon,
    falcon_h1,
    flint,
    gemma,
    glm5_next,
    gpt_oss,
    granitemoehybrid,
    hy_v4,
    inkling,
    jamba,
    kimi,
    lfm2,
    mamba,
    minimax_m3,
    muse_spark,
    nemotron_h,
    nemotron_nas,
    olmo_hybrid,
    qwen2,
    qwen3_next,
    qwen4_exp,
    step5,
    unread_hybrids,
    zamba2,
)


def _set(*names: str) -> frozenset[str]:
    return frozenset(names)


FAMILIES: tuple[Family, ...] = (
    # Claimed by their architectures, in the order the reader decides them.
    Family(module=alice_ai.__name__, architectures=_set("AliceAIForCausalLM"), model_types=_set("alice_ai"),
           claim=alice_ai.claim, layer_types=alice_ai.layer_types, state=alice_ai.state),
    Family(module=deepseek_v4.__name__,
           architectures=_set("DeepseekV4ForCausalLM", "DeepseekV4ForConditionalGeneration",
                              "DeepseekV41ForCausalLM"),
           model_types=_set("deepseek_v4"), claim=deepseek_v4.claim, check=deepseek_v4.check,
           read=deepseek_v4.read),
    Family(module=step5.__name__, architectures=_set("Step5ForCausalLM", "Step5ForConditionalGeneration"),
           model_types=_set("step5"), claim=step5.claim, read=step5.read),
    Family(module=kimi.__name__, architectures=_set("KimiK3ForConditionalGeneration"),
           model_types=_set("kimi_linear"), claim=kimi.claim, shape_config=kimi.shape_config,
           layer_types=kimi.layer_types, state=kimi.state),
    Family(module=glm5_next.__name__,
           architectures=_set("Glm5NextForCausalLM", "Glm5NextForConditionalGeneration"),
           model_types=_set("glm5_next_text"), claim=glm5_next.claim, layer_types=glm5_next.layer_types,
           state=glm5_next.state, mla=glm5_next.mla),
    # Claimed by their architectures or by the model type the config goes by (its top level's,
    # or its text config's once the rows above have renamed it).
    Family(module=minimax_m3.__name__,
           architectures=_set("MiniMaxM3SparseForCausalLM", "MiniMaxM3SparseForConditionalGeneration"),
           model_types=_set("minimax_m3_text", "minimax_m3_vl"), claim_by_name=True, claim=minimax_m3.claim,
           attention_extras=minimax_m3.attention_extras),
    Family(module=inkling.__name__,
           architectures=_set("InklingForCausalLM", "InklingForConditionalGeneration"),
           model_types=_set("inkling_model", "inkling_mm_model"), claim_by_name=True, claim=inkling.claim),
    # Read by their model type.
    Family(module=bailing.__name__, model_types=_set("bailing_hybrid"), layer_types=bailing.layer_types,
           state=bailing.state),
    Family(module=cohere.__name__, model_types=_set("cohere2"), layer_types=cohere.layer_types,
           window=cohere.window),
    Family(module=dots3.__name__, model_types=_set("dots3_note"), read=dots3.read),
    Family(module=falcon.__name__, model_types=_set("falcon"),
           aliases={"RefinedWeb": "falcon", "RefinedWebModel": "falcon"},
           attention_config=falcon.attention_config),
    Family(module=falcon_h1.__name__, model_types=_set("falcon_h1"), kv_slots=falcon_h1.kv_slots,
           state=falcon_h1.state),
    Family(module=flint.__name__, model_types=_set("flint"), layer_types=flint.layer_types),
    Family(module=gemma.__name__,
           model_types=_set("gemma2", "gemma3", "gemma3_text", "gemma3n", "gemma3n_text"),
           model_type_prefixes=("gemma4",), layer_types=gemma.layer_types,
           kv_shared_layers=gemma.kv_shared_layers, attention_extras=gemma.attention_extras),
    Family(module=gpt_oss.__name__, model_types=_set("gpt_oss"), layer_types=gpt_oss.layer_types),
    Family(module=granitemoehybrid.__name__, model_types=_set("granitemoehybrid"),
           state=granitemoehybrid.state),
    Family(module=hy_v4.__name__, model_types=_set("hy_v4"), layer_types=hy_v4.layer_types, mla=hy_v4.mla),
    Family(module=jamba.__name__, model_types=_set("jamba"), layer_types=jamba.layer_types,
           state=jamba.state),
    Family(module=lfm2.__name__, model_types=_set("lfm2", "lfm2_moe"), state=lfm2.state),
    Family(module=mamba.__name__, model_types=_set("mamba", "falcon_mamba", "mamba2"),
           config_class=mamba.config_class, layer_types=mamba.layer_types, state=mamba.state),
    Family(module=muse_spark.__name__, model_types=_set("muse_spark", "muse_spark_text"),
           config_class=muse_spark.config_class),
    Family(module=nemotron_h.__name__, model_types=_set("nemotron_h"), kv_slots=nemotron_h.kv_slots,
           state=nemotron_h.state),
    Family(module=nemotron_nas.__name__, model_types=_set("nemotron-nas"),
           attention_config=nemotron_nas.attention_config, kv_slots=nemotron_nas.kv_slots),
    Family(module=olmo_hybrid.__name__, model_types=_set("olmo_hybrid"), layer_types=olmo_hybrid.layer_types,
           state=olmo_hybrid.state),
    Family(module=qwen2.__name__, model_types=_set("qwen2", "qwen2_moe", "qwen3", "qwen3_moe"),
           layer_types=qwen2.layer_types),
    Family(module=qwen3_next.__name__,
           model_types=_set("qwen3_next", "qwen3_5", "qwen3_5_text", "qwen3_5_moe", "qwen3_5_moe_text"),
           layer_types=qwen3_next.layer_types, state=qwen3_next.state),
    Family(module=qwen4_exp.__name__, model_types=_set("qwen4_exp", "qwen4_exp_text"),
           decoder_config=qwen4_exp.decoder_config, kv_slots=qwen4_exp.kv_slots, state=qwen4_exp.state,
           attention_extras=qwen4_exp.attention_extras),
    Family(module=unread_hybrids.__name__,
           model_types=_set("bamba", "zamba", "plamo2", "minimax", "minimax_text_01", "bailing_moe_linear"),
           refuses_state=True),
    Family(module=zamba2.__name__, model_types=_set("zamba2"), config_class=zamba2.config_class,
           kv_slots=zamba2.kv_slots, state=zamba2.state, attention_dims=zamba2.attention_dims),
)  # fmt: skip
