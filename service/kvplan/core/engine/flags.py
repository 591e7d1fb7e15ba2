"""Every option `vllm serve` accepts in vLLM 0.33.0, and what each does to a plan (issue 26): the
engine's (vllm/engine/arg_utils.py EngineArgs.add_cli_args, AsyncEngineArgs') and the OpenAI
server's own (vllm/entrypoints/common/cli_args.py make_arg_parser, FrontendArgs).

FLAGS maps each canonical long option to its Flag (flags_table.py holds the rows): its other option
strings, how vLLM parses its value, vLLM's default, and its effect. "plan": kvplan models it (the
request field it sets); "memory": it changes what vLLM allocates or plans and kvplan does not model
it yet (the reason, and the vLLM file where); "none": it changes no memory.

How vLLM reads a command line (vllm/utils/argparse_utils.py FlexibleArgumentParser), which
`canonical` follows: underscores in an option's name are dashes (--max_model_len); --x.key value
sets one key of the JSON flag --x; -O3, -O=3 and -O 3 are --optimization-level 3; a bool flag also
takes --no-x and (EnableDisableAction) --disable-x for --enable-x, --enable-x for --disable-x.
argparse also accepts any unambiguous prefix of a long option (--max-model 8192), which `nearest`
suggests the full option for."""

from __future__ import annotations

import difflib
import re

import msgspec

from .flags_table import ROWS, Default, Effect, Flag, Kind

__all__ = [
    "FLAGS",
    "LABELS",
    "OPTIONS",
    "Default",
    "Effect",
    "Flag",
    "Kind",
    "canonical",
    "human_readable_int",
    "human_readable_int_or_auto",
    "nearest",
    "negations",
    "sets_false",
]

# What a "plan" flag may set besides a request field: names the answer carries, not the budget.
LABELS = ("served_model_name", "revision")
_INVERSE = {"--enable-": "--disable-", "--disable-": "--enable-"}


def negations(option: str, aliases: tuple[str, ...] = ()) -> tuple[str, ...]:
    """The option strings vLLM's parser adds to a bool flag (an argparse.BooleanOptionalAction),
    each of which sets it False: --no-x for each --x (argparse), and --disable-x for --enable-x or
    --enable-x for --disable-x (vllm/utils/argparse_utils.py EnableDisableAction)."""
    given = (option, *aliases)
    negated = tuple(f"--no-{o[2:]}" for o in given if o.startswith("--"))
    inverses = tuple(inv + o.removeprefix(p) for o in given for p, inv in _INVERSE.items() if o.startswith(p))
    return negated + inverses


FLAGS: dict[str, Flag] = {
    option: msgspec.structs.replace(f, aliases=f.aliases + negations(option, f.aliases))
    if f.kind == "bool"
    else f
    for option, f in ROWS.items()
}
# Every option string vLLM registers, and the canonical option of its flag.
OPTIONS: dict[str, str] = {o: option for option, f in FLAGS.items() for o in (option, *f.aliases)}
_NEGATIVE = frozenset(
    o for option, f in ROWS.items() if f.kind == "bool" for o in negations(option, f.aliases)
)
_DASHES = re.compile(r"(?<=--)[^.]*")


def canonical(option: str) -> str | None:
    """The canonical option an option string of a command line names, as FlexibleArgumentParser
    reads it (its `=value` dropped, underscores as dashes, a dotted JSON key's flag, -O<n>), or
    None if vLLM 0.33 has no such option."""
    name = option.split("=", 1)[0]
    if name.startswith("-O") and not name.startswith("--"):
        return "--optimization-level"
    if name.startswith("--"):
        name = _DASHES.sub(lambda m: m.group(0).replace("_", "-"), name, count=1).split(".", 1)[0]
    return OPTIONS.get(name)


def sets_false(option: str) -> bool:
    """Whether a bool flag's option string sets it False (--no-x, or --disable-x for --enable-x),
    its underscores read as dashes, as FlexibleArgumentParser reads them (--no-enforce_eager)."""
    if option.startswith("--"):
        option = _DASHES.sub(lambda m: m.group(0).replace("_", "-"), option, count=1)
    return option in _NEGATIVE


def negative(option: str) -> bool:
    """Whether an option string, exactly as spelled, is a bool flag's negative form: what vLLM's
    load_config_file looks up for a key set false (`--no-{key}` in _option_string_actions)."""
    return option in _NEGATIVE


def nearest(option: str) -> str | None:
    """The known option string closest to `option` (itself if known), for a "did you mean":
    difflib's best match, or None if none is close."""
    name = option.split("=", 1)[0]
    if canonical(name) is not None:
        return name
    found = difflib.get_close_matches(name.replace("_", "-"), OPTIONS, n=1)
    return found[0] if found else None


_HUMAN = re.compile(r"(\d+(?:\.\d+)?)([kKmMgGtT])")
_DECIMAL = {"k": 10**3, "m": 10**6, "g": 10**9, "t": 10**12}
_BINARY = {"K": 2**10, "M": 2**20, "G": 2**30, "T": 2**40}


def human_readable_int(text: str) -> int:
    """An integer as vLLM 0.33's human_readable_int reads it (vllm/utils/argparse_utils.py), for
    --max-num-batched-tokens, --kv-cache-memory-bytes, … (flags of kind "human_int"): lower case
    k, m, g, t multiply by 10³, 10⁶, 10⁹, 10¹², upper case K, M, G, T by 2¹⁰, 2²⁰, 2³⁰, 2⁴⁰. A
    decimal suffix takes a decimal number, multiplied as a float and truncated (25.6k = 25,600,
    2.01k = 2,009); a binary one does not (1.5K is refused). Without a suffix it is Python's int()
    of the stripped text (+5, -1 and 1_000 pass; 1e3, 1.5, 0x10 and 12KB do not). Digits are any
    Unicode decimal digits, as vLLM's \\d matches. Raises ValueError for what vLLM refuses (an
    argparse.ArgumentTypeError there for a decimal with a binary suffix, an uncaught
    OverflowError for a number past a float's range)."""
    value = text.strip()
    match = _HUMAN.fullmatch(value)
    if match:
        number, suffix = match.groups()
        if suffix in _DECIMAL:
            try:
                return int(float(number) * _DECIMAL[suffix])
            except OverflowError as e:
                raise ValueError(f"{number}{suffix} is past a float's range") from e
        try:
            return int(number) * _BINARY[suffix]
        except ValueError as e:
            raise ValueError(
                f"Decimals are not allowed with binary suffixes like {suffix}. "
                f"Did you mean to use {number}{suffix.lower()} instead?"
            ) from e
    return int(value)


def human_readable_int_or_auto(text: str) -> int:
    """--max-model-len's reading (vllm/utils/argparse_utils.py human_readable_int_or_auto): -1 for
    "-1" or "auto" (any case), which asks vLLM to fit the longest length the KV cache holds; else
    human_readable_int."""
    value = text.strip()
    if value == "-1" or value.lower() == "auto":
        return -1
    return human_readable_int(value)
