"""Offline fit of kvplan's step-time coefficients on AIConfigurator 0.12.0's vLLM kernel tables.

Run by hand (never imported by the service or the test suite; needs pandas + pyarrow):

    /tmp/aicvenv/bin/python tests/perf/fit_aic.py /work/tools/aic/core/aiconfigurator_core/systems

Writes service/kvplan/presets/data/perf/aic-0.12.0.json (the fitted tables),
service/kvplan/presets/data/perf/PROVENANCE.md (what was read, how it was changed, the residuals)
and tests/perf/data/aic_sample.json (a few hundred of the fitted rows, the test data that checks
the runtime model reproduces them). systems/silicon_sample.csv is the validation set: it is never
read here.

Shapes fitted (t in seconds, one call of one layer on one GPU, shapes after TP):
- GEMM (per dtype, per n·k bucket): t = [t0 + max(τ(m)·n·k, bytes/(BW·η_m))]·f(n)·g(k); τ(m) =
  2m/(F·η_c(m)) is a table over the measured m (made non-decreasing, so more tokens are never
  faster), bytes = n·k·w + 2(mk + mn); f, g are shape corrections by log2(n) and log2(k).
- decode attention (per KV dtype): t = b0 + b_req·batch + b_byte·KV bytes read + b_flop·FLOPs.
- prefill attention (per KV dtype): t = a0 + a_flop·causal FLOPs + a_tok·tokens·(H + 2·KVH)·d.
- all-reduce: the measured curve per GPU count and backend (graph / eager), log-log interpolated.
- MoE (per dtype, kernel and TP size of one node; AIConfigurator's default power-law routing, no EP):
  the GEMM form with n·k the experts' weights on one GPU, its compute efficiency over the tokens an
  expert gets (m·k/E, per_expert_fit), bytes = the distinct experts touched (expected for m tokens
  × top-k).
- MLA (DeepSeek-V3's attention module, projections included, per KV dtype × projection dtype):
  affine in batch, Σctx (decode) and tokens, causal work (prefill), each with a per-head term.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
import sys
from itertools import pairwise
from pathlib import Path

import numpy as np
import pandas as pd

AIC_VERSION = "0.12.0"
WHEEL = "aiconfigurator_core-0.12.0-cp311-abi3-manylinux_2_28_x86_64.whl"
WHEEL_SHA256 = "aadc4aad0a00bf8a61c477c62bef43de479849c3aa0b1c3078068e08309eccc4"
SYSTEMS = (
    "h100_sxm",
    "h200_sxm",
    "b200_sxm",
    "b300_sxm",
    "gb200",
    "gb300",
    "a100_sxm",
    "l40s",
    "rtx_pro_6000_server",
)
ROOT = Path(__file__).resolve().parents[2]
OUT_DIR = ROOT / "service/kvplan/presets/data/perf"
SAMPLE = ROOT / "tests/perf/data/aic_sample.json"
WEIGHT_BYTES = {"bfloat16": 2.0, "fp8": 1.0, "fp8_block": 1.0 + 4 / 128**2, "nvfp4": 0.5 + 1 / 16}
MOE_WEIGHT_BYTES = WEIGHT_BYTES | {
    "int4_wo": 0.5 + 2 / 128,
    "w4a16_mxfp4": 0.5 + 1 / 32,
    "w4a8_mxfp4_mxfp8": 0.5 + 1 / 32,
}
KV_BYTES = {"bfloat16": 2, "fp8": 1}
MIN_NK = 1 << 20  # GEMMs smaller than a 1024 × 1024 weight are launch floor only; not a layer's size
# Weight-size buckets (n·k) fitted apart: a kernel's efficiency at one m depends on the shape too.
NK_EDGES = (MIN_NK, 1 << 24, 1 << 26, 1 << 28, 1 << 62)
LOG2_MIN, LOG2_MAX = 5, 17  # the shape corrections' range of log2(n) and log2(k), clipped
ETAS = np.geomspace(0.01, 1.5, 160)
LOG2_MIN, LOG2_MAX = 5, 17  # the shape corrections' range of log2(n) and log2(k), clipped


def flat_yaml(text: str) -> dict[str, str]:
    """The `section.key: value` pairs of AIC's simple YAML files (no PyYAML in the fit's venv)."""
    out: dict[str, str] = {}
    stack: list[tuple[int, str]] = []
    for raw in text.splitlines():
        line = raw.split("#", 1)[0].rstrip()
        if not line.strip() or ":" not in line:
            continue
        indent = len(line) - len(line.lstrip())
        key, _, value = line.strip().partition(":")
        while stack and stack[-1][0] >= indent:
            stack.pop()
        path = ".".join([*(k for _, k in stack), key])
        if value.strip():
            out[path] = value.strip()
        else:
            stack.append((indent, key))
    return out


def current_vllm(text: str, system: str) -> str:
    """query_versions.yaml's current vLLM slot for a system (its override, else the default)."""
    for pattern in (
        rf"^  {system}:\n(?:    .*\n)*?    vllm: {{current: \"([^\"]+)\"",
        r'^  vllm: {current: "([^"]+)"',
    ):
        hit = re.search(pattern, text, re.M)
        if hit:
            return hit.group(1)
    raise ValueError("no vLLM version in query_versions.yaml")


def version_dir(base: Path, current: str) -> Path:
    """AIC's backward fill: the current version's folder, else the newest older one."""
    have = sorted((p for p in base.iterdir() if p.is_dir()), key=lambda p: tuple(map(int, p.name.split("."))))
    cur = tuple(map(int, current.split(".")))
    older = [p for p in have if tuple(map(int, p.name.split("."))) <= cur]
    return older[-1] if older else have[0]


def residuals(pred: np.ndarray, meas: np.ndarray) -> dict[str, float]:
    err = np.abs(pred / meas - 1.0) * 100
    return {
        "rows": len(meas),
        "median_abs_pct": round(float(np.median(err)), 2),
        "p90_abs_pct": round(float(np.percentile(err, 90)), 2),
    }


def sample(df: pd.DataFrame, n: int, cols: list[str]) -> list[dict[str, object]]:
    """n rows spread over the table, for the runtime test (a stable seed)."""
    take = df.sample(n=min(n, len(df)), random_state=28)
    return [
        {c: (v.item() if hasattr(v, "item") else v) for c, v in zip(cols, row, strict=True)}
        for row in take[cols].itertuples(index=False)
    ]


def memory_fit(m: np.ndarray, nbytes: np.ndarray, t: np.ndarray, bw: float) -> tuple[float, float]:
    """t0 and η_m from the memory-bound rows (the four smallest m), weighted least squares."""
    small = m <= np.unique(m)[min(3, len(np.unique(m)) - 1)]
    x, y, w = nbytes[small], t[small], 1.0 / t[small]
    a = np.vstack([np.ones_like(x), x]).T * w[:, None]
    (t0, slope), *_ = np.linalg.lstsq(a, y * w, rcond=None)
    t0 = float(min(max(t0, 0.0), np.min(t) * 0.95))
    return t0, 1.0 / (float(max(slope, 1e-18)) * bw)


def compute_eta(
    m: np.ndarray,
    nk: np.ndarray,
    nbytes: np.ndarray,
    t: np.ndarray,
    t0: float,
    eta_m: float,
    peak: float,
    bw: float,
) -> float:
    """The compute efficiency η_c (of ETAS) that minimises these rows' median |log(pred/t)| under
    t = t0 + max(2·m·nk/(peak·η_c), bytes/(BW·η_m)); ties go to the highest η."""
    mem = t0 + nbytes / (bw * eta_m)
    comp = 2.0 * m[None, :] * nk[None, :] / (peak * ETAS[:, None])
    pred = t0 + np.maximum(comp, mem[None, :] - t0)
    err = np.median(np.abs(np.log(pred / t[None, :])), axis=1)
    return float(ETAS[len(ETAS) - 1 - int(np.argmin(err[::-1]))])


def roofline_fit(
    m: np.ndarray, nk: np.ndarray, nbytes: np.ndarray, t: np.ndarray, flops_peak: float, bw: float
) -> tuple[float, float, np.ndarray, np.ndarray]:
    """t0 and η_m from the memory-bound rows, then η_c for each m (compute_eta); τ(m) = 2m/(F·η_c)
    made non-decreasing."""
    t0, eta_m = memory_fit(m, nbytes, t, bw)
    ms = np.unique(m)
    taus = []
    for mv in ms:
        sel = m == mv
        best = compute_eta(m[sel], nk[sel], nbytes[sel], t[sel], t0, eta_m, flops_peak, bw)
        taus.append(2.0 * mv / (flops_peak * best))
    tau = np.maximum.accumulate(np.array(taus))
    return t0, eta_m, ms.astype(float), tau


def roofline_predict(
    m: np.ndarray,
    nk: np.ndarray,
    nbytes: np.ndarray,
    t0: float,
    eta_m: float,
    bw: float,
    ms: np.ndarray,
    tau: np.ndarray,
) -> np.ndarray:
    tm = np.interp(m, ms, tau, right=np.nan)
    over = m > ms[-1]
    tm[over] = tau[-1] * m[over] / ms[-1]
    return t0 + np.maximum(tm * nk, nbytes / (bw * eta_m))


def per_expert_fit(
    m: np.ndarray,
    tokens_per_expert: np.ndarray,
    nk: np.ndarray,
    nbytes: np.ndarray,
    t: np.ndarray,
    flops_peak: float,
    bw: float,
) -> tuple[float, float, np.ndarray, np.ndarray]:
    """The MoE's roofline with its compute efficiency indexed by the tokens an expert gets,
    x = m·k/E (each expert's GEMM has about x rows), not by m. The compute time is
    w(x)·E·expert_nk = w(x)·(E/k)·nk: w, the seconds a weight of every expert costs at x, per
    half-octave of x by compute_eta, made non-decreasing (an expert's time does not fall as its rows
    grow). Returns t0, η_m, the half-octaves' centres and w there."""
    t0, eta_m = memory_fit(m, nbytes, t, bw)
    log2_bins = np.round(2 * np.log2(tokens_per_expert)) / 2
    centres = np.unique(log2_bins)
    w = []
    for b in centres:
        sel = log2_bins == b
        best = compute_eta(m[sel], nk[sel], nbytes[sel], t[sel], t0, eta_m, flops_peak, bw)
        w.append(2.0**b * 2.0 / (flops_peak * best))  # x · (seconds per m·nk)
    return t0, eta_m, 2.0**centres, np.maximum.accumulate(np.array(w))


def per_expert_predict(
    m: np.ndarray,
    tokens_per_expert: np.ndarray,
    nk: np.ndarray,
    nbytes: np.ndarray,
    t0: float,
    eta_m: float,
    bw: float,
    xs: np.ndarray,
    w: np.ndarray,
) -> np.ndarray:
    """As the service prices it (core/perf/steptime.py moe_seconds): w linear in log2 x between
    the fitted half-octaves (so the time never falls as m grows), w ∝ x beyond them."""
    x = tokens_per_expert
    inside = np.interp(np.log2(x), np.log2(xs), w)
    per_weight = np.where(x < xs[0], x * w[0] / xs[0], np.where(x > xs[-1], x * w[-1] / xs[-1], inside))
    return t0 + np.maximum(per_weight * m * nk / x, nbytes / (bw * eta_m))


def moe_rows(g: pd.DataFrame, tp: int) -> tuple[np.ndarray, ...]:
    """A MoE table's rows as the fit reads them: m, tokens an expert, nk, bytes read, seconds."""
    m, h, i, k, e = (
        g[c].to_numpy(float) for c in ("num_tokens", "hidden_size", "inter_size", "topk", "num_experts")
    )
    expert = 3 * h * i / tp  # gate, up and down projections of one expert, the GPU's shard
    nk = k * expert  # FLOPs = 2 · m · (top-k · expert): the GEMM form with n·k = k·expert
    wbytes = MOE_WEIGHT_BYTES[str(g.moe_dtype.iloc[0])]
    nbytes = expected_experts(m, k, e) * expert * wbytes + 2 * m * h * (1 + k)
    return m, m * k / e, nk, nbytes, g.latency.to_numpy() / 1e3


def fit_gemm(path: Path, gpu: dict[str, float], samples: list[dict[str, object]]) -> dict[str, object]:
    df = pd.read_parquet(path)
    df = df.groupby(["gemm_dtype", "m", "n", "k"], as_index=False)["latency"].min()  # the fastest kernel
    out: dict[str, object] = {}
    for dtype, g in df.groupby("gemm_dtype"):
        peak = gpu["fp4" if dtype == "nvfp4" else "fp8" if dtype.startswith("fp8") else "bf16"]
        if dtype not in WEIGHT_BYTES or not peak:
            continue
        g = g[g.n * g.k >= MIN_NK]
        if len(g) < 20:
            continue
        m, n, k = (g[c].to_numpy(float) for c in ("m", "n", "k"))
        t = g.latency.to_numpy() / 1e3
        nbytes = n * k * WEIGHT_BYTES[dtype] + 2 * (m * k + m * n)
        pred = np.zeros_like(t)
        buckets = []
        for lo, hi in pairwise(NK_EDGES):
            sel = (n * k >= lo) & (n * k < hi)
            if sel.sum() < 20:
                continue
            t0, eta_m, ms, tau = roofline_fit(m[sel], (n * k)[sel], nbytes[sel], t[sel], peak, gpu["bw"])
            pred[sel] = roofline_predict(m[sel], (n * k)[sel], nbytes[sel], t0, eta_m, gpu["bw"], ms, tau)
            buckets.append(
                {
                    "nk_min": int(lo),
                    "t0_s": t0,
                    "eta_mem": round(eta_m, 5),
                    "m": [int(x) for x in ms],
                    "s_per_nk": [float(f"{x:.6g}") for x in tau],
                }
            )
        n_factor, k_factor = shape_factors(np.log(t / pred), n, k)
        pred *= np.exp(n_factor[log2_bucket(n)] + k_factor[log2_bucket(k)])
        out[dtype] = {
            "buckets": buckets,
            "log2_min": LOG2_MIN,
            "n_factor": [float(f"{math.exp(x):.5g}") for x in n_factor],
            "k_factor": [float(f"{math.exp(x):.5g}") for x in k_factor],
            "fit": residuals(pred, t),
        }
        for row in sample(g.assign(t=t), 6, ["m", "n", "k", "t"]):
            samples.append({"family": "gemm", "dtype": dtype, **row})
    return out


def log2_bucket(x: np.ndarray) -> np.ndarray:
    return np.clip(np.round(np.log2(x)).astype(int), LOG2_MIN, LOG2_MAX) - LOG2_MIN


def shape_factors(r: np.ndarray, n: np.ndarray, k: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Multiplicative corrections by log2(n) and log2(k) (the kernels' tiling favours some shapes):
    alternating medians of the log residual, n then k, a few rounds."""
    bn, bk = log2_bucket(n), log2_bucket(k)
    size = LOG2_MAX - LOG2_MIN + 1
    cn, ck = np.zeros(size), np.zeros(size)
    for _ in range(5):
        for v in range(size):
            if (sel := bn == v).any():
                cn[v] = np.median(r[sel] - ck[bk[sel]])
        for v in range(size):
            if (sel := bk == v).any():
                ck[v] = np.median(r[sel] - cn[bn[sel]])
    return cn, ck


def _kv_frame(path: Path, window: int = 0) -> pd.DataFrame:
    """An attention table's rows of one sliding window (0: none), the fastest kernel per shape."""
    df = pd.read_parquet(path)
    if "window_size" not in df:
        df["window_size"] = 0
    df = df[(df.window_size == window) & (df.kv_cache_dtype.isin(list(KV_BYTES)))]
    keys = ["kv_cache_dtype", "batch_size", "isl", "step", "num_heads", "num_key_value_heads", "head_dim"]
    return df.groupby(keys, as_index=False)["latency"].min()


def weighted_fit(x: np.ndarray, t: np.ndarray) -> np.ndarray:
    """Least squares on relative error, coefficients kept non-negative (dropped and refitted)."""
    keep = np.ones(x.shape[1], bool)
    while True:
        a = x[:, keep] / t[:, None]
        coef, *_ = np.linalg.lstsq(a, np.ones_like(t), rcond=None)
        if (coef >= 0).all():
            full = np.zeros(x.shape[1])
            full[keep] = coef
            return full
        keep[np.flatnonzero(keep)[np.argmin(coef)]] = False


def fit_decode(path: Path, samples: list[dict[str, object]]) -> dict[str, object]:
    df = _kv_frame(path)
    out: dict[str, object] = {}
    for dtype, g in df.groupby("kv_cache_dtype"):
        b, ctx = g.batch_size.to_numpy(float), (g.isl + g.step).to_numpy(float)
        kvh, h, d = (g[c].to_numpy(float) for c in ("num_key_value_heads", "num_heads", "head_dim"))
        kv_bytes = b * ctx * kvh * d * 2 * KV_BYTES[dtype]
        flops = 4 * b * ctx * h * d
        x = np.vstack([np.ones_like(b), b, kv_bytes, flops]).T
        t = g.latency.to_numpy() / 1e3
        c = weighted_fit(x, t)
        out[dtype] = {
            "t0_s": c[0],
            "s_per_request": c[1],
            "s_per_kv_byte": c[2],
            "s_per_flop": c[3],
            "fit": residuals(x @ c, t),
        }
        cols = ["batch_size", "isl", "step", "num_heads", "num_key_value_heads", "head_dim", "t"]
        for row in sample(g.assign(t=t), 6, cols):
            samples.append({"family": "decode_attention", "dtype": dtype, **row})
    return out


def fit_mla(gen_path: Path, ctx_path: Path, samples: list[dict[str, object]]) -> dict[str, object]:
    """DeepSeek-V3's whole MLA attention module (projections + attention, one layer, h query heads
    a GPU), per KV dtype and projection GEMM dtype. Decode: t = t0 + (r + r_h·h)·batch +
    (c + c_h·h)·Σctx; prefill: t = t0 + (k + k_h·h)·tokens + w_h·h·causal work (Σ isl²/2)."""
    out: dict[str, dict[str, object]] = {}
    keys = ["kv_cache_dtype", "gemm_type", "num_heads", "batch_size", "isl", "step"]
    gen = pd.read_parquet(gen_path).groupby(keys, as_index=False)["latency"].min()
    ctx = pd.read_parquet(ctx_path).groupby(keys, as_index=False)["latency"].min()
    for (kv, gemm), g in gen.groupby(["kv_cache_dtype", "gemm_type"]):
        c = ctx[(ctx.kv_cache_dtype == kv) & (ctx.gemm_type == gemm)]
        if len(g) < 20 or len(c) < 20:
            continue
        b, h = g.batch_size.to_numpy(float), g.num_heads.to_numpy(float)
        sctx = b * (g.isl + g.step).to_numpy(float)
        x = np.vstack([np.ones_like(b), b, b * h, sctx, sctx * h]).T
        t = g.latency.to_numpy() / 1e3
        dc = weighted_fit(x, t)
        cb, ch, cs = c.batch_size.to_numpy(float), c.num_heads.to_numpy(float), c.isl.to_numpy(float)
        tok, work = cb * cs, cb * cs * cs / 2
        cx = np.vstack([np.ones_like(cb), tok, tok * ch, work * ch]).T
        ct = c.latency.to_numpy() / 1e3
        pc = weighted_fit(cx, ct)
        out[f"{kv}/{gemm}"] = {
            "decode": [float(v) for v in dc],
            "decode_fit": residuals(x @ dc, t),
            "prefill": [float(v) for v in pc],
            "prefill_fit": residuals(cx @ pc, ct),
        }
        for row in sample(g.assign(t=t), 3, ["num_heads", "batch_size", "isl", "step", "t"]):
            samples.append({"family": "mla_decode", "dtype": f"{kv}/{gemm}", **row})
        for row in sample(c.assign(t=ct), 3, ["num_heads", "batch_size", "isl", "t"]):
            samples.append({"family": "mla_prefill", "dtype": f"{kv}/{gemm}", **row})
    return out


PREFILL_DIM_ROWS = 400  # a head dim with at least this many rows of a KV dtype gets a fit of its own
PREFILL_SAMPLES = 6  # rows a fit over every head dim gives the runtime test
PREFILL_DIM_SAMPLES = 3  # rows a head dim's own fit gives it
WINDOW = 128  # the sliding window AIC measured (gpt-oss's): its rows check the fits, never fit them


def _prefill_x(g: pd.DataFrame, window: int = 0) -> np.ndarray:
    """The prefill form's inputs: 1, causal FLOPs (a window caps each token's keys), tokens·dims."""
    b, s = g.batch_size.to_numpy(float), g.isl.to_numpy(float)
    kvh, h, d = (g[c].to_numpy(float) for c in ("num_key_value_heads", "num_heads", "head_dim"))
    work = b * (np.minimum(s * s / 2, s * window) if window else s * s / 2)
    return np.vstack([np.ones_like(b), 4 * h * d * work, b * s * (h + 2 * kvh) * d]).T


def fit_prefill(
    path: Path, samples: list[dict[str, object]], by_dim: list[tuple[str, int, float, float | None]]
) -> dict[str, object]:
    """Per KV dtype over every head dim, and per head dim (`<dtype>@d<head_dim>`) where the table
    has rows enough and more than one head dim: a kernel runs each head dim at its own efficiency
    (FlashAttention-style kernels at d 64 get less of the peak a FLOP than at d 128), which one
    fit over all head dims averages away. `by_dim` gets, for each head dim's fit, the median of
    measured ÷ the pooled fit on its rows and of measured ÷ its own fit on the table's window-128
    rows (left out of every fit): PROVENANCE.md's "Prefill attention by head dim"."""
    df, windowed = _kv_frame(path), _kv_frame(path, WINDOW)
    out: dict[str, object] = {}
    for dtype, g in df.groupby("kv_cache_dtype"):
        t = g.latency.to_numpy() / 1e3
        pooled = weighted_fit(_prefill_x(g), t)
        groups = [(str(dtype), g, pooled, PREFILL_SAMPLES)]
        for d, gd in g.groupby("head_dim"):
            if len(gd) >= PREFILL_DIM_ROWS and len(gd) < len(g):
                key = f"{dtype}@d{int(d)}"  # kvplan.core.perf.attention.prefill_key (not importable here)
                td = gd.latency.to_numpy() / 1e3
                own = weighted_fit(_prefill_x(gd), td)
                gw = windowed[(windowed.kv_cache_dtype == dtype) & (windowed.head_dim == d)]
                tw = gw.latency.to_numpy() / 1e3
                window = float(np.median(tw / (_prefill_x(gw, WINDOW) @ own))) if len(gw) else None
                by_dim.append((key, len(gd), float(np.median(td / (_prefill_x(gd) @ pooled))), window))
                groups.append((key, gd, own, PREFILL_DIM_SAMPLES))
        for key, gk, c, n in groups:
            tk = gk.latency.to_numpy() / 1e3
            fit = residuals(_prefill_x(gk) @ c, tk)
            out[key] = {"t0_s": c[0], "s_per_flop": c[1], "s_per_token_dim": c[2], "fit": fit}
            cols = ["batch_size", "isl", "num_heads", "num_key_value_heads", "head_dim", "t"]
            for row in sample(gk.assign(t=tk), n, cols):
                samples.append({"family": "prefill_attention", "dtype": key, **row})
    return out


def fit_allreduce(path: Path) -> dict[str, object]:
    df = pd.read_parquet(path)
    out: dict[str, dict[str, object]] = {}
    for (backend, gpus), g in df.groupby(["backend", "num_gpus"]):
        g = g.groupby("message_size", as_index=False)["latency"].min().sort_values("message_size")
        lat = np.maximum.accumulate(g.latency.to_numpy() / 1e3)  # a longer message is never faster
        out.setdefault(str(backend), {})[str(int(gpus))] = {
            "elements": [int(x) for x in g.message_size],
            "seconds": [float(f"{x:.6g}") for x in lat],
        }
    return out


# AIConfigurator prices MoE with power-law routing by default (sdk/config.py workload_distribution
# "power_law", models/*.py _power_law_alpha 1.01): routers are imbalanced, and the busiest expert
# sets a grouped GEMM's time. Its balanced rows are the best case.
MOE_DISTRIBUTION = "power_law_1.01"


def expected_experts(tokens: np.ndarray, topk: np.ndarray, experts: np.ndarray) -> np.ndarray:
    """Distinct experts that m tokens × top-k touch under uniform routing: E·(1 − (1 − k/E)^m)."""
    return experts * (1 - (1 - topk / experts) ** tokens)


# The TP sizes of one node the MoE is fitted at, apart: TP shards each expert's intermediate size,
# and the smaller per-GPU experts run at a lower efficiency than TP 1's (AIC measures each size).
MOE_TPS = (1, 2, 4, 8)
MOE_SHAPE = ["num_tokens", "hidden_size", "inter_size", "topk", "num_experts"]


def moe_key(dtype: str, marlin: bool, tp: int) -> str:
    """The fitted table's name: the dtype, `_marlin` for the Marlin kernel's rows of a dtype that
    also has another kernel's, `@tp<n>` for TP > 1 (the rows measured at that moe_tp_size)."""
    return dtype + ("_marlin" if marlin else "") + (f"@tp{tp}" if tp > 1 else "")


def moe_peak(dtype: str) -> str:
    """The tensor-core rate a MoE table's GEMMs run at: MXFP8 activations (w4a8_mxfp4_mxfp8,
    FlashInfer's TRT-LLM kernel) run at FP8's, weight-only 4-bit experts at bf16's."""
    if dtype == "nvfp4":
        return "fp4"
    return "fp8" if dtype.startswith("fp8") or dtype.endswith("mxfp8") else "bf16"


def fit_moe(path: Path, gpu: dict[str, float], samples: list[dict[str, object]]) -> dict[str, object]:
    """Per dtype, kernel and TP size. A dtype measured on two kernels is fitted per kernel: the
    w4a16_mxfp4 tables hold gpt-oss on the kernel vLLM picks for it (OAI Triton on Hopper,
    FlashInfer TRT-LLM on Blackwell) and Kimi-K3's compressed-tensors experts on Marlin (another
    shape); the Marlin rows are fitted apart as `<dtype>_marlin` (vLLM's --moe-backend marlin,
    VLLM_MXFP4_USE_MARLIN=1 in older vLLMs), the others under the dtype."""
    df = pd.read_parquet(path)
    df = df[
        (df.distribution == MOE_DISTRIBUTION) & (df.moe_ep_size == 1) & (df.moe_tp_size.isin(MOE_TPS))
    ].assign(marlin=lambda d: d.kernel_source.str.contains("marlin", case=False))
    kernels = df.groupby("moe_dtype").marlin.nunique()
    df = df.groupby(["moe_dtype", "marlin", "moe_tp_size", *MOE_SHAPE], as_index=False)["latency"].min()
    out: dict[str, object] = {}
    for (dtype, marlin, tp), g in df.groupby(["moe_dtype", "marlin", "moe_tp_size"]):
        if dtype not in MOE_WEIGHT_BYTES or len(g) < 20:
            continue
        key = moe_key(str(dtype), bool(marlin) and kernels[dtype] > 1, int(tp))
        peak = gpu[moe_peak(str(dtype))] or gpu["bf16"]
        m, per_expert, nk, nbytes, t = moe_rows(g, int(tp))
        t0, eta_m, xs, w = per_expert_fit(m, per_expert, nk, nbytes, t, peak, gpu["bw"])
        pred = per_expert_predict(m, per_expert, nk, nbytes, t0, eta_m, gpu["bw"], xs, w)
        out[key] = {
            "t0_s": t0,
            "eta_mem": round(eta_m, 5),
            "tokens_per_expert": [float(f"{x:.6g}") for x in xs],
            "s_per_weight": [float(f"{x:.6g}") for x in w],  # rounding keeps w non-decreasing
            "fit": residuals(pred, t),
        }
        cols = ["num_tokens", "hidden_size", "inter_size", "topk", "num_experts", "moe_tp_size", "t"]
        for row in sample(g.assign(t=t), 1, cols):  # one a table: there is one a dtype, kernel and TP
            samples.append({"family": "moe", "dtype": key, **row})
    return out


def rounded(v: object) -> object:
    """Floats to 6 significant digits (the fits are nowhere near that good), recursively."""
    if isinstance(v, dict):
        return {k: rounded(x) for k, x in v.items()}
    if isinstance(v, list | tuple):
        return [rounded(x) for x in v]
    if isinstance(v, float | np.floating):
        return float(f"{float(v):.6g}")
    if isinstance(v, np.integer):
        return int(v)
    return v


def main(systems: Path) -> None:
    versions = (systems / "query_versions.yaml").read_text()
    result: dict[str, object] = {
        "aic_version": AIC_VERSION,
        "wheel": WHEEL,
        "wheel_sha256": WHEEL_SHA256,
        "units": "seconds per call of one layer on one GPU; shapes after tensor parallelism",
        "systems": {},
    }
    tables: list[tuple[str, str, int]] = []
    samples: list[dict[str, object]] = []
    by_dim: dict[str, list[tuple[str, int, float, float | None]]] = {}
    for system in SYSTEMS:
        spec = flat_yaml((systems / f"{system}.yaml").read_text())
        gpu = {
            "bw": float(spec["gpu.mem_bw"]),
            "bf16": float(spec["gpu.bfloat16_tc_flops"]),
            "fp8": float(spec.get("gpu.fp8_tc_flops", 0)),
            "fp4": float(spec.get("gpu.fp4_tc_flops", 0)),
        }
        current = current_vllm(versions, system)
        data = systems / "data" / system
        paths = {
            "gemm": version_dir(data / "gemm/vllm", current) / "gemm_perf.parquet",
            "decode": version_dir(data / "attention/vllm", current) / "generation_attention_perf.parquet",
            "prefill": version_dir(data / "attention/vllm", current) / "context_attention_perf.parquet",
            "allreduce": version_dir(data / "comm/vllm", current) / "custom_allreduce_perf.parquet",
            "moe": version_dir(data / "moe/vllm", current) / "moe_perf.parquet",
        }
        if (data / "mla/vllm").is_dir():
            mla = version_dir(data / "mla/vllm", current)
            paths |= {
                "mla_decode": mla / "mla_generation_module_perf.parquet",
                "mla_prefill": mla / "mla_context_module_perf.parquet",
            }
        for p in paths.values():
            tables.append((system, str(p.relative_to(systems)), len(pd.read_parquet(p, columns=["latency"]))))
        before = len(samples)
        entry = {
            "vllm_version": current,
            "gemm": fit_gemm(paths["gemm"], gpu, samples),
            "decode_attention": fit_decode(paths["decode"], samples),
            "prefill_attention": fit_prefill(paths["prefill"], samples, by_dim.setdefault(system, [])),
            "allreduce": fit_allreduce(paths["allreduce"]),
            "moe": fit_moe(paths["moe"], gpu, samples),
            "mla": fit_mla(paths["mla_decode"], paths["mla_prefill"], samples)
            if "mla_decode" in paths
            else {},
        }
        for s in samples[before:]:
            s["system"] = system
        result["systems"][system] = entry  # type: ignore[index]
        print(system, "done", file=sys.stderr)
    OUT_DIR.mkdir(parents=True, exist_ok=True)
    text = json.dumps(rounded(result), sort_keys=True, separators=(",", ":")) + "\n"
    (OUT_DIR / f"aic-{AIC_VERSION}.json").write_text(text)
    SAMPLE.parent.mkdir(parents=True, exist_ok=True)
    SAMPLE.write_text("[\n" + ",\n".join(json.dumps(rounded(x)) for x in samples) + "\n]\n")
    write_provenance(result, tables, by_dim, hashlib.sha256(text.encode()).hexdigest())


def write_provenance(
    result: dict[str, object],
    tables: list[tuple[str, str, int]],
    by_dim: dict[str, list[tuple[str, int, float, float | None]]],
    digest: str,
) -> None:
    lines = [
        "# Provenance of the step-time coefficients (aic-0.12.0.json)",
        "",
        f"Derived from NVIDIA AIConfigurator {AIC_VERSION}: wheel `{WHEEL}`, sha256 `{WHEEL_SHA256}`,",
        "its `aiconfigurator_core/systems/` data (GPU specs in `systems/<gpu>.yaml`, kernel tables in",
        "`systems/data/<gpu>/<family>/vllm/<version>/*.parquet`, version per `systems/query_versions.yaml`",
        "with AIC's backward fill to the newest older folder).",
        "",
        "**Licence and attribution.** AIConfigurator is Copyright (c) 2025-2026 NVIDIA CORPORATION &",
        "AFFILIATES, licensed under the Apache License 2.0 (wheel METADATA `License-Expression:",
        "Apache-2.0`; SPDX headers in the YAMLs). **Changes:** no table is copied. The measured latencies",
        "were reduced by `tests/perf/fit_aic.py` to fitted coefficients (roofline efficiencies by token",
        "count and weight size with shape factors for GEMMs, by tokens an expert gets for MoE, affine",
        "coefficients for attention",
        "and DeepSeek-V3's MLA module); the all-reduce curves keep the measured points (the fastest",
        "kernel per message size, made non-decreasing). GPU peak figures in gpus.toml are AIC's.",
        "`systems/silicon_sample.csv` (end-to-end measurements) was not read: it is the validation set.",
        "",
        f"sha256 of aic-0.12.0.json as written: `{digest}`.",
        "",
        "## Tables read",
        "",
        "| system | table | rows |",
        "|---|---|---|",
        *(f"| {s} | `{p}` | {n:,} |" for s, p, n in tables),
        "",
        "## Residuals on the rows fitted",
        "",
        "Absolute % error of the fitted form against the table rows it was fitted on (GEMM: weights of at",
        "least 1024 × 1024; attention: no sliding window, prefill also per head dim of 400 rows or more "
        "(`@d<n>`); MoE: power-law routing (α 1.01, AIConfigurator's "
        "default), no EP, per TP size of one node (`@tp<n>`) and per kernel where a dtype has two",
        "(`_marlin`);",
        "MLA: DeepSeek-V3's attention module, dtype given as KV dtype / projection GEMM dtype;",
        "the fastest kernel where a table measures several for one shape).",
        "",
        "| system | family | dtype | rows | median abs % | p90 abs % |",
        "|---|---|---|---|---|---|",
    ]
    for system, entry in result["systems"].items():  # type: ignore[attr-defined]
        for family in ("gemm", "decode_attention", "prefill_attention", "moe"):
            for dtype, c in entry[family].items():
                f = c["fit"]
                row = (system, family, dtype, f"{f['rows']:,}", f["median_abs_pct"], f["p90_abs_pct"])
                lines.append("| " + " | ".join(map(str, row)) + " |")
        for dtype, c in entry["mla"].items():
            for family in ("decode", "prefill"):
                f = c[f"{family}_fit"]
                row = (
                    system,
                    f"mla_{family}",
                    dtype,
                    f"{f['rows']:,}",
                    f["median_abs_pct"],
                    f["p90_abs_pct"],
                )
                lines.append("| " + " | ".join(map(str, row)) + " |")
    lines += [
        "",
        "## Prefill attention by head dim",
        "",
        "Why a head dim has a prefill fit of its own: the median of measured ÷ the fit over every head",
        f"dim on its rows, and of measured ÷ its own fit on the table's window-{WINDOW} rows (which no fit",
        "reads; the runtime caps each token's keys at the window the same way).",
        "",
        f"| system | fit | rows | measured ÷ pooled fit | window-{WINDOW} rows: measured ÷ own fit |",
        "|---|---|---|---|---|",
    ]
    for system, rows in by_dim.items():
        for key, n, pooled, window in rows:
            shown = "—" if window is None else f"{window:.2f}"
            lines.append(f"| {system} | {key} | {n:,} | {pooled:.2f} | {shown} |")
    lines.append("")
    (OUT_DIR / "PROVENANCE.md").write_text("\n".join(lines))


if __name__ == "__main__":
    main(Path(sys.argv[1]) if len(sys.argv) > 1 else Path("/work/tools/aic/core/aiconfigurator_core/systems"))
