"""The fitted step-time tables (presets/data/perf/aic-*.json, written by tests/perf/fit_aic.py):
their types, and decoding them from bytes. The presets layer reads the file once and hands the
value in; the core does no I/O."""

from __future__ import annotations

from itertools import pairwise
from math import log2

import msgspec


class Residual(msgspec.Struct, frozen=True, gc=False):
    """How well a fit reproduces the table rows it was fitted on (absolute % error)."""

    rows: int
    median_abs_pct: float
    p90_abs_pct: float


class Roofline(msgspec.Struct, frozen=True, gc=False):
    """t(m, n·k) = t0 + max(τ(m)·n·k, bytes/(BW·η_mem)), τ linear between the measured m (s per n·k)
    and proportional to m beyond the last; `nk_min`: the weight sizes this bucket was fitted on."""

    t0_s: float
    eta_mem: float
    m: tuple[int, ...]
    s_per_nk: tuple[float, ...]
    nk_min: int = 0


class GemmFit(msgspec.Struct, frozen=True, gc=False):
    """A dtype's GEMMs: a roofline per weight-size bucket, times shape factors by log2(n), log2(k)."""

    buckets: tuple[Roofline, ...]
    fit: Residual
    log2_min: int = 0
    n_factor: tuple[float, ...] = ()
    k_factor: tuple[float, ...] = ()

    def roofline(self, nk: int) -> Roofline:
        """The bucket fitted on weights of this size (the largest whose nk_min it reaches)."""
        chosen = self.buckets[0]
        for r in self.buckets:
            if r.nk_min <= nk:
                chosen = r
        return chosen

    def shape_factor(self, n: int, k: int) -> float:
        """f(n)·g(k), log2 rounded to the nearest and clipped to the factors' range."""
        if not self.n_factor:
            return 1.0
        top = len(self.n_factor) - 1
        i = min(max(round(log2(n)) - self.log2_min, 0), top)
        j = min(max(round(log2(k)) - self.log2_min, 0), top)
        return self.n_factor[i] * self.k_factor[j]


class MoeFit(msgspec.Struct, frozen=True, gc=False):
    """A routed-experts layer: t = t0 + max(w(x)·E·expert n·k, bytes/(BW·η_mem)), with x = m·top-k/E
    the tokens an expert gets (its GEMM's rows: the index that carries across expert shapes, where m
    does not) and w the seconds a weight of every expert costs at x, non-decreasing
    (tests/perf/fit_aic.py per_expert_fit; PROVENANCE.md)."""

    t0_s: float
    eta_mem: float
    tokens_per_expert: tuple[float, ...]
    s_per_weight: tuple[float, ...]
    fit: Residual | None = None

    def __post_init__(self) -> None:
        xs, w = self.tokens_per_expert, self.s_per_weight
        ordered = all(a < b for a, b in pairwise(xs)) and all(a <= b for a, b in pairwise(w))
        if not xs or len(xs) != len(w) or not ordered:
            raise ValueError("tokens_per_expert must increase and s_per_weight not decrease, one a bin")


class DecodeFit(msgspec.Struct, frozen=True, gc=False):
    """t = t0 + s_per_request·batch + s_per_kv_byte·KV bytes read + s_per_flop·4·Σctx·H·d."""

    t0_s: float
    s_per_request: float
    s_per_kv_byte: float
    s_per_flop: float
    fit: Residual


class PrefillFit(msgspec.Struct, frozen=True, gc=False):
    """t = t0 + s_per_flop·causal FLOPs + s_per_token_dim·tokens·(H + 2·KVH)·d."""

    t0_s: float
    s_per_flop: float
    s_per_token_dim: float
    fit: Residual


class MlaFit(msgspec.Struct, frozen=True, gc=False):
    """DeepSeek-V3's MLA attention module, projections included, a layer with h query heads a GPU.
    decode (t0, r, r_h, c, c_h): t = t0 + (r + r_h·h)·batch + (c + c_h·h)·Σctx;
    prefill (t0, k, k_h, w_h): t = t0 + (k + k_h·h)·tokens + w_h·h·causal work."""

    decode: tuple[float, float, float, float, float]
    decode_fit: Residual
    prefill: tuple[float, float, float, float]
    prefill_fit: Residual


class Curve(msgspec.Struct, frozen=True, gc=False):
    """Measured all-reduce latency by message size (bf16 elements), non-decreasing."""

    elements: tuple[int, ...]
    seconds: tuple[float, ...]


class SystemCoeffs(msgspec.Struct, frozen=True):
    vllm_version: str
    gemm: dict[str, GemmFit]
    decode_attention: dict[str, DecodeFit]
    prefill_attention: dict[str, PrefillFit]  # KV dtype, and "<KV dtype>@d<head dim>" (attention.py)
    allreduce: dict[str, dict[str, Curve]]  # backend (vllm_graph / vllm_eager) → GPUs → curve
    moe: dict[str, MoeFit]
    mla: dict[str, MlaFit] = {}  # "<kv dtype>/<projection GEMM dtype>"


class Coefficients(msgspec.Struct, frozen=True):
    aic_version: str
    wheel: str
    wheel_sha256: str
    units: str
    systems: dict[str, SystemCoeffs]

    @property
    def provenance(self) -> str:
        return f"AIConfigurator {self.aic_version} ({self.wheel}, sha256 {self.wheel_sha256[:12]}…), fitted"


def decode_coefficients(raw: bytes) -> Coefficients:
    """The fitted tables from their JSON (a malformed file raises msgspec.ValidationError)."""
    return msgspec.json.decode(raw, type=Coefficients)
