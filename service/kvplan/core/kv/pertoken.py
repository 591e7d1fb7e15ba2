"""Bytes one token of KV costs, per GPU and for the whole model, and what one request of a
context holds: the answer of /v1/per-token and its ledger (docs/vllm-rules.md §1, §5, §6).
The per-layer figures it reads are layers.py."""

from __future__ import annotations

from collections.abc import Callable

import msgspec
from msgspec.structs import replace

from .. import warnings as w
from ..engine.dtypes import (
    MODEL_DTYPES,
    attention_cell_bytes,
    mla_cell_bytes,
    resolve_kv_dtype,
)
from ..errors import InvalidInput
from ..ledger import LedgerBuilder, Scalar, Step
from ..model.geometry import (
    CIRCULAR_BUFFER,
    COMPRESSED_MLA,
    FULL,
    KIND_NAMES,
    SCONV,
    SLIDING_MLA,
    SUMMARY,
    Geometry,
)
from ..model.mamba import SRC_SHAPES, SRC_SPEC, Mixer, state_shapes
from ..units import GiB, KiB
from . import dsv4
from .layers import (
    INDEXER_CACHE_DTYPE,
    SRC_INDEXER,
    SRC_PAGE,
    SRC_QSA,
    SRC_RING,
    SRC_SCONV,
    SRC_SUMMARY,
    SRC_TP,
    SUMMARY_STATE_BYTES,
    SUMMARY_TOKENS_PER_STATE,
    KindBytes,
    LayerBytes,
    layer_bytes,
    request_bytes,
)
from .parallel import SRC_PP, Parallel


class PerToken(msgspec.Struct, frozen=True, gc=False, kw_only=True, omit_defaults=True):
    kv_cache_dtype: str
    bytes_per_token: int
    bytes_per_token_model: int
    by_kind: tuple[KindBytes, ...]
    by_stage: tuple[int, ...]
    kv_heads_per_gpu: int
    mha_equivalent_bytes: int
    mha_equivalent_ratio: float
    context_tokens: int | None
    kv_bytes_per_request: int | None
    kv_bytes_per_request_model: int | None
    warnings: tuple[w.Warning, ...]
    ledger: tuple[Step, ...] = ()


def per_token(
    geometry: Geometry,
    kv_cache_dtype: str = "auto",
    skip_layers: tuple[int | str, ...] = (),
    par: Parallel | None = None,
    context_tokens: int | None = None,
    explain: bool = False,
) -> PerToken:
    par = par or Parallel()
    if context_tokens is not None and (
        isinstance(context_tokens, bool) or not isinstance(context_tokens, int) or context_tokens < 1
    ):
        raise InvalidInput("context_tokens", f"must be a positive integer, got {context_tokens!r}")
    lb = layer_bytes(geometry, kv_cache_dtype, skip_layers, par)
    pt = per_token_of(geometry, kv_cache_dtype, lb, par, context_tokens)
    if explain:
        pt = replace(pt, ledger=per_token_ledger(geometry, lb, par, pt))
    return pt


def per_token_of(
    geometry: Geometry, kv_cache_dtype: str, lb: LayerBytes, par: Parallel, context_tokens: int | None
) -> PerToken:
    """The per-token answer from an already computed layout (no per-layer work)."""
    model = lb.model_total
    base = PerToken(
        kv_cache_dtype="fp8_ds_mla"
        if geometry.dsv4 is not None
        else resolve_kv_dtype(kv_cache_dtype, geometry.dtype),
        bytes_per_token=lb.by_stage[lb.worst_stage],
        bytes_per_token_model=model,
        by_kind=lb.by_kind,
        by_stage=lb.by_stage,
        kv_heads_per_gpu=lb.kv_heads_per_gpu,
        mha_equivalent_bytes=lb.mha_bytes,
        mha_equivalent_ratio=lb.mha_bytes / model if model else 0.0,
        context_tokens=None,
        kv_bytes_per_request=None,
        kv_bytes_per_request_model=None,
        warnings=lb.warnings,
        ledger=(),
    )
    return base if context_tokens is None else for_context(base, geometry, lb, par, context_tokens)


def for_context(base: PerToken, geometry: Geometry, lb: LayerBytes, par: Parallel, tokens: int) -> PerToken:
    """A layout's per-token answer (`per_token_of` without a context) with what one request of
    `tokens` holds: a budget keeps the former per layout and adds the latter per request."""
    window = geometry.sliding_window
    kept = min(tokens, window) if window else tokens
    return replace(
        base,
        context_tokens=tokens,
        kv_bytes_per_request=request_bytes(lb, lb.worst_stage, tokens, window, par.decode_context),
        kv_bytes_per_request_model=(
            lb.model_full * tokens
            + lb.model_sliding * kept
            + lb.model_chunked * min(tokens, lb.chunk)
            + lb.model_sconv * min(tokens, lb.sconv_kernel)
        ),
    )


def _explain_mla(led: LedgerBuilder, g: Geometry, lb: LayerBytes, par: Parallel, kb: KindBytes) -> None:
    """MLA's latent row (padded for Dots3), with DeepSeek-V3.2's indexer beside it when it has one."""
    idx = g.index_head_dim
    formula = (
        "f × Hkv × (kv_lora_rank + qk_rope_head_dim) × b, f = 1, Hkv = 1"
        if kb.kv_dtype != "fp8_ds_mla"
        else "fp8_ds_mla layout: 656 B"
    )
    if g.mla_row_dim is not None:  # Dots3NotePaddedMLAAttention
        formula = "mla_row_dim × b (the latent's rows padded to the sliding layers' width)"
    row = g.mla_row_dim or g.mla_latent_dim
    latent = mla_cell_bytes(kb.kv_dtype, row, kb.kv_dtype == "fp8_ds_mla")
    if idx is not None and kb.bytes_per_token_per_layer > latent:
        formula += f" + indexer ({idx} fp8 + 4 B scale)"
    elif idx is not None:
        formula += " (no indexer cache of its own: dense, or reusing another layer's top-k)"
    led.add(
        f"bytes_per_token_per_layer[{kb.kind}]",
        formula,
        kb.bytes_per_token_per_layer,
        "B",
        SRC_PAGE,
        kv_lora_rank=g.kv_lora_rank,
        qk_rope_head_dim=g.qk_rope_head_dim,
        mla_row_dim=g.mla_row_dim,
        kv_cache_dtype=kb.kv_dtype,
    )


def _explain_sliding_mla(
    led: LedgerBuilder, g: Geometry, lb: LayerBytes, par: Parallel, kb: KindBytes
) -> None:
    if g.dsv4 is not None:
        _explain_dsv4(led, g, lb, par, kb)
        return
    led.add(
        f"bytes_per_token_per_layer[{kb.kind}]",
        "sliding_mla_dim × b, one latent per token (SlidingWindowMLASpec), replicated under TP",
        kb.bytes_per_token_per_layer,
        "B",
        SRC_PAGE,
        sliding_mla_dim=g.sliding_mla_dim,
        kv_cache_dtype=kb.kv_dtype,
    )


def _explain_dsv4(led: LedgerBuilder, g: Geometry, lb: LayerBytes, par: Parallel, kb: KindBytes) -> None:
    d = g.dsv4
    sliding = kb.kind == KIND_NAMES[SLIDING_MLA]
    led.add(
        f"bytes_per_token_per_layer[{kb.kind}]",
        "fp8_ds_mla: 584 B a token, kept for the sliding window"
        if sliding
        else "⌈(584 B + indexer K state at ratio 4) / compress ratio⌉ (pages are exact)",
        kb.bytes_per_token_per_layer,
        "B",
        dsv4.SRC_ATTN,
        **(
            {"sliding_window": d.sliding_window if d is not None else None}
            if sliding
            else {"index_state_bytes": d.index_cell_bytes if d is not None else None}
        ),
    )


def _explain_compressed_mla(
    led: LedgerBuilder, g: Geometry, lb: LayerBytes, par: Parallel, kb: KindBytes
) -> None:
    if g.qsa is None:  # DeepSeek-V4's compressed caches
        _explain_dsv4(led, g, lb, par, kb)
        return
    led.add(
        f"bytes_per_token_per_layer[{kb.kind}]",
        "one key_bytes key per compress_ratio tokens, one head on every TP rank",
        kb.bytes_per_token_per_layer,
        "B",
        SRC_QSA,
        key_bytes=g.qsa.key_bytes,
        compress_ratio=g.qsa.compress_ratio,
    )


def _explain_sconv(led: LedgerBuilder, g: Geometry, lb: LayerBytes, par: Parallel, kb: KindBytes) -> None:
    led.add(
        f"bytes_per_token_per_layer[{kb.kind}]",
        "Hkv_per_gpu × 2^⌈log2(2·D + 2·hidden / Hkv)⌉ × 2 B: K, V and the attention- and MLP-output "
        "streams packed in one bf16 head, kept for sconv_kernel_size tokens in blocks of that size",
        kb.bytes_per_token_per_layer,
        "B",
        SRC_SCONV,
        hidden=g.sconv_hidden_size,
        sconv_kernel_size=g.sconv_kernel_size,
        TP=par.tensor,
    )


def _explain_mamba(led: LedgerBuilder, g: Geometry, lb: LayerBytes, par: Parallel, kb: KindBytes) -> None:
    """The recurrent state a layer keeps per request: from the mixer's shapes when the config gave
    them, else the inline total split over TP."""
    m = g.mamba
    if m is None:
        led.add(
            "mamba_state_bytes_per_layer",
            "state per request, split over TP",
            lb.mamba_state_gpu,
            "B",
            SRC_SPEC,
            mamba_state_bytes=g.mamba_state_bytes,
            TP=par.tensor,
        )
        return
    shapes = ["×".join(map(str, shape)) for shape in state_shapes(m, par.tensor)]
    parts: dict[str, Scalar]
    if m.mixer is Mixer.LINEAR_ATTENTION:  # one state, in the conv states' dtype
        formula = "state × dtype, shape per GPU"
        parts = {"state_shape": shapes[0], "dtype": m.conv_dtype}
    else:
        formula = "conv state × conv dtype + SSM state × SSM dtype, shapes per GPU"
        parts = {"conv_shape": shapes[0], "ssm_shape": shapes[1] if len(shapes) > 1 else None,
                 "conv_dtype": m.conv_dtype, "ssm_dtype": m.ssm_dtype}  # fmt: skip
    led.add(
        "mamba_state_bytes_per_layer",
        formula,
        lb.mamba_state_gpu,
        "B",
        SRC_SHAPES,
        mixer=m.mixer.value,
        **parts,
        TP=par.tensor,
    )


def _explain_summary(led: LedgerBuilder, g: Geometry, lb: LayerBytes, par: Parallel, kb: KindBytes) -> None:
    led.add(
        f"bytes_per_token_per_layer[{kb.kind}]",
        "one 256 B summary (uint8) per 8 tokens, one head on every TP rank",
        kb.bytes_per_token_per_layer,
        "B",
        SRC_SUMMARY,
        state_bytes=SUMMARY_STATE_BYTES,
        tokens_per_state=SUMMARY_TOKENS_PER_STATE,
    )


def _explain_ring(led: LedgerBuilder, g: Geometry, lb: LayerBytes, par: Parallel, kb: KindBytes) -> None:
    led.add(
        f"bytes_per_token_per_layer[{kb.kind}]",
        "0: one page a request whatever the context (Step5: its full-attention layer's page; "
        "QSA: compress_ratio raw-key rows)",
        0,
        "B",
        SRC_RING,
    )


def _explain_attention(led: LedgerBuilder, g: Geometry, lb: LayerBytes, par: Parallel, kb: KindBytes) -> None:
    """Standard attention (full, sliding, chunked): KV heads per GPU × one cell, Gemma-4's full
    layers with heads of their own, MiniMax-M3's sparse layers with their indexer key."""
    own = kb.kind == KIND_NAMES[FULL] and g.full_head_dim is not None  # Gemma-4's full layers
    hkv = max(1, (g.full_kv_heads or g.num_kv_heads) // par.tensor) if own else None
    indexed = (
        kb.kind == KIND_NAMES[FULL]
        and kb.layers == len(g.indexer_layers or ())
        and (
            kb.bytes_per_token_per_layer
            > lb.kv_heads_per_gpu * attention_cell_bytes(kb.kv_dtype, g.head_dim, g.v_head_dim)
        )
    )
    led.add(
        f"bytes_per_token_per_layer[{kb.kind}]",
        "Hkv_per_gpu × cell(kv_cache_dtype, D_k, D_v); bf16 cell = (D_k + D_v) × 2"
        + (" + indexer_bytes_per_token_per_layer (sparse layers)" if indexed else ""),
        kb.bytes_per_token_per_layer,
        "B",
        SRC_PAGE,
        Hkv_per_gpu=hkv or lb.kv_heads_per_gpu,
        D_k=g.full_head_dim if own else g.head_dim,
        D_v=g.full_head_dim if own else g.v_head_dim,
        kv_cache_dtype=kb.kv_dtype,
    )


_Explain = Callable[[LedgerBuilder, Geometry, LayerBytes, Parallel, KindBytes], None]
# Each layer kind's step; the kinds not named here are standard attention.
_EXPLAIN: dict[str, _Explain] = {
    "mla": _explain_mla,
    KIND_NAMES[SLIDING_MLA]: _explain_sliding_mla,
    KIND_NAMES[COMPRESSED_MLA]: _explain_compressed_mla,
    KIND_NAMES[SCONV]: _explain_sconv,
    "mamba": _explain_mamba,
    KIND_NAMES[SUMMARY]: _explain_summary,
    KIND_NAMES[CIRCULAR_BUFFER]: _explain_ring,
}


def _explain_heads(led: LedgerBuilder, g: Geometry, lb: LayerBytes, par: Parallel) -> None:
    """The KV heads each GPU keeps (one latent under MLA, else Hkv split by TP, at least one), and
    MiniMax-M3's indexer key beside its sparse layers."""
    if g.is_mla:
        led.add(
            "kv_heads_per_gpu",
            "MLA: one latent, replicated on every TP rank",
            1,
            "heads",
            SRC_TP,
            tensor_parallel_size=par.tensor,
        )
    else:
        led.add(
            "kv_heads_per_gpu",
            "max(1, Hkv // TP)",
            lb.kv_heads_per_gpu,
            "heads",
            SRC_TP,
            Hkv=g.num_kv_heads,
            TP=par.tensor,
        )
    if g.indexer_layers and g.indexer_dim is not None:
        led.add(
            "indexer_bytes_per_token_per_layer",
            "one key-only head of indexer_dim in bf16, whole on every TP rank, on each sparse layer "
            "beside its K/V (its page shares the layer's group and block)",
            g.indexer_dim * MODEL_DTYPES[INDEXER_CACHE_DTYPE],
            "B",
            SRC_INDEXER,
            indexer_dim=g.indexer_dim,
            sparse_layers=len(g.indexer_layers),
            dense_layers=g.layer_pattern.count(FULL) - len(g.indexer_layers),
        )


def _explain_totals(led: LedgerBuilder, g: Geometry, lb: LayerBytes, par: Parallel, pt: PerToken) -> None:
    """The model's bytes per token unsharded, the fullest stage's after TP/PP, the MHA ratio and,
    with a context, one request's KV."""
    led.add(
        "bytes_per_token_model",
        "Σ layers, unsharded (TP = 1) = f × L × Hkv × D × b",
        pt.bytes_per_token_model,
        "B",
        SRC_PAGE,
        L=g.num_layers,
        Hkv=g.num_kv_heads,
    )
    if par.pipeline > 1:
        led.add(
            "pp_stage_layers",
            "num_layers // PP, remainder to the stages before the last",
            ",".join(str(b - a) for a, b in lb.stages),
            "layers",
            SRC_PP,
            L=g.decoder_layer_count,
            PP=par.pipeline,
        )
    led.add(
        "bytes_per_token",
        "Σ layers on the fullest stage, after TP",
        pt.bytes_per_token,
        "B",
        SRC_PAGE,
        TP=par.tensor,
        PP=par.pipeline,
        KiB=round(pt.bytes_per_token / KiB, 4),
    )
    led.add(
        "mha_equivalent_ratio",
        "bytes with KV heads = query heads (f = 2) / real bytes",
        round(pt.mha_equivalent_ratio, 4),
        "×",
        "docs/seed-figures.md table 1",
        mha_bytes=pt.mha_equivalent_bytes,
        real_bytes=pt.bytes_per_token_model,
        query_heads=g.num_attention_heads,
    )
    if pt.context_tokens is not None and pt.kv_bytes_per_request is not None:
        led.add(
            "kv_bytes_per_request",
            "Σ layers bytes × tokens kept (T/DCP full, window sliding)",
            pt.kv_bytes_per_request,
            "B",
            "docs/vllm-rules.md §1",
            T=pt.context_tokens,
            DCP=par.decode_context,
            GiB=round(pt.kv_bytes_per_request / GiB, 8),
        )


def per_token_ledger(
    geometry: Geometry, lb: LayerBytes, par: Parallel, pt: PerToken, into: LedgerBuilder | None = None
) -> tuple[Step, ...]:
    """The steps behind a per-token answer: KV heads per GPU, each layer kind's bytes (one
    explainer a kind, citing the rule that computed it) and the totals. The budget's ledger
    starts with these (`into`)."""
    led = into or LedgerBuilder()
    _explain_heads(led, geometry, lb, par)
    for kb in lb.by_kind:
        _EXPLAIN.get(kb.kind, _explain_attention)(led, geometry, lb, par, kb)
        led.add(
            f"bytes_per_token[{kb.kind}]",
            "layers × bytes_per_token_per_layer",
            kb.bytes_per_token,
            "B",
            SRC_PAGE,
            layers=kb.layers,
            bytes_per_token_per_layer=kb.bytes_per_token_per_layer,
        )
    _explain_totals(led, geometry, lb, par, pt)
    return led.build()
