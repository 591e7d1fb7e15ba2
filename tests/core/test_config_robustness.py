"""A config.json kvplan cannot read is refused naming a field, never a crash: every key of every
config the corpora hold, at the top level and in text_config, set to a value of the wrong kind,
shape or size, gives a kvplan error or a geometry (found by this test: Mamba's `expand`)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kvplan.core.errors import KvplanError
from kvplan.core.hf.reader import from_hf_config
from tests.core.budgets import config_refusal

ROOT = Path(__file__).resolve().parents[2]
CORPORA = [
    ROOT.parent / "shared" / "data" / "hf-configs",
    ROOT / "tests" / "core" / "data" / "hf-configs",
    ROOT / "tests" / "calibration" / "data" / "hf-configs",
    ROOT / "tests" / "hub" / "data",
]
CONFIGS = sorted(p for corpus in CORPORA if corpus.is_dir() for p in corpus.glob("*.json"))
WRONG = [None, "x", -1, 0, 1.5, 1e308, 10**30, True, [], [1], {}]


def _mutations(config: dict[str, object]):
    """The config with one key at a time given each wrong value, in text_config too."""
    for key in config:
        for value in WRONG:
            yield key, {**config, key: value}
    text = config.get("text_config")
    if isinstance(text, dict):
        for key in text:
            for value in WRONG:
                yield f"text_config.{key}", {**config, "text_config": {**text, key: value}}


@pytest.mark.parametrize("path", CONFIGS, ids=lambda p: p.name)
def test_no_wrong_value_in_a_real_config_crashes_the_reader(path):
    config = json.loads(path.read_text())
    if not isinstance(config, dict):
        pytest.skip("not a config object")
    crashes = []
    for key, mutated in _mutations(config):
        try:
            from_hf_config(mutated)
        except KvplanError:
            pass
        except Exception as e:
            crashes.append(f"{key}: {type(e).__name__}: {e}"[:200])
    assert crashes == []


@pytest.mark.parametrize("expand", [None, "x", 0, -2, 1e308, True])
def test_a_mamba2_expand_that_is_not_a_positive_number_is_refused_naming_it(expand):
    config = json.loads(
        (ROOT / "tests/core/data/hf-configs/synthetic--mamba2-codestral-shaped.json").read_text()
    )
    assert config_refusal({**config, "expand": expand}) == "expand"


def test_the_corpora_are_there():
    assert len(CONFIGS) > 100
