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
from kvplan.core.model.speculative import SHORTHANDS
from kvplan.core.model.speculative import read_config as read_speculative_config

from .flags import (
    FLAGS,
    LABELS,
    OPTIONS,
    Flag,
    canonical,
    human_readable_int,
    human_readable_int_or_auto,
    nearest,
    negative,
    sets_false,
)

# A flag's value as vLLM holds it (a count stays an integer in JSON: one number type in the schema).
Value = float | str | bool | list[Any] | dict[str, Any] | None

FIELD = "command"
_SHELL = re.compile(r"\$\(|\$\{|`|\$[A-Za-z_]")
_SUBSTITUTION = re.compile(r"\$\(|`")
_ENV = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")
_ARGS = "non-default args:"
# What starts a command: `vllm serve`, the OpenAI server module, or vLLM's image (its entrypoint is
# `vllm serve`), after any wrapper (env, docker run …).
_MODULE = "vllm.entrypoints.openai.api_server"
_MODULES = (_MODULE, "vllm.entrypoints.api_server")  # the second: vLLM's demo server, the same engine flags
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


# A shell prompt before a command (`$ `, `# `, `user@host:~/dir$ `), and the words a command may
# start with after one: a `# ` line that starts otherwise is a comment.
_PROMPT = re.compile(r"^\s*(?:[\w.-]+@[\w.-]+:[^\s$#]*\s*)?[$#%]\s+(?=\S)")
_STARTS = ("vllm", "python", "docker", "podman", "export", "env", "nohup", "uv", "CUDA_", "VLLM_", "HF_")
# An environment variable whose value the answer does not repeat (HF_TOKEN, AWS_SECRET_ACCESS_KEY, …).
_SECRET = re.compile(r"TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIAL|API_KEY|ACCESS_KEY|PRIVATE", re.IGNORECASE)
_COMMANDS = ("vllm", "python", "docker", "podman", "nohup", "uv", "env ")
_TYPOGRAPHY = str.maketrans({"\u201c": '"', "\u201d": '"', "\u2018": "'", "\u2019": "'", "\u00a0": " "})
# Where a command ends (a pipe, a list, the background), and a redirection with its target.
_ENDS = frozenset({"|", "||", "&&", ";", "&", "|&"})
_REDIRECT = re.compile(r"^(?:\d*[<>]{1,2}&?|&>>?)$")
_FD = re.compile(r"(?<![^\s;&|])\d(?=[<>])")


def _lines(text: str) -> str:
    """A paste as one command: prompts dropped, comment lines dropped, continuations joined (a
    backslash followed by spaces too), smart quotes and non-breaking spaces made plain."""
    kept = []
    for line in text.translate(_TYPOGRAPHY).replace("\r\n", "\n").split("\n"):
        m = _PROMPT.match(line)
        if m is not None:
            rest = line[m.end() :]
            if m.group(0).strip().endswith("#") and not (
                rest.startswith(_COMMANDS) or (rest.startswith(_STARTS) and "vllm" in rest)
            ):
                continue  # a comment (`# export X=1` in a script), not a root prompt
            line = rest
        elif line.lstrip().startswith("#"):
            continue
        kept.append(line)
    return re.sub(r"\\[ \t]*\n", " ", "\n".join(kept))


def _tokens(text: str) -> list[str]:
    """The words of the paste's command as a POSIX shell splits them, without evaluating anything:
    it ends at a pipe, `;`, `&&` or `&`, and its redirections are dropped. The `export`s of the
    commands before it (`export X=1 && vllm serve …`) stand before it: they are its environment."""
    if len(text) > MAX_COMMAND_CHARS:
        raise InvalidInput(FIELD, f"{len(text):,} characters: a command is at most {MAX_COMMAND_CHARS:,}")
    text = _lines(text)
    m = _SUBSTITUTION.search(text)  # its output could be any words: nothing of the command is sure
    if m is not None:
        at = text[max(0, m.start() - 20) : m.start() + 20].strip()
        raise InvalidInput(
            FIELD, f"`{m.group(0)}` near `{at}` needs a shell to evaluate; kvplan does not: paste the values"
        )
    # A redirection's file descriptor (`2>&1`, `1>log`) goes with its operator: the lexer would
    # split it into a word of its own, which a value before a redirection (`16384 >log`) is too.
    text = _FD.sub("", text)
    lexer = shlex.shlex(text, posix=True, punctuation_chars=True)
    lexer.whitespace_split = True
    lexer.commenters = ""
    words: list[str] = []
    exported: list[str] = []  # `export X=1 && vllm serve …`: the shell's environment for what follows
    try:
        for word in lexer:
            if len(words) >= MAX_COMMAND_TOKENS:
                raise InvalidInput(FIELD, f"more than {MAX_COMMAND_TOKENS:,} words: send one command")
            if word in _ENDS and words:
                if any(w in ("vllm", "serve") or _IMAGE.match(w) or w == _MODULE for w in words):
                    break
                if word in (";", "&&"):  # a pipe's or a background job's exports stay in its subshell
                    exported += _exports(words)
                words = []  # `cd dir && vllm serve …`: the command is the next one
                continue
            words.append(word)
    except ValueError as e:  # No closing quotation, No escaped character
        raise InvalidInput(FIELD, f"{str(e).lower()}: the command's quotes do not pair") from None
    out: list[str] = exported
    skip = False
    for word in words:  # a redirection and its target: `> log`, `2>&1`, `>> "$LOG"`
        if skip:
            skip = False
            continue
        if _REDIRECT.match(word):
            skip = True
            continue
        out.append(word)
    return out


def _exports(words: list[str]) -> list[str]:
    """The `export NAME=VALUE …` runs of a command, as words: what a later command in the same
    shell inherits (a bare `NAME=VALUE` stays the shell's own)."""
    out: list[str] = []
    exporting = False
    for word in words:
        if word == "export":
            exporting = True
            out.append(word)
        elif exporting and _ENV.match(word):
            out.append(word)
        else:
            exporting = False
    return out


def _evaluated(option: str, value: str) -> None:
    """A value kvplan would plan with may not need a shell to evaluate."""
    m = _SHELL.search(value)
    if m is not None:
        raise InvalidInput(
            FIELD,
            f"{option} `{value[:60]}` needs a shell to evaluate (`{m.group(0)}`); kvplan does not: "
            "paste the value",
        )


def _start(words: list[str]) -> tuple[str, dict[str, str], list[str]]:
    """The form of the command, the environment set for it (assignments before it, `export`,
    `env`, docker's `-e`: an image sees only its `-e`s, not the host's), and its arguments."""
    env: dict[str, str] = {}
    container: dict[str, str] = {}  # docker's -e NAME=VALUE
    leading = True
    exporting = False  # after `export`: its NAME=VALUE words, wherever it stands (a script's lines)
    for i, word in enumerate(words):
        # `vllm`, or a path to it (/opt/venv/bin/vllm: production-stack's LMCache image)
        if word.rpartition("/")[2] == "vllm" and i + 1 < len(words) and words[i + 1] == "serve":
            return "vllm serve", env | container, words[i + 2 :]
        if word == "-m" and i + 1 < len(words) and words[i + 1] in _MODULES:
            return "api_server", env | container, words[i + 2 :]
        if _IMAGE.match(word):
            return "image", container, words[i + 1 :]
        given = words[i - 1] in ("-e", "--env") if i else False
        exporting = word == "export" or (exporting and _ENV.match(word) is not None)
        if (leading or given or exporting) and _ENV.match(word):
            name, _, value = word.partition("=")
            (container if given else env)[name] = value
        elif word not in ("export", "env", "-e", "--env"):
            leading = False
    first = " ".join(words[:3])[:80]
    raise InvalidInput(
        FIELD,
        f"`{first}` is not a `vllm serve` command: send `vllm serve MODEL --flag …`, "
        f"`python -m {_MODULE} --model MODEL …`, or the `non-default args: {{…}}` line vLLM printed",
    )


# Flags older vLLM took and 0.33 does not, with what took their place: a "did you mean" by spelling
# would name an unrelated flag (--rope-scaling is not --return-sampling-mask). From real commands
# people posted (tests/engine/data/commands) and vLLM's release notes.
REMOVED: dict[str, str] = {
    "--swap-space": "the V1 engine keeps no CPU swap; drop it (CPU KV offload is --kv-offloading-size)",
    "--lora-extra-vocab-size": "LoRA adapters add no vocabulary in vLLM 0.33; drop it",
    "--speculative-model": (
        'speculative decoding is --speculative-config \'{"model": …, "num_speculative_tokens": …}\''
    ),
    "--num-speculative-tokens": "it is a key of --speculative-config now",
    "--speculative-draft-tensor-parallel-size": "it is a key of --speculative-config now",
    "--use-v2-block-manager": "the V1 engine has one block manager; drop it",
    "--enable-reasoning": "reasoning needs only --reasoning-parser; drop it",
    "--rope-scaling": "pass it as --hf-overrides '{\"rope_scaling\": …}'",
    "--rope-theta": "pass it as --hf-overrides '{\"rope_theta\": …}'",
    "--tokenizer-pool-size": "the V1 engine tokenizes in its front end; drop it",
    "--tokenizer-pool-type": "the V1 engine tokenizes in its front end; drop it",
    "--preemption-mode": "the V1 engine always preempts by recomputing; drop it",
    "--max-seq-len-to-capture": "CUDA graphs are captured by --compilation-config's cudagraph_capture_sizes",
    "--calculate-kv-scales": "fp8 KV scales come from the checkpoint (or 1.0); drop it",
    "--num-lookahead-slots": "speculative decoding sets its own lookahead; drop it",
    "--multi-step-stream-outputs": "the V1 engine has no multi-step scheduling; drop it",
    "--num-scheduler-steps": "the V1 engine has no multi-step scheduling; drop it",
}


def _unique_prefixes() -> dict[str, str]:
    """Every prefix of a long option string that argparse would take for one option only, and that
    option: a lookup a word, not a scan of the table (a command may hold thousands of words)."""
    seen: dict[str, set[str]] = {}
    for spelled, option in OPTIONS.items():
        if spelled.startswith("--"):
            for end in range(5, len(spelled)):
                seen.setdefault(spelled[:end], set()).add(option)
    return {prefix: next(iter(options)) for prefix, options in seen.items() if len(options) == 1}


_PREFIXES = _unique_prefixes()


def _option(given: str) -> tuple[str, Flag]:
    """The canonical option a flag names (as vLLM's FlexibleArgumentParser reads it, an
    unambiguous prefix of a long option too, as argparse takes one), and its row."""
    option = canonical(given)
    if option is not None:
        return option, FLAGS[option]
    name = given.split("=", 1)[0]
    gone = REMOVED.get(name.replace("_", "-"))
    if gone is not None:
        raise InvalidInput(FIELD, f"{name} is gone from vLLM 0.33's `vllm serve`: {gone}")
    if name.startswith("--") and len(name) > 4 and "." not in name:
        option = _PREFIXES.get(name.replace("_", "-"))
        if option is not None:
            return option, FLAGS[option]
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
    if flag.choices and all(c.isdigit() for c in flag.choices):
        return int(raw)  # an integer choice (--max-lora-rank): vLLM's type is int
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
                _evaluated("the model", word)
                model = word
                continue
            takes_none = read and not _takes(FLAGS[read[-1].option])
            after = f" (after {read[-1].option}, which takes no value)" if takes_none else ""
            raise InvalidInput(
                FIELD, f"`{word[:60]}` stands where a flag should{after}: quote a value with spaces"
            )
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
        read.append(_value(word, name, option, flag, raw, shell=form != "config"))
    for f in read:
        if f.option == "--model" and isinstance(f.value, str):
            model = f.value
    return model, _merged(read)


def _value(
    word: str, name: str, option: str, flag: Flag, raw: str | list[str] | None, shell: bool = True
) -> ReadFlag:
    """One flag's value as vLLM holds it after this word. A value that needs a shell is refused
    where it would change the plan; kept as text where the flag changes no memory. A --config
    file's values (shell False) are YAML's: nothing in them is expanded."""
    if flag.effect != "none" and shell:
        for text in [raw] if isinstance(raw, str) else raw or []:
            _evaluated(option, text)
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
    if flag.kind == "list" and raw is not None:  # --served-model-name=a: one value of a list
        return _flag(word, option, flag, [raw])
    if raw is None:
        return _flag(word, option, flag, not sets_false(name))
    if flag.kind == "switch":
        raise InvalidInput(FIELD, f"{option} takes no value, got {raw[:60]!r}: write {option} alone")
    value = _convert(option, flag, raw)
    if option == "--max-model-len" and value == -1:
        note = "vLLM takes the longest length that fits; kvplan plans the model's own maximum"
        return ReadFlag(given=word[:200], option=option, value="auto", effect="memory", note=note)
    return _flag(word, option, flag, [value] if flag.kind == "append" else value)


def _flag(given: str, option: str, flag: Flag, value: Value) -> ReadFlag:
    """A flag read; one that sets what vLLM's default is already changes nothing."""
    if flag.effect == "memory" and flag.default is not None and str(value) == str(flag.default):
        return ReadFlag(given=given[:200], option=option, value=value, effect="none", note="vLLM's default")
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
        try:
            _, given = _read_args(_config_words(config), "config")
        except InvalidInput as e:
            raise InvalidInput("config", e.reason) from None
        read = [msgspec.structs.replace(f, given=f"config: {f.given}"[:200]) for f in given] + read
    settings = _env_settings(env) | _settings(read)  # an explicit flag wins, as vLLM checks it first
    _check_lora(read, settings)
    labels = {k: settings.pop(k) for k in LABELS if k in settings}
    named = settings.pop("model", None)  # the model is its own: a --model flag's, or a --config's
    if model is None and isinstance(named, str):  # vllm/utils/argparse_utils.py: the CLI's first
        model = named
    shown = {k: "(redacted)" if _SECRET.search(k) else v for k, v in env.items()}
    read = [_quant_config_read(f) if f.option == _QUANT_CONFIG else f for f in read]
    return Command(form=form, model=model, env=shown, flags=tuple(read), settings=settings, labels=labels)


def _quant_config_read(f: ReadFlag) -> ReadFlag:
    """A --quantization-config that only asks for MXFP8 activations is a setting the plan takes,
    not one it leaves out (its other keys stay unmodelled)."""
    v = f.value
    settled = (
        isinstance(v, dict) and len(v) == 1 and not (isinstance(moe := v.get("moe"), dict) and len(moe) > 1)
    )
    if not (settled and _quant_config_settings(v)):
        return f
    note = "moe.activation mxfp8: MXFP8 activations for the MXFP4 experts"
    return msgspec.structs.replace(f, effect="plan", field="flashinfer_moe_mxfp4_mxfp8", note=note)


def _int(option: str, value: Any) -> int:
    """An integer as vLLM's config takes it (a JSON number, or its text)."""
    try:
        if isinstance(value, bool) or (isinstance(value, float) and not value.is_integer()):
            raise ValueError(value)
        return int(value)
    except (TypeError, ValueError):
        raise InvalidInput(FIELD, f"{option} {str(value)[:60]!r} is not an integer") from None


def _sizes(option: str, value: Any) -> list[int]:
    """A list of capture sizes (--cudagraph-capture-sizes 1 2 4, or a JSON list)."""
    items = value if isinstance(value, list) else [value]
    return [_int(option, v) for v in items]


# vllm/config/compilation.py: CompilationMode (0-3 or its name) and CUDAGraphMode (its name, or
# the value of NONE / PIECEWISE / FULL), each parsed case-blind by their field validators.
_COMPILATION_MODES = ("none", "stock_torch_compile", "dynamo_trace_once", "vllm_compile")
_CUDAGRAPH_MODES = ("none", "piecewise", "full", "full_decode_only", "full_and_piecewise")


def _named(option: str, key: str, value: Any, names: tuple[str, ...], by_number: int) -> str:
    if isinstance(value, int) and not isinstance(value, bool) and 0 <= value < by_number:
        return names[value]
    if isinstance(value, str) and value.lower() in names:
        return value.lower()
    raise InvalidInput(
        FIELD, f"{option} {key} {str(value)[:60]!r} is not one vLLM takes; valid: {', '.join(names)}"
    )


def _compilation(value: Value) -> dict[str, Any]:
    """The fields --compilation-config sets: its CUDA-graph mode, compilation mode and capture
    sizes (vllm/config/compilation.py CompilationConfig); its other keys change no memory kvplan
    models. A JSON that is not an object is refused as vLLM's parser refuses it."""
    option = "--compilation-config"
    if not isinstance(value, dict):
        raise InvalidInput(FIELD, f"{option} must be a JSON object")
    out: dict[str, Any] = {}
    if value.get("cudagraph_mode") is not None:
        out["cudagraph_mode"] = _named(option, "cudagraph_mode", value["cudagraph_mode"], _CUDAGRAPH_MODES, 3)
    if value.get("mode") is not None:
        out["compilation_mode"] = _named(option, "mode", value["mode"], _COMPILATION_MODES, 4)
    if value.get("cudagraph_capture_sizes") is not None:
        out["cudagraph_capture_sizes"] = _sizes(option, value["cudagraph_capture_sizes"])
    if value.get("max_cudagraph_capture_size") is not None:
        out["max_cudagraph_capture_size"] = _int(option, value["max_cudagraph_capture_size"])
    return out


def _gib_bytes(option: str, value: Value, to_int: Callable[[float], int]) -> Any:
    """A GiB figure as bytes, as vLLM scales it (round or int); a figure past any memory is a 400,
    not an overflow. Anything but a number is left for the field to refuse."""
    if not isinstance(value, (int, float)) or isinstance(value, bool):
        return value
    scaled = float(value) * (1 << 30)
    if not math.isfinite(scaled) or abs(scaled) > 1 << 62:
        raise InvalidInput(FIELD, f"{option} {value!r} GiB is past any GPU's or host's memory")
    return to_int(scaled)


# How a flag's value becomes the plan's field, where the two differ in unit or sense.
_TO_FIELD: dict[str, Callable[[Value], Any]] = {
    "--disable-hybrid-kv-cache-manager": lambda v: not v,
    "--kv-offloading-size": lambda v: _gib_bytes("--kv-offloading-size", v, round),
    "--limit-mm-per-prompt": lambda v: _zero_limits(v),
    # vllm/model_executor/offloader/base.py create_offloader: int(cpu_offload_gb * 1024**3).
    "--cpu-offload-gb": lambda v: _gib_bytes("--cpu-offload-gb", v, int),
    "--cudagraph-capture-sizes": lambda v: _sizes("--cudagraph-capture-sizes", v),
    "--optimization-level": lambda v: _int("--optimization-level", v),
}
# Flags that set several fields at once.
_TO_FIELDS: dict[str, Callable[[Value], dict[str, Any]]] = {"--compilation-config": _compilation}
# vllm/engine/arg_utils.py create_engine_config: a flag and the same key of --compilation-config
# are mutually exclusive (vLLM raises ValueError).
_EXCLUSIVE = {"--cudagraph-capture-sizes": "cudagraph_capture_sizes",
              "--max-cudagraph-capture-size": "max_cudagraph_capture_size"}  # fmt: skip


def _zero_limits(limits: Value) -> Any:
    """The modalities --limit-mm-per-prompt sets to 0, as a count or {"count": 0, …} (vLLM's two
    forms, vllm/config/multimodal.py); anything but an object is left for the field to refuse."""
    if not isinstance(limits, dict):
        return limits
    count = {k: v.get("count") if isinstance(v, dict) else v for k, v in limits.items()}
    return tuple(k for k, n in count.items() if n == 0 and k in ("image", "video", "audio"))


# The environment variables that set a plan's field, and the value a true one sets (vllm/envs.py
# reads each as an integer). Both are earlier vLLMs' switches: 0.33 spells them
# --quantization-config moe.activation mxfp8 and --moe-backend marlin.
ENV_SETTINGS: dict[str, tuple[str, object]] = {
    "VLLM_USE_FLASHINFER_MOE_MXFP4_MXFP8": ("flashinfer_moe_mxfp4_mxfp8", True),
    "VLLM_MXFP4_USE_MARLIN": ("moe_backend", "marlin"),
}


def _env_settings(env: Mapping[str, str]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name, (field, value) in ENV_SETTINGS.items():
        if name not in env:
            continue
        try:
            on = bool(int(env[name]))  # vllm/envs.py: bool(int(os.getenv(name, "0")))
        except ValueError:
            raise InvalidInput(FIELD, f"{name}={env[name][:40]!r}: vLLM reads it as an integer") from None
        if value is True:
            out[field] = on
        elif on:
            out[field] = value
    return out


def _config_words(config: Mapping[str, Any]) -> list[str]:
    """A --config file as the words vLLM's FlexibleArgumentParser.load_config_file makes of it
    (vllm/utils/argparse_utils.py): `--key` for true, `--no-key` for false where the flag has that
    form, a list's items after its key, a mapping as JSON, anything else as its text. They stand
    before the command line's own flags, which override them (_pull_args_from_config)."""
    words: list[str] = []
    for key, value in config.items():
        flag = "--" + str(key)
        if isinstance(value, bool):
            if value:
                words.append(flag)
            elif negative("--no-" + str(key)):  # spelled as the key is: `enforce_eager: false` is no flag
                words.append("--no-" + str(key))
        elif isinstance(value, list):
            words += [flag, *(str(v) for v in value)] if value else []
        elif isinstance(value, dict):
            words += [flag, json.dumps(value)]
        else:
            words += [flag, str(value)]
    return words


def _check_lora(read: list[ReadFlag], settings: Mapping[str, Any]) -> None:
    """vLLM's LoRAConfig check (vllm/config/lora.py _validate_lora_config), made only with LoRA
    enabled: the CPU cache holds at least the GPU slots."""
    cpu = next((f.value for f in reversed(read) if f.option == "--max-cpu-loras"), None)
    gpu = settings.get("max_loras", 1)
    if settings.get("enable_lora") and isinstance(cpu, int) and isinstance(gpu, int) and cpu < gpu:
        raise InvalidInput(
            FIELD,
            f"--max-cpu-loras ({cpu}) must be at least --max-loras ({gpu}): "
            "vLLM refuses (vllm/config/lora.py)",
        )


_SPECULATIVE = "--speculative-config"
_QUANT_CONFIG = "--quantization-config"
# The quantization names --quantization-config's specs take (vllm/config/quantization.py).
QUANT_KEY_NAMES = (
    "fp8_per_tensor_static", "fp8_per_tensor_dynamic", "fp8_per_token", "fp8_per_channel_static",
    "fp8_per_block_static", "fp8_per_block_dynamic", "mxfp8", "mxfp4", "nvfp4_per_token",
    "int8_per_channel_static", "int8_per_group_32", "int4_per_group_32",
)  # fmt: skip


def _moe_activation(value: object) -> object:
    """--quantization-config's moe.activation, nested or dotted (--quantization-config.moe.activation
    arrives as the key "moe.activation", vllm/utils/argparse_utils.py); None when not given."""
    if not isinstance(value, dict):
        return None
    moe = value.get("moe")
    return moe.get("activation") if isinstance(moe, dict) else value.get("moe.activation")


def _quant_config_settings(value: object) -> dict[str, Any]:
    """What of --quantization-config a plan expresses: MXFP8 activations for the experts, its
    `moe.activation` (vllm/config/quantization.py QuantizationConfigArgs; vLLM 0.33's spelling of
    VLLM_USE_FLASHINFER_MOE_MXFP4_MXFP8). The rest stays a flag whose memory kvplan does not model."""
    said = _moe_activation(value)
    if said is not None and said not in QUANT_KEY_NAMES:
        raise InvalidInput(
            FIELD,
            f"--quantization-config moe.activation {str(said)[:40]!r} is not a name vLLM knows, and it "
            f"refuses it (vllm/config/quantization.py QUANT_KEY_NAMES: {', '.join(QUANT_KEY_NAMES)})",
        )
    return {"flashinfer_moe_mxfp4_mxfp8": True} if said == "mxfp8" else {}


def _settings(read: list[ReadFlag]) -> dict[str, Any]:
    """The plan's fields the flags set; the last of a repeated flag wins, as in argparse.
    --speculative-config and its shorthands together give the speculative_* fields, as vLLM's
    create_speculative_config merges them (core/model/speculative.py read_config)."""
    out: dict[str, Any] = {}
    from_config: set[str] = set()
    spec: dict[str, Any] | None = None
    shorthands: dict[str, Any] = {}
    for f in read:
        if f.option == _QUANT_CONFIG:
            out |= _quant_config_settings(f.value)
        elif f.option == _SPECULATIVE:
            spec = f.value if isinstance(f.value, dict) else {"": f.value}
        elif f.option in SHORTHANDS:
            shorthands[f.option] = f.value
        elif f.effect == "plan" and f.field is not None:
            many = _TO_FIELDS.get(f.option)
            if many is not None:
                fields = many(f.value)
                from_config |= set(fields)
                out.update(fields)
                continue
            convert = _TO_FIELD.get(f.option)
            out[f.field] = f.value if convert is None else convert(f.value)
    if "cpu_offload_bytes" in out and _prefetch_offload(read):
        del out["cpu_offload_bytes"]  # the prefetch offloader ignores --cpu-offload-gb
    for option, key in _EXCLUSIVE.items():
        if key in from_config and any(f.option == option for f in read):
            raise InvalidInput(
                FIELD, f"{option} and --compilation-config's {key} are mutually exclusive (vLLM raises)"
            )
    if spec is not None or shorthands:
        if spec is not None and "" in spec:
            raise InvalidInput(FIELD, f"{_SPECULATIVE} must be a JSON object")
        out |= read_speculative_config(spec, shorthands, out.get("tensor_parallel_size", 1))
    return out


def _prefetch_offload(read: list[ReadFlag]) -> bool:
    """Whether vLLM picks its prefetch offloader, which ignores --cpu-offload-gb: named by
    --offload-backend, or "auto" with --offload-group-size > 0 (vllm/model_executor/offloader/base.py
    create_offloader)."""
    last = {f.option: f.value for f in read}
    backend = last.get("--offload-backend", "auto")
    group = last.get("--offload-group-size", 0)
    return backend == "prefetch" or (backend == "auto" and isinstance(group, int) and group > 0)
