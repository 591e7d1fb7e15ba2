"""The attention of a step: each layer kind's decode and prefill terms, folded over its layers, from
AIConfigurator's fits (core/perf/coeffs.py), and the prefill fit a head dim reads."""

from __future__ import annotations

import msgspec

from .coeffs import DecodeFit, MlaFit, PrefillFit


class AttnTerms(msgspec.Struct, frozen=True, gc=False, kw_only=True):
    """Attention of all layers of one window, folded: seconds = const (when any request of the kind)
    + per_request·n + per_ctx·Σctx (decode); const + per_token·tokens + per_work·work (prefill)."""

    window: int  # 0: full attention
    decode_const: float
    decode_per_request: float
    decode_per_ctx: float
    prefill_const: float
    prefill_per_token: float
    prefill_per_work: float


def mla_terms(count: int, heads: int, fit: MlaFit) -> AttnTerms:
    """The MLA module over `count` layers with `heads` query heads a GPU."""
    t0, r, rh, c, ch = fit.decode
    p0, k, kh, wh = fit.prefill
    return AttnTerms(
        window=0,
        decode_const=count * t0,
        decode_per_request=count * (r + rh * heads),
        decode_per_ctx=count * (c + ch * heads),
        prefill_const=count * p0,
        prefill_per_token=count * (k + kh * heads),
        prefill_per_work=count * wh * heads,
    )


def prefill_key(kv_dtype: str, head_dim: int) -> str:
    """The key of a prefill fit of one head dim (tests/perf/fit_aic.py fit_prefill writes them)."""
    return f"{kv_dtype}@d{head_dim}"


def kv_dtype_of(key: str) -> str:
    """The KV dtype a prefill fit's key names: itself for a fit over every head dim."""
    return key.partition("@d")[0]


def head_dim_key(fits: dict[str, PrefillFit], kv_dtype: str, head_dim: int) -> str:
    """The prefill fit of this KV dtype at this head dim where AIC measured it (a kernel runs each
    head dim at its own efficiency: tests/perf/fit_aic.py fit_prefill), else the one over all head
    dims."""
    at_dim = prefill_key(kv_dtype, head_dim)
    return at_dim if at_dim in fits else kv_dtype


def attn_terms(
    count: int,
    window: int,
    cell_bytes: int,
    heads: int,
    dim: int,
    prefill_dim: int,
    token_heads: int,
    dec: DecodeFit,
    pre: PrefillFit,
) -> AttnTerms:
    """One kind's attention over `count` layers: KV bytes read a context token are `cell_bytes`
    (a layer, this GPU's KV heads); FLOPs 4·H·d a (query, key) pair."""
    return AttnTerms(
        window=window,
        decode_const=count * dec.t0_s,
        decode_per_request=count * dec.s_per_request,
        decode_per_ctx=count * (dec.s_per_kv_byte * cell_bytes + dec.s_per_flop * 4 * heads * dim),
        prefill_const=count * pre.t0_s,
        prefill_per_token=count * pre.s_per_token_dim * token_heads * prefill_dim,
        prefill_per_work=count * pre.s_per_flop * 4 * heads * prefill_dim,
    )
