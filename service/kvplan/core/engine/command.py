"""A `vllm serve` command line, or the `non-default args: {…}` line vLLM prints from it, read the
way vLLM 0.33's argument parser reads it (vllm/engine/arg_utils.py EngineArgs.add_cli_args, the
option table in flags.py): each flag's value, and what it does to the plan.

Nothing is executed or expanded: shell syntax that would need a shell (`$(…)`, backticks, `${…}`)
is refused, quotes are read as a POSIX shell reads them, and environment assignments before the
command are kept as text."""

from __future__ import annotations

import ast
import json
import math
import re
import shlex
from collections.abc import Callable, Mapping
from typing import Any

import msgspec

from kvplan.core.errors import InvalidInput
from kvplan.core.limits import MAX_COMMAND_CHARS, MAX_COMMAND_TOKENS

from .flags import (
    FLAGS,
    LABELS,
    Flag,
    canonical,
    human_readable_int,
    human_readable_int_or_auto,
    nearest,
    sets_false,
)

# A flag's value as vLLM holds it (a count stays an integer in JSON: one number type in the schema).
Value = float | str | bool | list[Any] | dict[str, Any] | None

FIELD = "command"
_SHELL = re.compile(r"\$\(|\$\{|`|\$[A-Za-z_]")
_ENV = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")
_ARGS = "non-default args:"
# What starts a command: `vllm serve`, the OpenAI server module, or vLLM's image (its entrypoint is
# `vllm serve`), after any wrapper (env, docker run …).
_MODULE = "vllm.entrypoints.openai.api_server"
_IMAGE = re.compile(r"^(?:[\w.-]+(?::\d+)?/)*vllm/vllm-openai(?::[\w.-]+)?(?:@sha256:[0-9a-f]+)?$")


class ReadFlag(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    """One flag as given and as read: its canonical option, the value vLLM would hold, and what it
    does to the plan (`plan`: sets `field`; `memory`: changes memory in a way not modelled;
    `none`: no effect on memory)."""

    given: str
    option: str
    value: Value = None
    effect: str
    field: str | None = None
    note: str | None = None


class Command(msgspec.Struct, frozen=True, kw_only=True):
    """A command read: the form it came in, the model it serves, the environment set before it,
    every flag, and the plan's settings they give (field → value)."""

    form: str  # "vllm serve", "api_server", "image" or "non-default args"
    model: str | None
    env: dict[str, str]
    flags: tuple[ReadFlag, ...]
    settings: dict[str, Any]
    labels: dict[str, Any]  # what names the model rather than plans it: served_model_name, revision


def _tokens(text: str) -> list[str]:
    """The words of a command as a POSIX shell splits them, without evaluating anything."""
    if len(text) > MAX_COMMAND_CHARS:
        raise InvalidInput(FIELD, f"{len(text):,} characters: a command is at most {MAX_COMMAND_CHARS:,}")
    text = re.sub(r"\\\r?\n", " ", text)  # line continuations
    m = _SHELL.search(text)
    if m is not None:
        at = text[max(0, m.start() - 20) : m.start() + 20].strip()
        raise InvalidInput(
            FIELD, f"`{m.group(0)}` near `{at}` needs a shell to evaluate; kvplan does not: paste the values"
        )
    try:
        words = shlex.split(text, comments=False, posix=True)
    except ValueError as e:  # No closing quotation, No escaped character
        raise InvalidInput(FIELD, f"{str(e).lower()}: the command's quotes do not pair") from None
    if len(words) > MAX_COMMAND_TOKENS:
        raise InvalidInput(FIELD, f"{len(words):,} words: a command is at most {MAX_COMMAND_TOKENS:,}")
    return words


def _start(words: list[str]) -> tuple[str, dict[str, str], list[str]]:
    """The form of the command, the environment assigned before it, and its arguments."""
    env: dict[str, str] = {}
    for i, word in enumerate(words):
        if word == "vllm" and i + 1 < len(words) and words[i + 1] == "serve":
            return "vllm serve", env, words[i + 2 :]
        if word == "-m" and i + 1 < len(words) and words[i + 1] == _MODULE:
            return "api_server", env, words[i + 2 :]
        if _IMAGE.match(word):
            return "image", env, words[i + 1 :]
        if _ENV.match(word) and not word.startswith("-"):
            name, _, value = word.partition("=")
            env[name] = value
    first = " ".join(words[:3])[:80]
    raise InvalidInput(
        FIELD,
        f"`{first}` is not a `vllm serve` command: send `vllm serve MODEL --flag …`, "
        f"`python -m {_MODULE} --model MODEL …`, or the `non-default args: {{…}}` line vLLM printed",
    )


def _option(given: str) -> tuple[str, Flag]:
    """The canonical option a flag names (as vLLM's FlexibleArgumentParser reads it), and its row."""
    option = canonical(given)
    if option is not None:
        return option, FLAGS[option]
    name = given.split("=", 1)[0]
    near = nearest(name)
    hint = f"; did you mean {near}?" if near else ""
    raise InvalidInput(FIELD, f"{name[:60]} is not a flag vLLM 0.33's `vllm serve` takes{hint}")


_WHAT = {"int": "an integer", "human_int": "an integer (32k, 32K)", "human_int_or_auto": "an integer or auto",
         "float": "a number", "json": "JSON", "bool": "true or false"}  # fmt: skip


def _convert(option: str, flag: Flag, raw: str) -> Value:
    """A flag's text as vLLM's parser turns it into a value."""
    try:
        if flag.kind == "int":
            return int(raw)
        if flag.kind == "human_int":
            return human_readable_int(raw)
        if flag.kind == "human_int_or_auto":
            return human_readable_int_or_auto(raw)
        if flag.kind == "float":
            value = float(raw)
            if not math.isfinite(value):
                raise ValueError(raw)
            return value
        if flag.kind == "json" or (flag.kind == "str_or_json" and raw.lstrip().startswith(("{", "["))):
            return json.loads(raw)  # type: ignore[no-any-return]
        if flag.kind == "bool":
            if raw.lower() in ("true", "1", "yes"):
                return True
            if raw.lower() in ("false", "0", "no"):
                return False
            raise ValueError(raw)
    except ValueError as e:  # json.JSONDecodeError is one
        detail = f" ({e})" if flag.kind in ("json", "str_or_json") else ""
        raise InvalidInput(
            FIELD, f"{option} {raw[:60]!r} is not {_WHAT.get(flag.kind, 'a value')}{detail}"
        ) from None
    if flag.choices and raw not in flag.choices:
        shown = ", ".join(flag.choices[:24]) + (", …" if len(flag.choices) > 24 else "")
        raise InvalidInput(FIELD, f"{option} {raw[:60]!r} is not one vLLM takes; valid: {shown}")
    return raw


def _takes(flag: Flag) -> bool:
    return flag.kind not in ("bool", "switch", "str_or_true")


def _read_args(args: list[str], form: str) -> tuple[str | None, list[ReadFlag]]:
    """The model (positional, or --model) and every flag, in order. A dotted `--x.key value` sets
    one key of the JSON flag --x; an `append` flag repeated keeps every value."""
    model: str | None = None
    read: list[ReadFlag] = []
    i = 0
    while i < len(args):
        word = args[i]
        i += 1
        if not word.startswith("-") or word == "-":
            if form in ("vllm serve", "image") and model is None and not read:
                model = word
                continue
            raise InvalidInput(FIELD, f"`{word[:60]}` stands where a flag should: quote a value with spaces")
        option, flag = _option(word)
        name, eq, inline = word.partition("=")
        raw: str | list[str] | None = inline if eq else None
        if word.startswith("-O") and not word.startswith("--") and len(name) > 2:
            raw = name[2:]  # -O3
        if raw is None and (_takes(flag) or (flag.kind == "str_or_true" and i < len(args)
                                             and not args[i].startswith("-"))):  # fmt: skip
            if i >= len(args):
                raise InvalidInput(FIELD, f"{name} needs a value")
            raw = args[i]
            i += 1
            if flag.kind == "list":
                items = [raw]
                while i < len(args) and not args[i].startswith("-"):
                    items.append(args[i])
                    i += 1
                raw = items
        read.append(_value(word, name, option, flag, raw))
    for f in read:
        if f.option == "--model" and isinstance(f.value, str):
            model = f.value
    return model, _merged(read)


def _value(word: str, name: str, option: str, flag: Flag, raw: str | list[str] | None) -> ReadFlag:
    """One flag's value as vLLM holds it after this word."""
    if "." in name and name.startswith("--"):  # --compilation-config.mode 3
        key = name.split(".", 1)[1]
        text = raw if isinstance(raw, str) else "true"
        try:
            item: Value = json.loads(text)
        except ValueError:
            item = text
        return _flag(word, option, flag, {key: item})
    if isinstance(raw, list):
        return _flag(word, option, flag, raw)
    if raw is None:
        return _flag(word, option, flag, not sets_false(name))
    if flag.kind == "switch":
        raise InvalidInput(FIELD, f"{option} takes no value, got {raw[:60]!r}")
    value = _convert(option, flag, raw)
    if option == "--max-model-len" and value == -1:
        note = "vLLM takes the longest length that fits; kvplan plans the model's own maximum"
        return ReadFlag(given=word[:200], option=option, value="auto", effect="memory", note=note)
    return _flag(word, option, flag, [value] if flag.kind == "append" else value)


def _flag(given: str, option: str, flag: Flag, value: Value) -> ReadFlag:
    return ReadFlag(
        given=given[:200],
        option=option,
        value=value,
        effect=flag.effect,
        field=flag.field,
        note=flag.reason or None,
    )


def _merged(read: list[ReadFlag]) -> list[ReadFlag]:
    """Dotted keys folded into their JSON flag, and an `append` flag's values into one list, as
    vLLM's parser holds them; otherwise every flag as given."""
    out: list[ReadFlag] = []
    at: dict[str, int] = {}
    for f in read:
        j = at.get(f.option)
        if j is not None and isinstance(f.value, (dict, list)) and isinstance(out[j].value, type(f.value)):
            joined = {**out[j].value, **f.value} if isinstance(f.value, dict) else [*out[j].value, *f.value]  # type: ignore[dict-item, misc]
            out[j] = msgspec.structs.replace(out[j], given=f"{out[j].given} {f.given}"[:200], value=joined)
            continue
        at[f.option] = len(out)
        out.append(f)
    return out


def _from_printed(text: str) -> tuple[str | None, list[ReadFlag]]:
    """vLLM's `non-default args: {…}` (its parsed arguments, as Python prints a dict)."""
    start = text.index("{", text.index(_ARGS))
    end = text.rfind("}")
    try:
        printed = ast.literal_eval(text[start : end + 1]) if end > start else None
    except (ValueError, SyntaxError, MemoryError, RecursionError, TypeError):
        printed = None
    if not isinstance(printed, dict):
        raise InvalidInput(FIELD, "the `non-default args: {…}` dict does not close: paste the whole line")
    model: str | None = None
    read: list[ReadFlag] = []
    for key, value in printed.items():
        if not isinstance(key, str):
            continue
        if key == "model_tag" or key == "model":
            model = str(value)
            continue
        option = canonical("--" + key.replace("_", "-"))
        if option is None:
            continue  # a setting vLLM 0.33 has not (an older engine's): nothing to the plan
        read.append(_flag(f"{key}={value!r}"[:200], option, FLAGS[option], value))
    return model, read


def read_command(text: str, config: Mapping[str, Any] | None = None) -> Command:
    """A command or vLLM's `non-default args` line, read: every flag with its value and effect, and
    the plan's settings. `config` is the content of a `--config` file (its keys are flags)."""
    if _ARGS in text:
        model, read = _from_printed(text)
        form, env = "non-default args", dict[str, str]()
    else:
        form, env, args = _start(_tokens(text))
        model, read = _read_args(args, form)
    if any(f.option == "--config" for f in read):
        if config is None:
            raise InvalidInput("config", "the command names a --config file: send its content as `config`")
        for key, value in config.items():
            option, flag = _option("--" + str(key).replace("_", "-"))
            read.append(_flag(f"config: {key}", option, flag, value))
    settings = _settings(read)
    labels = {k: settings.pop(k) for k in LABELS if k in settings}
    settings.pop("model", None)  # the model is its own
    return Command(form=form, model=model, env=env, flags=tuple(read), settings=settings, labels=labels)


# How a flag's value becomes the plan's field, where the two differ in unit or sense.
_TO_FIELD: dict[str, Callable[[Value], Any]] = {
    "--disable-hybrid-kv-cache-manager": lambda v: not v,
    "--kv-offloading-size": lambda v: round(float(v) * (1 << 30)) if isinstance(v, (int, float)) else v,
}


def _settings(read: list[ReadFlag]) -> dict[str, Any]:
    """The plan's fields the flags set; the last of a repeated flag wins, as in argparse."""
    out: dict[str, Any] = {}
    for f in read:
        if f.effect == "plan" and f.field is not None:
            convert = _TO_FIELD.get(f.option)
            out[f.field] = f.value if convert is None else convert(f.value)
    return out
