"""The runtime model reproduces AIConfigurator's table rows it was fitted on (a committed sample,
tests/perf/data/aic_sample.json, written by fit_aic.py) within the residuals PROVENANCE.md states."""

from __future__ import annotations

import hashlib
import json
import re
import statistics
from pathlib import Path

import pytest

from kvplan.core.perf.attention import attn_terms, kv_dtype_of, mla_terms
from kvplan.core.perf.steptime import gemm_seconds, moe_seconds
from kvplan.presets.perf import PERF_DIR, load_coefficients
from tests.perf.steptime_cases import REGISTRY

ROWS = json.loads((Path(__file__).parent / "data" / "aic_sample.json").read_text())
COEFFS = load_coefficients()
WEIGHT_BYTES = {"bfloat16": 2.0, "fp8": 1.0, "fp8_block": 1.0 + 4 / 128**2, "nvfp4": 0.5 + 1 / 16}
MOE_BYTES = WEIGHT_BYTES | {
    "int4_wo": 0.5 + 2 / 128,
    "w4a16_mxfp4": 0.5 + 1 / 32,
    "w4a8_mxfp4_mxfp8": 0.5 + 1 / 32,
}
KV_BYTES = {"bfloat16": 2, "fp8": 1}
FAMILIES = ("gemm", "decode_attention", "prefill_attention", "moe", "mla_decode", "mla_prefill")
BW = {g.specs.aic_system: float(g.specs.hbm_bytes_per_s) for g in REGISTRY.gpus.values() if g.specs}


def stated() -> dict[tuple[str, str, str], tuple[float, float]]:
    """(system, family, dtype) → (median, p90) abs % as PROVENANCE.md's residual table states them."""
    out = {}
    for line in (PERF_DIR / "PROVENANCE.md").read_text().splitlines():
        cells = [c.strip() for c in line.strip("|").split("|")]
        if len(cells) == 6 and re.fullmatch(r"[\d.]+", cells[4]):
            out[cells[0], cells[1], cells[2]] = float(cells[4]), float(cells[5])
    return out


def modelled(row: dict[str, float | str]) -> float:
    """A table row as the runtime model prices it, through the model's own functions."""
    table = COEFFS.systems[str(row["system"])]
    dtype, bw = str(row["dtype"]), BW[str(row["system"])]
    if row["family"] == "gemm":
        n, k = int(row["n"]), int(row["k"])
        return gemm_seconds(table.gemm[dtype], int(row["m"]), n, k, WEIGHT_BYTES[dtype], bw)
    if row["family"] == "moe":
        h, k, tp = int(row["hidden_size"]), int(row["topk"]), int(row.get("moe_tp_size", 1))
        i = int(row["inter_size"]) / tp  # the GPU's shard of each expert
        fit = table.moe[dtype]
        wbytes = MOE_BYTES[dtype.split("@")[0].removesuffix("_marlin")]
        return moe_seconds(
            fit,
            int(row["num_tokens"]),
            round(k * 3 * h * i),
            3 * h * i * wbytes,
            int(row["num_experts"]),
            k,
            h,
            bw,
        )
    if str(row["family"]).startswith("mla"):
        mla = mla_terms(1, int(row["num_heads"]), table.mla[dtype])
        b, isl = int(row["batch_size"]), int(row["isl"])
        if row["family"] == "mla_decode":
            ctx = b * (isl + int(row["step"]))
            return mla.decode_const + mla.decode_per_request * b + mla.decode_per_ctx * ctx
        return mla.prefill_const + mla.prefill_per_token * b * isl + mla.prefill_per_work * b * isl * isl / 2
    heads, kvh, d, b = (int(row[c]) for c in ("num_heads", "num_key_value_heads", "head_dim", "batch_size"))
    kv = kv_dtype_of(dtype)  # a prefill fit of one head dim is keyed <kv dtype>@d<head dim>
    terms = attn_terms(
        1,
        0,
        kvh * d * 2 * KV_BYTES[kv],
        heads,
        d,
        d,
        heads + 2 * kvh,
        table.decode_attention[kv],
        table.prefill_attention[dtype],
    )
    if row["family"] == "decode_attention":
        ctx = b * (int(row["isl"]) + int(row["step"]))
        return terms.decode_const + terms.decode_per_request * b + terms.decode_per_ctx * ctx
    s = int(row["isl"])
    return terms.prefill_const + terms.prefill_per_token * b * s + terms.prefill_per_work * b * s * s / 2


def errors() -> dict[tuple[str, str, str], list[float]]:
    out: dict[tuple[str, str, str], list[float]] = {}
    for row in ROWS:
        key = (str(row["system"]), str(row["family"]), str(row["dtype"]))
        out.setdefault(key, []).append(abs(modelled(row) / float(row["t"]) - 1) * 100)
    return out


def test_the_sample_covers_every_gpu_with_specs_and_each_fitted_family():
    systems = {r["system"] for r in ROWS}
    assert systems == set(BW) == set(COEFFS.systems)
    assert {r["family"] for r in ROWS} == set(FAMILIES)
    assert 300 <= len(ROWS) <= 1200


def test_sampled_rows_fall_within_the_stated_p90_about_nine_times_in_ten():
    limits = stated()
    within = total = 0
    for key, errs in errors().items():
        p90 = limits[key][1]
        within += sum(e <= p90 * 1.0001 for e in errs)
        total += len(errs)
    assert within / total >= 0.85  # 90 % by construction on the full tables; a sample wobbles


@pytest.mark.parametrize("family", FAMILIES)
def test_each_familys_sampled_median_error_is_near_the_stated_median(family):
    limits, errs = stated(), errors()
    sampled = statistics.median(e for key, es in errs.items() if key[1] == family for e in es)
    stated_median = statistics.median(m for key, (m, _) in limits.items() if key[1] == family)
    assert sampled <= 2 * stated_median + 2  # a median of a few hundred rows against the tables'


def test_provenance_names_the_wheel_its_hash_and_the_licence():
    text = (PERF_DIR / "PROVENANCE.md").read_text()
    assert COEFFS.wheel in text and COEFFS.wheel_sha256 in text
    assert "Apache License 2.0" in text and "silicon_sample.csv" in text


def test_the_fitted_tables_stay_small():
    assert (PERF_DIR / "aic-0.12.0.json").stat().st_size < 375_000  # MoE: a table a dtype, kernel and TP


def test_provenance_states_the_hash_of_the_tables_shipped():
    digest = hashlib.sha256((PERF_DIR / "aic-0.12.0.json").read_bytes()).hexdigest()
    assert f"`{digest}`" in (PERF_DIR / "PROVENANCE.md").read_text()


def test_a_head_dims_own_prefill_fit_prices_its_rows_better_than_the_fit_over_all_head_dims():
    """Kernels run each head dim at their own efficiency (B200's FlashInfer prefill at d 64, gpt-oss's
    head dim, takes about 1.3× what one fit over every head dim says), so the rows of a head dim
    with a fit of its own (`<kv dtype>@d<head dim>`) are priced closer by it."""
    own, pooled = [], []
    for row in ROWS:
        kv = kv_dtype_of(str(row["dtype"]))
        if row["family"] == "prefill_attention" and kv != row["dtype"]:
            t = float(row["t"])
            own.append(abs(modelled(row) / t - 1))
            pooled.append(abs(modelled({**row, "dtype": kv}) / t - 1))
    assert len(own) >= 100
    assert statistics.median(own) < 0.8 * statistics.median(pooled)
