"""Each input limit and each vLLM default has one home (issue 10): limits in core/limits.py,
vLLM's defaults in the engine profile (core/engine/profiles.py). These are the greps the issue asks
for, run over the service's sources, so a constant defined somewhere else fails here."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

SERVICE = Path(__file__).resolve().parents[1] / "service" / "kvplan"
LIMITS = SERVICE / "core" / "limits.py"
PROFILES = SERVICE / "core" / "engine" / "profiles.py"


def _lines_matching(pattern: str, home: Path) -> list[str]:
    regex = re.compile(pattern)
    found = []
    for path in sorted(SERVICE.rglob("*.py")):
        if path == home:
            continue
        for n, line in enumerate(path.read_text().splitlines(), 1):
            if regex.search(line):
                found.append(f"{path.relative_to(SERVICE)}:{n}: {line.strip()}")
    return found


def test_input_limits_are_defined_only_in_core_limits():
    assert _lines_matching(r"^MAX_[A-Z_]+\s*(:[^=]+)?=\s*[0-9(]", LIMITS) == []


@pytest.mark.parametrize(
    "pattern",
    [
        r"max_num_seqs.*=.*\b(256|1024)\b",
        r"max_num_batched_tokens.*=.*\b(2048|8192|16384)\b",
        r"block_size\s*(or|=)\s*(16|64)\b",
    ],
)
def test_vllm_defaults_are_written_only_in_the_engine_profile(pattern):
    assert _lines_matching(pattern, PROFILES) == []


def test_the_search_finds_a_limit_where_it_is_defined():
    found = _lines_matching(r"^MAX_BYTES\s*=", Path("/nonexistent"))
    assert [line.split(":")[0] for line in found] == ["core/limits.py"]
