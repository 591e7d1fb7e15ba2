"""docs/seed-figures.md table 2, the 880-block worked example and parameter group C, exactly."""

from __future__ import annotations

import pytest

from kvplan.core.units import GiB, MiB
from tests.seed import TABLE_2, A, B, C


def test_llama3_70b_on_160_gib_fills_880_blocks(budget):
    b = budget(**A)
    assert b.requested_bytes == 158054796493  # ceil(160 GiB × 0.92)
    assert round(b.available_kv_bytes / GiB, 3) == 17.2
    assert b.bytes_per_block == 20 * MiB
    assert b.num_blocks == 880
    assert b.usable_blocks == 879
    assert b.token_slots == 56_256
    assert b.blocks_per_request == 128
    assert b.concurrency.guaranteed == 6
    assert round(b.token_slots / 8192, 3) == 6.867
    assert b.concurrency.budget_floor == 6


@pytest.mark.parametrize(("scenario", "budget_gib", "kv_gib", "per_req", "n"), TABLE_2)
def test_seed_table_2_row_is_reproduced_exactly(budget, scenario, budget_gib, kv_gib, per_req, n):
    b = budget(**scenario)
    assert b.gpu_memory_utilization == 0.92
    assert round(b.available_kv_bytes / GiB, 2) == budget_gib
    assert b.kv_bytes_per_request / GiB == kv_gib
    assert round(b.concurrency.budget_unrounded, 2) == per_req
    assert b.concurrency.budget_floor == n
    assert b.concurrency.guaranteed == n


def test_deepseek_v3_one_card_of_tp8_holds_24_and_pooling_says_192(budget):
    b = budget(**B)
    assert b.weights_bytes_per_gpu == 78.125 * GiB
    assert round(b.available_kv_bytes / GiB, 3) == 51.595
    assert b.kv_bytes_per_request / GiB == 2.14453125
    assert round(b.concurrency.budget_unrounded, 2) == 24.06
    assert b.concurrency.budget_floor == 24
    assert b.concurrency.guaranteed == 24
    pooled = b.pooled
    assert pooled is not None
    assert pooled.memory_bytes == 1128 * GiB
    assert round(pooled.available_kv_bytes / GiB, 2) == 412.76
    assert round(pooled.concurrency_unrounded, 2) == 192.47
    assert pooled.concurrency == 192
    codes = {w.code for w in b.warnings}
    assert {"pooled_not_deployable", "mla_replicated_under_tp"} <= codes


def test_group_c_128k_holds_none_and_says_what_fits(budget):
    b = budget(**C)
    assert b.blocks_per_request == 2048
    assert b.concurrency.guaranteed == 0
    assert b.concurrency.budget_floor == 0
    assert b.max_context_tokens == 879 * 64 == 56_256
    assert b.max_context_limited_by == "kv_cache"
    warning = next(w for w in b.warnings if w.code == "budget_insufficient")
    assert "56,256" in warning.message


def test_worked_example_ledger_explains_every_figure(budget):
    b = budget(**A, explain=True)
    steps = {s.name: s for s in b.ledger}
    assert steps["num_blocks"].value == 880
    assert steps["usable_blocks"].value == 879
    assert steps["token_slots"].value == 56_256
    assert steps["concurrency.guaranteed"].value == 6
    assert steps["requested_bytes"].source.startswith("vllm/v1/worker/utils.py")
    assert all(s.formula and s.unit is not None for s in b.ledger)


def test_ledger_is_only_built_when_asked(budget):
    assert budget(**A).ledger == ()
