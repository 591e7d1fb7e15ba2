"""The table of `vllm serve`'s options (issue 26, kvplan.core.engine.flags) against vLLM 0.33.0's own
lists: tests/autoscale/data's engine and frontend flags and their types, which
tests/autoscale/vllm_flags.py makes from the wheel's source. And human_readable_int against what
vLLM's own function returned."""

from __future__ import annotations

import re
from collections import Counter

import pytest

from kvplan.core.budget.types import ENGINE_SETTINGS
from kvplan.core.engine.dtypes import KV_CACHE_DTYPES, MODEL_DTYPES
from kvplan.core.engine.flags import (
    FLAGS,
    LABELS,
    OPTIONS,
    canonical,
    human_readable_int,
    human_readable_int_or_auto,
    nearest,
    negations,
    sets_false,
)
from kvplan.core.engine.profiles import PROFILES
from kvplan.core.model.quant import QUANTIZATION_ARGS
from kvplan.schemas.common import FIELDS
from tests.autoscale.vllm_flags import FLAGS_FILE, FRONTEND_FILE, arguments, flags, types

ENGINE = arguments(FLAGS_FILE)
FRONTEND = arguments(FRONTEND_FILE)
TYPES = types()


def effects(args: list[list[str]]) -> Counter[str]:
    return Counter(FLAGS[a[0]].effect for a in args)


def test_every_engine_flag_of_vllm_0_33_is_classified():
    """Every option string vLLM 0.33's `vllm serve` registers names one flag of the table, and
    takes a value exactly when vLLM's does; each argument's canonical option is the table's key."""
    registered = {o: FLAGS[option].takes_value for o, option in OPTIONS.items()}
    assert registered == flags(FLAGS_FILE) | flags(FRONTEND_FILE)
    assert [a[0] for a in ENGINE + FRONTEND] == list(FLAGS)
    assert effects(ENGINE) == {"plan": 47, "memory": 66, "none": 141}
    assert effects(FRONTEND) == {"memory": 1, "none": 66}


def test_every_option_string_names_one_flag():
    strings = [o for option, f in FLAGS.items() for o in (option, *f.aliases)]
    assert len(strings) == len(set(strings)) == len(OPTIONS) == 485


@pytest.mark.parametrize("option", list(FLAGS))
def test_each_flag_is_parsed_as_vllm_parses_it(option):
    """Kind, default (of the same type), choices, whether a plugin may add choices, and the file
    that defines it: as vllm_flags.py read them from vLLM's source."""
    f, t = FLAGS[option], TYPES[option]
    default = tuple(t.default) if isinstance(t.default, list) else t.default
    assert (f.kind, f.default, type(f.default)) == (t.kind, default, type(default))
    assert (f.choices, f.open_choices, f.source) == (t.choices, t.open, t.source)
    assert f.takes_value == (f.kind not in ("bool", "switch"))
    assert not f.choices or f.kind in ("choice", "list")


def test_every_plan_flag_sets_a_request_field_or_a_label():
    """A plan flag names a field of BudgetRequest (the engine settings, model, quantization) or one
    of the labels; no two set the same (but --spec-method, a shorthand of --speculative-config's
    method key); no other flag names a field."""
    fields = [f.field for option, f in FLAGS.items() if f.effect == "plan" and option != "--spec-method"]
    assert set(fields) <= {*ENGINE_SETTINGS, *FIELDS, *LABELS}
    assert len(fields) == len(set(fields))
    assert set(LABELS) <= set(fields)
    assert all(f.field == "" for f in FLAGS.values() if f.effect != "plan")
    assert FLAGS["--disable-hybrid-kv-cache-manager"].field == "hybrid_kv_cache_manager"
    assert FLAGS["--spec-method"].field == FLAGS["--speculative-config"].field == "speculative_method"
    assert FLAGS["--kv-offloading-size"].field == "kv_offloading_bytes"


CITES = re.compile(r"\((vllm/[\w/.]+)\)$")


def test_every_memory_flag_says_what_it_changes_and_the_vllm_file_where():
    for option, f in FLAGS.items():
        if f.effect == "memory":
            assert CITES.search(f.reason), option
        assert f.reason == f.reason.strip() and "  " not in f.reason, option
        assert f.source.startswith("vllm/") and f.source.endswith(".py"), option


def test_the_choices_hold_kvplans_own_lists():
    """vLLM's lists take every name kvplan plans with, bar --quantization bitsandbytes, which vLLM
    0.33 no longer has (QuantizationMethods in vllm/model_executor/layers/quantization/__init__.py)."""
    assert set(KV_CACHE_DTYPES) <= set(FLAGS["--kv-cache-dtype"].choices)
    assert set(MODEL_DTYPES) <= set(FLAGS["--dtype"].choices)
    assert set(QUANTIZATION_ARGS) - set(FLAGS["--quantization"].choices) == {"bitsandbytes"}
    assert FLAGS["--kv-cache-dtype"].open_choices and not FLAGS["--dtype"].open_choices


def test_a_default_kvplan_also_states_is_the_0_33_profiles():
    profile = PROFILES["vllm@0.33"]
    assert FLAGS["--gpu-memory-utilization"].default == profile.default_gpu_memory_utilization
    # vLLM computes these at start-up: the profile holds what it comes to.
    for option in ("--block-size", "--max-num-seqs", "--max-num-batched-tokens", "--async-scheduling"):
        assert FLAGS[option].default is None


def test_a_bool_flag_takes_the_negations_vllms_parser_adds():
    assert FLAGS["--enable-prefix-caching"].aliases == (
        "--no-enable-prefix-caching",
        "--disable-prefix-caching",
    )
    assert FLAGS["--enable-expert-parallel"].aliases == (
        "-ep",
        "--no-enable-expert-parallel",
        "--disable-expert-parallel",
    )
    assert FLAGS["--disable-log-stats"].aliases == ()  # store_true: no --no- form
    assert negations("--enforce-eager") == ("--no-enforce-eager",)
    # --enable-hybrid-kv-cache-manager sets --disable-hybrid-kv-cache-manager False: the manager on.
    assert sets_false("--enable-hybrid-kv-cache-manager")
    assert sets_false("--no-async-scheduling") and not sets_false("--async-scheduling")
    assert not sets_false("--disable-log-stats")


@pytest.mark.parametrize(
    ("given", "expected"),
    [
        ("--tensor-parallel-size", "--tensor-parallel-size"),
        ("-tp", "--tensor-parallel-size"),
        ("--tensor_parallel_size=4", "--tensor-parallel-size"),
        ("--device-memory-utilization", "--gpu-memory-utilization"),
        ("--disable-prefix-caching", "--enable-prefix-caching"),
        ("--compilation-config.cudagraph_mode", "--compilation-config"),
        ("--compilation_config.cudagraph_mode=FULL", "--compilation-config"),
        ("-O3", "--optimization-level"),
        ("-O", "--optimization-level"),
        ("-h", "--help"),
        ("--host", "--host"),
        ("--tensor-paralel-size", None),
        ("-TP", None),
    ],
)
def test_canonical_reads_an_option_as_vllms_parser_does(given, expected):
    assert canonical(given) == expected


@pytest.mark.parametrize(
    ("given", "expected"),
    [
        ("--tensor-paralel-size", "--tensor-parallel-size"),
        ("--max-model-length", "--max-model-len"),
        ("--gpu_memory_utilisation=0.9", "--gpu-memory-utilization"),
        ("--kv-cache-dtype", "--kv-cache-dtype"),
        ("--zzzz", None),
    ],
)
def test_nearest_suggests_the_closest_known_option(given, expected):
    assert nearest(given) == expected


# What vLLM 0.33's own human_readable_int (vllm/utils/argparse_utils.py) returned for each text:
# the function run from the unzipped wheel's source with the `regex` module it imports (2026.12.2)
# and a stub logger. An exception's name where it raised.
OBSERVED: dict[str, int | str] = {
    "1k": 1000,
    "1K": 1024,
    "25.6k": 25600,
    "0.57k": 570,
    "2.01k": 2009,  # the float product, truncated
    "4.02k": 4019,
    "32k": 32000,
    "32K": 32768,
    "1m": 1000000,
    "1M": 1048576,
    "2.5m": 2500000,
    "1.15m": 1150000,
    "1g": 1000000000,
    "80G": 85899345920,
    "1t": 1000000000000,
    "1T": 1099511627776,
    "0k": 0,
    "8192": 8192,
    " 8192 ": 8192,
    "\t32k\n": 32000,
    "+5": 5,
    "-1": -1,
    "007": 7,
    "1_000": 1000,
    "\u0663k": 3000,  # ٣, an Arabic-Indic digit: \d and float() take any Unicode decimal digit
    "\uff11\uff10": 10,  # full-width 10
    "99999999999999999999k": 99999999999999991611392,
    "1.5K": "ArgumentTypeError",
    "2.5M": "ArgumentTypeError",
    "1.0G": "ArgumentTypeError",
    "-1k": "ValueError",
    "1e3": "ValueError",
    "1.5": "ValueError",
    "k": "ValueError",
    "": "ValueError",
    "1kk": "ValueError",
    "1 k": "ValueError",
    "1.k": "ValueError",
    ".5k": "ValueError",
    "0x10": "ValueError",
    "1,000": "ValueError",
    "12KB": "ValueError",
    "auto": "ValueError",
    "1" * 400 + "k": "OverflowError",
}


@pytest.mark.parametrize(("text", "expected"), OBSERVED.items(), ids=[repr(k)[:24] for k in OBSERVED])
def test_human_readable_int_reads_what_vllms_own_function_reads(text, expected):
    if isinstance(expected, int):
        assert human_readable_int(text) == expected
    else:  # refused: a ValueError here, whatever vLLM raised
        with pytest.raises(ValueError):
            human_readable_int(text)


def test_a_decimal_with_a_binary_suffix_is_refused_as_vllm_words_it():
    with pytest.raises(ValueError, match=r"Did you mean to use 1\.5k instead\?"):
        human_readable_int("1.5K")


@pytest.mark.parametrize(
    ("text", "expected"), [("auto", -1), ("AUTO", -1), (" -1 ", -1), ("-2", -2), ("32k", 32000)]
)
def test_max_model_len_also_takes_auto(text, expected):
    # vLLM's human_readable_int_or_auto returned the same for each.
    assert human_readable_int_or_auto(text) == expected
    assert FLAGS["--max-model-len"].kind == "human_int_or_auto"
