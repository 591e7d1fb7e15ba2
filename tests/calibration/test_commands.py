"""Issue 26's measure (tests/calibration/commands.py): the real start-up logs that quote a command
plan from that line alone at least as often within max(0.5 GiB, 2 %) of the KV vLLM printed as
they do from kvplan's fields."""

from __future__ import annotations

from tests.calibration.commands import rows, within


def test_the_logs_commands_alone_plan_as_well_as_their_fields():
    table = rows()
    by_command = sum(1 for r in table if "command_kv" in r and within(r["command_kv"], r["printed"]))
    by_fields = sum(1 for r in table if "fields" in r and within(r["fields"], r["printed"]))
    assert len(table) == 42
    assert by_command >= by_fields and (by_command, by_fields) == (42, 41)  # M063: --dtype float32
