"""Bytes one token of KV costs, per GPU and for the whole model, and what one request of a
context holds: the answer of /v1/per-token and its ledger (docs/vllm-rules.md §1, §5, §6).
The per-layer figures it reads are layers.py."""

from __future__ import annotations

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
from ..model.mamba import Mixer, state_shapes
from ..units import GiB, KiB
from . import dsv4
from .layers import (
    INDEXER_CACHE_DTYPE,
    SRC_PAGE,
    SRC_TP,
    SUMMARY_STATE_BYTES,
    SUMMARY_TOKENS_PER_STATE,
    KindBytes,
    LayerBytes,
    layer_bytes,
    request_bytes,
)
from .parallel import Parallel


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


def per_token_ledger(
    geometry: Geometry, lb: LayerBytes, par: Parallel, pt: PerToken, into: LedgerBuilder | None = None
) -> tuple[Step, ...]:
    led = into or LedgerBuilder()
    bpt, model, mha = pt.bytes_per_token, pt.bytes_per_token_model, pt.mha_equivalent_bytes
    ratio, context_tokens, kv_req = pt.mha_equivalent_ratio, pt.context_tokens, pt.kv_bytes_per_request
    if geometry.is_mla:
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
            Hkv=geometry.num_kv_heads,
            TP=par.tensor,
        )
    if geometry.indexer_layers and geometry.indexer_dim is not None:
        led.add(
            "indexer_bytes_per_token_per_layer",
            "one key-only head of indexer_dim in bf16, whole on every TP rank, on each sparse layer "
            "beside its K/V (its page shares the layer's group and block)",
            geometry.indexer_dim * MODEL_DTYPES[INDEXER_CACHE_DTYPE],
            "B",
            "vllm/models/minimax_m3/common/indexer.py (MiniMaxM3IndexerCache)",
            indexer_dim=geometry.indexer_dim,
            sparse_layers=len(geometry.indexer_layers),
            dense_layers=geometry.layer_pattern.count(FULL) - len(geometry.indexer_layers),
        )
    for kb in lb.by_kind:
        if kb.kind == "mla":
            idx = geometry.index_head_dim
            formula = (
                "f × Hkv × (kv_lora_rank + qk_rope_head_dim) × b, f = 1, Hkv = 1"
                if kb.kv_dtype != "fp8_ds_mla"
                else "fp8_ds_mla layout: 656 B"
            )
            if geometry.mla_row_dim is not None:  # Dots3NotePaddedMLAAttention
                formula = "mla_row_dim × b (the latent's rows padded to the sliding layers' width)"
            row = geometry.mla_row_dim or geometry.mla_latent_dim
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
                kv_lora_rank=geometry.kv_lora_rank,
                qk_rope_head_dim=geometry.qk_rope_head_dim,
                mla_row_dim=geometry.mla_row_dim,
                kv_cache_dtype=kb.kv_dtype,
            )
        elif kb.kind == KIND_NAMES[SLIDING_MLA] and geometry.dsv4 is None:
            led.add(
                f"bytes_per_token_per_layer[{kb.kind}]",
                "sliding_mla_dim × b, one latent per token (SlidingWindowMLASpec), replicated under TP",
                kb.bytes_per_token_per_layer,
                "B",
                SRC_PAGE,
                sliding_mla_dim=geometry.sliding_mla_dim,
                kv_cache_dtype=kb.kv_dtype,
            )
        elif kb.kind in (KIND_NAMES[SLIDING_MLA], KIND_NAMES[COMPRESSED_MLA]):
            d = geometry.dsv4
            led.add(
                f"bytes_per_token_per_layer[{kb.kind}]",
                "fp8_ds_mla: 584 B a token, kept for the sliding window"
                if kb.kind == KIND_NAMES[SLIDING_MLA]
                else "⌈(584 B + indexer K state at ratio 4) / compress ratio⌉ (pages are exact)",
                kb.bytes_per_token_per_layer,
                "B",
                dsv4.SRC_ATTN,
                **(
                    {"sliding_window": d.sliding_window if d is not None else None}
                    if kb.kind == KIND_NAMES[SLIDING_MLA]
                    else {"index_state_bytes": d.index_cell_bytes if d is not None else None}
                ),
            )
        elif kb.kind == KIND_NAMES[SCONV]:
            led.add(
                f"bytes_per_token_per_layer[{kb.kind}]",
                "Hkv_per_gpu × 2^⌈log2(2·D + 2·hidden / Hkv)⌉ × 2 B: K, V and the attention- and MLP-output "
                "streams packed in one bf16 head, kept for sconv_kernel_size tokens in blocks of that size",
                kb.bytes_per_token_per_layer,
                "B",
                "vllm/models/inkling/nvidia/sconv_swa_attn.py (InklingConvState)",
                hidden=geometry.sconv_hidden_size,
                sconv_kernel_size=geometry.sconv_kernel_size,
                TP=par.tensor,
            )
        elif kb.kind == "mamba" and geometry.mamba is not None:
            m = geometry.mamba
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
                "vllm/model_executor/layers/mamba/mamba_utils.py (MambaStateShapeCalculator)",
                mixer=m.mixer.value,
                **parts,
                TP=par.tensor,
            )
        elif kb.kind == KIND_NAMES[SUMMARY]:
            led.add(
                f"bytes_per_token_per_layer[{kb.kind}]",
                "one 256 B summary (uint8) per 8 tokens, one head on every TP rank",
                kb.bytes_per_token_per_layer,
                "B",
                "vllm/models/step5/nvidia/sparse_summary_cache.py (FullAttentionSpec, tokens_per_state=8)",
                state_bytes=SUMMARY_STATE_BYTES,
                tokens_per_state=SUMMARY_TOKENS_PER_STATE,
            )
        elif kb.kind == KIND_NAMES[COMPRESSED_MLA] and geometry.qsa is not None:
            led.add(
                f"bytes_per_token_per_layer[{kb.kind}]",
                "one key_bytes key per compress_ratio tokens, one head on every TP rank",
                kb.bytes_per_token_per_layer,
                "B",
                "vllm/models/qwen4_exp/common/qsa_cache.py (QSACompressedKeyCache, MLAAttentionSpec)",
                key_bytes=geometry.qsa.key_bytes,
                compress_ratio=geometry.qsa.compress_ratio,
            )
        elif kb.kind == KIND_NAMES[CIRCULAR_BUFFER]:
            led.add(
                f"bytes_per_token_per_layer[{kb.kind}]",
                "0: one page a request whatever the context (Step5: its full-attention layer's page; "
                "QSA: compress_ratio raw-key rows)",
                0,
                "B",
                "vllm/models/step5/nvidia/csa_tail_ring.py, vllm/models/qwen4_exp/common/qsa_cache.py "
                "(CircularBufferSpec)",
            )
        elif kb.kind == "mamba":
            led.add(
                "mamba_state_bytes_per_layer",
                "state per request, split over TP",
                lb.mamba_state_gpu,
                "B",
                "vllm/v1/kv_cache_interface.py (MambaSpec)",
                mamba_state_bytes=geometry.mamba_state_bytes,
                TP=par.tensor,
            )
        else:
            own = kb.kind == KIND_NAMES[FULL] and geometry.full_head_dim is not None  # Gemma-4's full layers
            hkv = max(1, (geometry.full_kv_heads or geometry.num_kv_heads) // par.tensor) if own else None
            indexed = (
                kb.kind == KIND_NAMES[FULL]
                and kb.layers == len(geometry.indexer_layers or ())
                and (
                    kb.bytes_per_token_per_layer
                    > lb.kv_heads_per_gpu
                    * attention_cell_bytes(kb.kv_dtype, geometry.head_dim, geometry.v_head_dim)
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
                D_k=geometry.full_head_dim if own else geometry.head_dim,
                D_v=geometry.full_head_dim if own else geometry.v_head_dim,
                kv_cache_dtype=kb.kv_dtype,
            )
        led.add(
            f"bytes_per_token[{kb.kind}]",
            "layers × bytes_per_token_per_layer",
            kb.bytes_per_token,
            "B",
            SRC_PAGE,
            layers=kb.layers,
            bytes_per_token_per_layer=kb.bytes_per_token_per_layer,
        )
    led.add(
        "bytes_per_token_model",
        "Σ layers, unsharded (TP = 1) = f × L × Hkv × D × b",
        model,
        "B",
        SRC_PAGE,
        L=geometry.num_layers,
        Hkv=geometry.num_kv_heads,
    )
    if par.pipeline > 1:
        led.add(
            "pp_stage_layers",
            "num_layers // PP, remainder to the stages before the last",
            ",".join(str(b - a) for a, b in lb.stages),
            "layers",
            "vllm/distributed/utils.py (get_pp_indices)",
            L=geometry.decoder_layer_count,
            PP=par.pipeline,
        )
    led.add(
        "bytes_per_token",
        "Σ layers on the fullest stage, after TP",
        bpt,
        "B",
        SRC_PAGE,
        TP=par.tensor,
        PP=par.pipeline,
        KiB=round(bpt / KiB, 4),
    )
    led.add(
        "mha_equivalent_ratio",
        "bytes with KV heads = query heads (f = 2) / real bytes",
        round(ratio, 4),
        "×",
        "docs/seed-figures.md table 1",
        mha_bytes=mha,
        real_bytes=model,
        query_heads=geometry.num_attention_heads,
    )
    if context_tokens is not None and kv_req is not None:
        led.add(
            "kv_bytes_per_request",
            "Σ layers bytes × tokens kept (T/DCP full, window sliding)",
            kv_req,
            "B",
            "docs/vllm-rules.md §1",
            T=context_tokens,
            DCP=par.decode_context,
            GiB=round(kv_req / GiB, 8),
        )
    return led.build()
