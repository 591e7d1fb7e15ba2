"""docs/seed-figures.md table 1: per-token KV bytes (bf16, TP = 1), exactly."""

from __future__ import annotations

import pytest

from kvplan.core.kv.pertoken import per_token
from kvplan.core.units import GiB, KiB
from tests.seed import TABLE_1


@pytest.mark.parametrize(
    ("model", "kind", "L", "hkv", "D", "bf16_kib", "fp8_kib", "gib_128k", "ratio"), TABLE_1
)
def test_seed_table_1_row_is_reproduced_exactly(
    registry, model, kind, L, hkv, D, bf16_kib, fp8_kib, gib_128k, ratio
):
    geo = registry.model(model).geometry
    assert geo.attention_kind == kind
    assert geo.num_layers == L
    assert (1 if geo.is_mla else geo.num_kv_heads) == hkv
    assert geo.head_dim == D
    bf16 = per_token(geo, "bfloat16", context_tokens=128 * 1024)
    fp8 = per_token(geo, "fp8")
    assert bf16.bytes_per_token == bf16_kib * KiB
    assert fp8.bytes_per_token == fp8_kib * KiB
    assert round(bf16.kv_bytes_per_request / GiB, 3) == gib_128k
    assert f"{round(bf16.mha_equivalent_ratio, 1):g}×" == ratio


def test_deepseek_v3_128k_request_is_exactly_8_578125_gib(registry):
    pt = per_token(registry.model("deepseek-v3").geometry, context_tokens=131072)
    assert pt.kv_bytes_per_request == 70272 * 131072
    assert pt.kv_bytes_per_request / GiB == 8.578125


def test_deepseek_v3_mha_form_is_128_heads_of_128_dims(registry):
    pt = per_token(registry.model("deepseek-v3").geometry)
    assert pt.mha_equivalent_bytes == 2 * 61 * 128 * 128 * 2
    assert pt.mha_equivalent_ratio == pytest.approx(3997696 / 70272)
