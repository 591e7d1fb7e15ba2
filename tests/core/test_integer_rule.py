"""One integer rule (core/validate.py `integer`) for every number the core reads: a request's
settings, a config.json's counts, an inline geometry's, the parallel sizes. An int (not a bool,
not a float such as 8192.0), within bounds. Each caller keeps the words its answers have always
used, pinned here: answers are compared byte for byte across releases."""

from __future__ import annotations

import math

import pytest

from kvplan.core.errors import InvalidConfig, InvalidInput, InvalidLayout
from kvplan.core.hf.reader import from_hf_config
from kvplan.core.kv.parallel import Parallel, check_sizes
from kvplan.core.model.geometry import non_neg_int, pos_int
from kvplan.core.validate import COUNT, SETTING, SIZE, integer, non_negative_int, positive_int
from kvplan.presets.registry import BUILTIN_DIR

NOT_INTEGERS = [True, False, 8192.0, 1e3, "8192", None, math.nan, [1]]


@pytest.mark.parametrize("value", NOT_INTEGERS, ids=repr)
@pytest.mark.parametrize("wording", [SETTING, COUNT, SIZE], ids=["setting", "count", "size"])
def test_anything_but_an_int_is_refused_whatever_the_wording(value, wording):
    with pytest.raises(InvalidInput) as e:
        integer(value, "f", 10**9, 1, InvalidInput, wording)
    assert e.value.field == "f"
    assert e.value.reason == wording.not_integer.format(value=value)


def test_an_int_within_bounds_is_itself():
    assert integer(1, "f", 1, 1) == 1
    assert integer(0, "f", math.inf) == 0
    assert integer(10**30, "f", math.inf, 0) == 10**30


@pytest.mark.parametrize(
    ("check", "value", "reason"),
    [
        (lambda v: positive_int(v, "f", 100), 0, "must be at least 1"),
        (lambda v: positive_int(v, "f", 100), -5, "must not be negative, got -5"),
        (lambda v: positive_int(v, "f", 100), 101, "must be at most 100, got 101"),
        (lambda v: positive_int(v, "f", 100), 2.0, "must be an integer, got 2.0"),
        (lambda v: non_negative_int(v, "f", 100), -1, "must not be negative, got -1"),
        (lambda v: pos_int(v, "f", 100), 0, "must be at least 1, got 0"),
        (lambda v: pos_int(v, "f", 100), -5, "must be at least 1, got -5"),
        (lambda v: pos_int(v, "f", 100), 101, "must be at most 100, got 101"),
        (lambda v: pos_int(v, "f", 100), "8", "must be a positive integer, got '8'"),
        (lambda v: non_neg_int(v, "f", 100), -5, "must be at least 1, got -5"),
        (lambda v: non_neg_int(v, "f", 100), False, "must be a positive integer, got False"),
    ],
)
def test_each_wording_reads_as_it_always_has(check, value, reason):
    with pytest.raises(InvalidInput) as e:
        check(value)
    assert e.value.reason == reason


def test_a_config_count_of_0_that_means_derive_it_is_0():
    assert non_neg_int(0, "f", 100) == 0


@pytest.mark.parametrize("tp", [0, -2, True, 2.0])
def test_a_parallel_size_that_is_not_a_positive_int_is_an_invalid_layout(tp):
    with pytest.raises(InvalidLayout) as e:
        check_sizes(Parallel(tensor=tp))
    assert (e.value.field, e.value.reason) == (
        "tensor_parallel_size",
        f"must be a positive integer, got {tp!r}",
    )


def test_a_config_count_given_as_a_float_is_refused_as_vllm_would_not_count_with_it():
    """The one rule holds for config.json counts too: 8192.0 used to pass as 8192 here. No config
    of the corpora (tests/*/hf-configs, shared/data/hf-configs, the presets) gives one."""
    import json

    config = json.loads((BUILTIN_DIR / "models" / "llama-3-8b.json").read_text())["config"]
    assert from_hf_config(config, name="x").num_layers == 32
    with pytest.raises(InvalidConfig) as e:
        from_hf_config({**config, "num_hidden_layers": 32.0}, name="x")
    assert (e.value.field, e.value.reason) == ("num_hidden_layers", "must be a positive integer, got 32.0")
    with pytest.raises(InvalidInput) as e:
        pos_int(8192.0, "max_position_embeddings", 1 << 40)
    assert e.value.reason == "must be a positive integer, got 8192.0"
