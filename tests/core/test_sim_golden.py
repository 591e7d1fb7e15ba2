"""The simulator answers as it did before its speed-up (tests/core/sim_golden.py pinned them):
untimed answers byte for byte, timed ones the same schedule and the same times to rounding."""

from __future__ import annotations

import json

import pytest

from tests.core.sim_golden import CASES, GOLDEN, answer

PINNED = json.loads(GOLDEN.read_text())
FLOATS = ("mean_blocks_in_use", "ttft_mean_ms", "e2e_p99_ms", "duration_s")


@pytest.mark.parametrize("i", range(CASES))
def test_each_pinned_workload_gets_the_answer_it_got_before_the_speed_up(i):
    pinned, now = PINNED[str(i)], answer(i)
    assert {k: v for k, v in now.items() if k not in FLOATS} == {
        k: v for k, v in pinned.items() if k not in FLOATS
    }
    for k in FLOATS:
        if k in pinned:
            assert now[k] == pytest.approx(pinned[k], rel=1e-9)
