"""Speculative decoding as vLLM 0.33 plans it (docs/vllm-rules.md §11): which method a
`--speculative-config` names (vllm/config/speculative.py SpeculativeConfig.__post_init__), the KV
layers its draft adds beside the target's, the draft's weights, and the lookahead that tags the
sliding-window and Mamba specs (vllm/config/vllm.py num_speculative_tokens,
num_prefill_lookahead_tokens).

The draft's attention layers register in the same forward context as the target's, their specs
marked is_draft (vllm/v1/worker/gpu/attn_utils.py get_kv_cache_spec), and kv_cache_planning.py
groups them with the target's: to kvplan they are more entries of the layer pattern, owned by the
last decoder layer (the draft runs on the last pipeline stage)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import msgspec

from ..errors import InvalidInput
from ..limits import MAX_LAYERS, MAX_SPECULATIVE_TOKENS
from .geometry import FULL, MAMBA, MLA, SLIDING, Geometry

SOURCE = "vllm/config/speculative.py (SpeculativeConfig)"
SRC_LAYERS = "vllm/v1/worker/gpu/attn_utils.py (get_kv_cache_spec: draft layers, is_draft)"
SRC_LOOKAHEAD = "vllm/config/vllm.py (num_prefill_lookahead_tokens), vllm/v1/core/kv_cache_planning.py"
SRC_MAMBA = "vllm/model_executor/layers/mamba/abstract.py (MambaSpec num_speculative_blocks)"
SRC_LOAD = "vllm/v1/worker/gpu/model_runner.py (load_model: the drafter loads inside 'Model loading took')"

# vLLM 0.33's methods (SpeculativeMethod and its MTP model types), as --spec-method lists them.
MTP_METHODS = (
    "bailing_hybrid_mtp", "bailing_hybrid_v3_mtp", "deepseek_mtp", "dots3_note_mtp", "ernie_mtp",
    "exaone4_5_mtp", "exaone_moe_mtp", "gemma4_mtp", "glm4_moe_lite_mtp", "glm4_moe_mtp",
    "glm5_next_mtp", "glm_ocr_mtp", "hy_v3_mtp", "hy_v4_mtp", "inkling_mtp", "kimi_k3_mtp",
    "longcat_flash_mtp", "mimo_mtp", "mimo_v2_mtp", "minimax_m3_mtp", "mtp", "nemotron_h_mtp",
    "pangu_ultra_moe_mtp", "qwen3_5_mtp", "qwen3_next_mtp", "qwen4_exp_mtp", "step3p5_mtp", "step5_mtp",
)  # fmt: skip
METHODS = tuple(sorted({
    *MTP_METHODS, "custom_class", "dflash", "draft_model", "dspark", "eagle", "eagle3",
    "extract_hidden_states", "ngram", "ngram_gpu", "suffix",
}))  # fmt: skip
# Methods that draft from the prompt: no draft layers, no weights (ngram's draft config is the target's).
NO_DRAFT = frozenset({"ngram", "ngram_gpu", "suffix"})
EAGLE = frozenset({"eagle", "eagle3"})
# The methods kvplan plans; the others vLLM runs with drafters kvplan does not size yet.
PLANNED = NO_DRAFT | EAGLE | {"mtp", "draft_model"}
# MTP drafts whose layers are not the target's attention layers again (own windows, own caches).
_MTP_NOT_PLANNED = frozenset({"gemma4_mtp", "dots3_note_mtp", "inkling_mtp", "minimax_m3_mtp", "step5_mtp"})

# SpeculativeConfig's fields (a pydantic dataclass with extra="forbid": any other key is refused).
CONFIG_KEYS = frozenset({
    "enforce_eager", "num_speculative_tokens", "model", "method", "draft_tensor_parallel_size",
    "tensor_parallel_size", "quantization", "moe_backend", "attention_backend", "kv_cache_dtype",
    "max_model_len", "revision", "code_revision", "index_share_for_mtp_iteration",
    "disable_padded_drafter_batch", "disable_eagle_block_drop", "disable_lookahead_block_hashes",
    "draft_lm_head_quantization", "use_local_argmax_reduction", "use_heterogeneous_vocab",
    "prompt_lookup_max", "prompt_lookup_min", "parallel_drafting", "num_speculative_tokens_per_batch_size",
    "suffix_decoding_max_tree_depth", "suffix_decoding_max_cached_requests",
    "suffix_decoding_max_spec_factor", "suffix_decoding_min_token_prob", "rejection_sample_method",
    "synthetic_acceptance_rates", "synthetic_acceptance_length", "enable_adaptive_verification",
    "draft_sample_method", "dspark_draft_topk", "xpress_topc", "fly_window_size",
    "fly_entropy_threshold", "fly_entropy_top_k",
})  # fmt: skip
# The shorthands and the key each sets (vllm/engine/arg_utils.py create_speculative_config).
SHORTHANDS = {"--spec-method": "method", "--spec-model": "model", "--spec-tokens": "num_speculative_tokens"}
# Keys that would change the draft's KV spec or weights in ways kvplan does not model.
_UNMODELLED_KEYS = ("quantization", "kv_cache_dtype", "tensor_parallel_size")

# SpeculativeConfig.suffix_decoding_max_tree_depth's default (vllm/config/speculative.py): suffix
# decoding's num_speculative_tokens when the config leaves it out.
SUFFIX_MAX_TREE_DEPTH = 24


class Speculation(msgspec.Struct, frozen=True, gc=False, kw_only=True):
    """The speculative decoding a scenario plans: vLLM's method after its own renaming, the tokens
    proposed a step, the KV layer kinds its draft adds (one character a layer) and what the
    lookahead adds to sliding windows and Mamba states."""

    method: str
    num_speculative_tokens: int
    draft_layers: str
    draft_source: str  # "the target's MTP layers", "the draft model", "none"
    extra_retained_tokens: int
    num_speculative_blocks: int


def _fail(flag: str, reason: str) -> InvalidInput:
    return InvalidInput("command", f"{flag}: {reason}")


def read_config(
    given: Mapping[str, Any] | None, shorthands: Mapping[str, Any], tensor: int = 1
) -> dict[str, Any]:
    """The settings a command's --speculative-config (its JSON) and shorthands give, as vLLM's
    create_speculative_config merges them: a shorthand and the key it sets are mutually exclusive;
    dashes in keys are underscores; an unknown key is refused (extra="forbid"). InvalidInput
    (field `command`) names the flag and why."""
    config: dict[str, Any] = {}
    if given is not None:
        if not isinstance(given, Mapping):
            raise _fail("--speculative-config", "must be a JSON object")
        config = {str(k).replace("-", "_"): v for k, v in given.items()}
    for flag, value in shorthands.items():
        key = SHORTHANDS[flag]
        if key in config:
            raise _fail(flag, f"{flag} and --speculative-config['{key}'] are mutually exclusive")
        config[key] = value
    if not config:
        return {}
    unknown = sorted(set(config) - CONFIG_KEYS)
    if unknown:
        raise _fail("--speculative-config", f"{unknown[0]!r} is not a key SpeculativeConfig takes")
    method, model, n = config.get("method"), config.get("model"), config.get("num_speculative_tokens")
    if method is not None and method not in METHODS:
        raise _fail("--speculative-config", f"method {str(method)[:40]!r} is not one vLLM 0.33 takes")
    if model is not None and (not isinstance(model, str) or not model):
        raise _fail("--speculative-config", "model must be a model id")
    if n is not None and (type(n) is not int or not 1 <= n <= MAX_SPECULATIVE_TOKENS):
        raise _fail(
            "--speculative-config",
            f"num_speculative_tokens must be an integer from 1 to {MAX_SPECULATIVE_TOKENS}",
        )
    for key in _UNMODELLED_KEYS:
        if config.get(key) is not None:
            raise _fail("--speculative-config", f"{key} for the draft is not modelled by kvplan; drop it")
    draft_tp = config.get("draft_tensor_parallel_size")
    if draft_tp is not None and draft_tp != tensor:
        raise _fail(
            "--speculative-config",
            f"draft_tensor_parallel_size {draft_tp!r} differs from the target's {tensor}: kvplan plans the "
            "draft at the target's tensor parallel size only",
        )
    out: dict[str, Any] = {}
    if method is not None:
        out["speculative_method"] = method
    if model is not None:
        out["speculative_model"] = model
    if n is not None:
        out["num_speculative_tokens"] = n
    check_request(
        out.get("speculative_method"), out.get("speculative_model"), False, n, "--speculative-config"
    )
    return out


def vllm_method(method: str | None, model: str | None, draft: Geometry | None) -> str | None:
    """The method vLLM runs (SpeculativeConfig.__post_init__): an unnamed one inferred from the
    model (ngram, else an EAGLE head by its name, an MTP draft by its model type, else a draft
    model); every MTP model type is "mtp"."""
    if method is None:
        if model is None:
            return None
        if model in ("ngram", "[ngram]"):
            return "ngram"
        low = model.lower()
        if "eagle-" in low:
            return "eagle"
        if "eagle3" in low:
            return "eagle3"
        if draft is not None and draft.model_type in MTP_METHODS:
            return "mtp"
        return "draft_model"
    if method == "[ngram]":
        return "ngram"
    return "mtp" if method in MTP_METHODS else method


def check_request(
    method: str | None, model: str | None, inline: bool, n: int | None, field: str = "speculative_method"
) -> None:
    """The combinations vLLM refuses before any draft is read: a method that needs a draft model
    without one, tokens without a method or model."""
    say = (lambda f, r: _fail(field, r)) if field.startswith("--") else InvalidInput
    has_model = model is not None or inline
    resolved = vllm_method(method, model, None) if model is not None or method is not None else None
    if resolved is None and inline:
        resolved = "draft_model"
    if resolved is None:
        if n is not None:
            raise say(
                "num_speculative_tokens",
                "num_speculative_tokens was provided but without speculative model (vLLM: give a method)",
            )
        return
    if resolved in (*EAGLE, "draft_model") and not has_model:
        raise say("speculative_model", f"method {resolved!r} needs a draft model (speculative_model)")
    if resolved == "mtp" and not has_model and n is None:
        raise say(
            "num_speculative_tokens",
            "mtp without a model needs num_speculative_tokens (vLLM drafts from the target)",
        )


def resolve(
    target: Geometry,
    method: str | None,
    model: str | None,
    n: int | None,
    draft: Geometry | None,
) -> Speculation | None:
    """The speculative decoding a scenario's settings describe, checked as vLLM checks it, with the
    KV layers its draft adds; None without one."""
    check_request(method, model, draft is not None, n)
    name = method
    m = vllm_method(method, model, draft)
    if m is None:
        if draft is None:
            return None
        m = "draft_model"
    if m not in PLANNED or (name in _MTP_NOT_PLANNED):
        raise InvalidInput(
            "speculative_method", f"{name or m!r}: kvplan does not plan this drafter's KV and weights yet"
        )
    if m not in NO_DRAFT:
        _check_plain_attention(target)
    if m in NO_DRAFT:
        if n is None and m == "suffix":
            # vllm/config/speculative.py _validate_suffix_decoding: the tree's depth is the maximum.
            n = SUFFIX_MAX_TREE_DEPTH
        if n is None:
            raise InvalidInput("num_speculative_tokens", f"{m} needs num_speculative_tokens")
        return Speculation(
            method=m, num_speculative_tokens=n, draft_layers="", draft_source="none",
            extra_retained_tokens=0, num_speculative_blocks=n,
        )  # fmt: skip
    if m == "mtp":
        head = (draft or target).mtp
        if head is None or head.layers == 0:
            raise InvalidInput(
                "speculative_method",
                f"{target.name} has no MTP layers (num_nextn_predict_layers or mtp_num_hidden_layers in its "
                "config): vLLM has no draft to load",
            )
        if n is None:
            n = head.layers  # n_predict: vLLM's default
        elif n > head.layers and n % head.layers:
            raise InvalidInput(
                "num_speculative_tokens",
                f"num_speculative_tokens:{n} must be divisible by n_predict={head.layers}",
            )
        kind = MLA if MLA in target.layer_pattern else FULL
        # Multi-module MTP (more than one MTP layer used): each module reads one token further.
        lookahead = n if min(head.layers, n) > 1 else 1
        return Speculation(
            method=m, num_speculative_tokens=n, draft_layers=kind * head.layers,
            draft_source="the target's MTP layers", extra_retained_tokens=max(0, lookahead - 1),
            num_speculative_blocks=n,
        )  # fmt: skip
    assert draft is not None  # check_request: eagle and draft_model name a model
    if n is None:
        raise InvalidInput(
            "num_speculative_tokens", "a speculative model was provided, but num_speculative_tokens was not"
        )
    _check_same_page(target, draft)
    return Speculation(
        method=m, num_speculative_tokens=n, draft_layers=draft.layer_pattern,
        draft_source="the draft model", extra_retained_tokens=0, num_speculative_blocks=n,
    )  # fmt: skip


def _check_plain_attention(target: Geometry) -> None:
    """A target whose attention layers are plain full, sliding or MLA layers, each one spec: a
    draft layer of that spec is what vLLM adds. Targets with caches of their own beside or in
    place of attention (DeepSeek-V4, Qwen4-exp QSA, Inkling, MiniMax-M3, GLM-5-next, Dots3, HY-V4,
    Gemma-4) are refused rather than planned wrong."""
    own = (
        target.dsv4, target.qsa, target.sconv_kernel_size, target.indexer_layers, target.kpool_indexer,
        target.mla_row_dim, target.sliding_mla_dim, target.full_head_dim, target.sparse_mla_layers,
        target.mla_indexer_layers,
    )  # fmt: skip
    if any(x is not None for x in own) or set(target.layer_pattern) - {FULL, SLIDING, MLA, MAMBA}:
        raise InvalidInput(
            "speculative_method",
            f"{target.name}'s caches are not plain attention layers: kvplan does not plan its drafter yet",
        )


def _check_same_page(target: Geometry, draft: Geometry) -> None:
    """A draft whose attention layers have the target's KV spec (KV heads, head dims):
    the case kvplan plans. A draft of another page size (vLLM unifies pages across groups) or of
    other layer kinds is refused rather than planned wrong."""
    kinds = set(draft.layer_pattern)
    if not kinds <= {FULL, SLIDING} or (SLIDING in kinds and draft.sliding_window != target.sliding_window):
        raise InvalidInput(
            "speculative_model",
            f"{draft.name}'s layers ({', '.join(sorted(kinds))}) are not full attention layers of the "
            "target's window: kvplan does not plan that draft's KV yet",
        )
    if target.is_mla or (FULL not in target.layer_pattern and SLIDING not in target.layer_pattern):
        raise InvalidInput(
            "speculative_model", f"{target.name} has no standard attention layers for the draft's to join"
        )
    # The draft runs in the target's dtype (SpeculativeConfig builds its ModelConfig with
    # dtype=target_model_config.dtype), so its KV dtype is the target's whatever its config says.
    mine = (draft.num_kv_heads, draft.head_dim, draft.v_head_dim)
    theirs = (target.num_kv_heads, target.head_dim, target.v_head_dim)
    if mine != theirs or target.full_head_dim is not None:
        raise InvalidInput(
            "speculative_model",
            f"{draft.name}'s KV layers (KV heads, head dim, V head dim = {mine}) differ from "
            f"{target.name}'s {theirs}: vLLM would plan pages of two sizes, which kvplan does not model yet",
        )
    if draft.num_layers > MAX_LAYERS - target.num_layers:
        raise InvalidInput("speculative_model", f"{draft.name} adds more layers than kvplan plans")


def with_draft_layers(g: Geometry, spec: Speculation) -> Geometry:
    """The target's geometry with the draft's KV layers after its own, owned by its last decoder
    layer (so on the last pipeline stage); the draft's layers take the target's dims
    (_check_same_page)."""
    if not spec.draft_layers:
        return g
    n = len(spec.draft_layers)
    owners = g.decoder_layers or tuple(range(g.num_layers))
    last = g.decoder_layer_count - 1
    return msgspec.structs.replace(
        g,
        num_layers=g.num_layers + n,
        layer_pattern=g.layer_pattern + spec.draft_layers,
        decoder_layers=(*owners, *([last] * n)),
        num_decoder_layers=g.decoder_layer_count,
    )


def draft_params(target: Geometry, spec: Speculation, draft: Geometry | None) -> tuple[int, int] | None:
    """(parameters, of them routed experts) the drafter loads, where known: the MTP layers' from
    the target's config; a draft model's from its own (None when its count is unknown)."""
    if spec.method == "mtp":
        head = (draft or target).mtp
        if head is None or head.params is None:
            return None
        return head.params, head.expert_params
    if draft is None or draft.params_total is None:
        return None
    return draft.params_total, draft.params_expert or 0
