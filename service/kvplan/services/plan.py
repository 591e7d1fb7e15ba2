"""POST /v1/plan and `kvplan plan`: a command line read (core/engine/command.py) into the
/v1/budget question it asks, with the fields given beside it winning, and answered as budget does."""

from __future__ import annotations

import re
import shlex
import textwrap
from collections.abc import Callable, Collection
from typing import Any

import msgspec
import yaml

from kvplan.core import warnings as w
from kvplan.core.budget import Budget
from kvplan.core.engine.command import Command, read_command
from kvplan.core.errors import InvalidInput
from kvplan.core.limits import MAX_YAML_CHARS, MAX_YAML_NESTING, MAX_YAML_NODES
from kvplan.presets import Registry
from kvplan.schemas import BudgetRequest
from kvplan.schemas.plan import PlanRequest

from .answers import budget_answer

_BUDGET_FIELDS = BudgetRequest.__struct_fields__


class _TooLarge(yaml.composer.ComposerError):
    pass


class _BoundedAliases(yaml.SafeLoader):
    """YAML whose aliases expand to at most MAX_YAML_NODES nodes and MAX_YAML_CHARS characters of
    scalars. `*name` repeats a node without its text, so a few hundred bytes can stand for billions
    of items (the "billion laughs"), which reading the command or echoing the config would walk;
    compose files and Helm values use a few (`<<: *base`)."""

    def __init__(self, stream: str) -> None:
        super().__init__(stream)
        self._expanded: dict[int, tuple[int, int]] = {}  # id(node) → (nodes, chars) written out
        self._nodes = self._chars = 0

    def compose_node(self, parent: Any, index: Any) -> Any:
        if self.check_event(yaml.AliasEvent):
            mark = self.peek_event().start_mark
            node = super().compose_node(parent, index)
            self._count(*self._expanded.get(id(node), (1, 0)), mark)
            return node
        nodes, chars = self._nodes, self._chars
        node = super().compose_node(parent, index)
        scalar = len(node.value) if isinstance(node, yaml.ScalarNode) else 0
        self._count(1, scalar, node.start_mark)
        self._expanded[id(node)] = (self._nodes - nodes, self._chars - chars)
        return node

    def _count(self, nodes: int, chars: int, mark: Any) -> None:
        self._nodes += nodes
        self._chars += chars
        if self._nodes > MAX_YAML_NODES or self._chars > MAX_YAML_CHARS:
            said = (
                f"aliases (*name) expand it past {MAX_YAML_NODES:,} nodes or {MAX_YAML_CHARS:,} "
                "characters: write it out smaller"
            )
            raise _TooLarge(None, None, said, mark)


def _yaml(text: str, field: str) -> Any:
    """YAML of bounded size once its aliases are written out, its brackets nested at most
    MAX_YAML_NESTING deep (PyYAML recurses on each level: 2,000 cost 0.6 s, then a RecursionError)."""
    depth = deepest = 0
    for c in text:
        if c in "[{":
            depth += 1
            deepest = max(deepest, depth)
        elif c in "]}":
            depth -= 1
    if deepest > MAX_YAML_NESTING:
        raise InvalidInput(field, f"brackets nested {deepest} deep: a command or a config nests a few")
    return yaml.load(text, Loader=_BoundedAliases)


def _config(raw: str | dict[str, Any] | None) -> dict[str, Any] | None:
    """A --config file's content: YAML text, or its keys as JSON."""
    if raw is None or isinstance(raw, dict):
        return raw
    try:
        doc = _yaml(raw, "config")
    except _TooLarge as e:
        raise InvalidInput("config", str(e.problem)) from None
    except yaml.YAMLError as e:
        raise InvalidInput("config", f"not YAML: {str(e).splitlines()[0][:120]}") from None
    if not isinstance(doc, dict):
        raise InvalidInput("config", "must be a mapping of vLLM's options to values")
    return doc


def _from_yaml(text: str) -> str:
    """A command pasted as a Kubernetes container's `command:`/`args:` (or a YAML or JSON list of
    them) as the command line it runs; any other text as it is. vLLM's image runs `vllm serve`."""
    if not _YAMLISH.search(text) and not text.lstrip().startswith("["):
        return text
    try:
        doc = _yaml(textwrap.dedent(text), "command")
    except _TooLarge as e:
        raise InvalidInput("command", str(e.problem)) from None
    except yaml.YAMLError:
        return text
    words, env = _container_words(doc)
    if not words or not all(isinstance(w, (str, int, float)) for w in words):
        return text
    line = shlex.join(str(w) for w in words)
    first = str(words[0]).rpartition("/")[2]  # /opt/venv/bin/vllm is vllm
    if not (first in ("vllm", "python", "python3") or first.startswith("python3")):
        line = "vllm serve " + line
    # the container's `env:` entries with a value of their own (not valueFrom), as assignments
    # before the command: what vLLM's process sees (VLLM_USE_FLASHINFER_MOE_MXFP4_MXFP8, …)
    return " ".join([*(shlex.quote(f"{k}={v}") for k, v in env), line])


_YAMLISH = re.compile(r"^\s*(?:args|command):\s*(?:\[.*)?$|^\s*- \S", re.M)


def _container_words(doc: Any, depth: int = 0) -> tuple[list[Any], list[tuple[str, str]]]:
    """The words a container runs and its environment: a list of words, or the first mapping
    (however deep in a manifest) with `command` or `args` lists, command first, and its `env`
    entries that give a value (name, value)."""
    if isinstance(doc, list) and all(isinstance(w, (str, int, float)) for w in doc):
        return list(doc), []
    if depth > 12:
        return [], []
    if isinstance(doc, dict):
        if isinstance(doc.get("args"), list) or isinstance(doc.get("command"), list):
            words: list[Any] = []
            for key in ("command", "args"):
                part = doc.get(key) or []
                words += part if isinstance(part, list) else [part]
            entries = doc.get("env") if isinstance(doc.get("env"), list) else []
            env = [
                (e["name"], str(e["value"]))
                for e in entries
                if isinstance(e, dict) and isinstance(e.get("name"), str) and _ENV_NAME.fullmatch(e["name"])
                and isinstance(e.get("value"), (str, int, float)) and not isinstance(e.get("value"), bool)
            ]  # fmt: skip
            return words, env
        children = list(doc.values())
    elif isinstance(doc, list):
        children = doc
    else:
        return [], []
    for child in children:
        found = _container_words(child, depth + 1)
        if found[0]:
            return found
    return [], []


_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def budget_question(req: PlanRequest, given: Collection[str]) -> tuple[BudgetRequest, Command]:
    """The /v1/budget question the command asks: its settings, then every field the request gave
    beside it (those win), as one BudgetRequest decoded strictly (bounds and all)."""
    command = read_command(_from_yaml(req.command), _config(req.config))
    asked: dict[str, Any] = dict(command.settings)
    if command.model is not None:
        revision = command.labels.get("revision")
        at = f"@{revision}" if isinstance(revision, str) and "@" not in command.model else ""
        asked["model"] = command.model + (at if "/" in command.model else "")
    for name in _BUDGET_FIELDS:
        if name in given:
            asked[name] = msgspec.to_builtins(getattr(req, name))
    if "model" not in asked:
        raise InvalidInput(
            "model", "the command names no model: give it (`vllm serve MODEL`) or send `model`"
        )
    if isinstance(asked["model"], str) and asked["model"].startswith(("/", "./", "~")):
        raise InvalidInput(
            "model",
            f"{asked['model'][:120]!r} is a local path: send `model` (a preset, or the Hub id it came from)",
        )
    try:
        return msgspec.convert(asked, BudgetRequest), command
    except msgspec.ValidationError as e:
        raise InvalidInput(FROM_COMMAND, f"{e}: as the command gives it") from None


FROM_COMMAND = "command"


def plan_budget(
    registry: Registry,
    question: BudgetRequest,
    command: Command,
    explain: bool,
    observe: Callable[[float], None] | None = None,
    should_stop: Callable[[], bool] | None = None,
) -> tuple[Budget, dict[str, Any], Command]:
    """The budget the command's question plans, its labels, and the command as read for this
    model (a Mamba flag does nothing to a model without Mamba layers). Flags that change memory in
    a way kvplan does not model are named in a warning: the plan holds without them."""
    question, command = _auto_fit(registry, question, command)
    b, labels = budget_answer(registry, question, explain, observe, should_stop=should_stop)
    if not any(g.kind in _STATE_KINDS for g in b.groups):
        flags = tuple(
            msgspec.structs.replace(f, effect="none", note="no Mamba layers in this model: no effect")
            if f.option in _MAMBA_ONLY and f.effect in ("memory", "plan")
            else f
            for f in command.flags
        )
        command = msgspec.structs.replace(command, flags=flags)
    ignored = [f.option for f in command.flags if f.effect == "memory"]
    if ignored:
        said = w.Warning(
            w.FLAGS_NOT_MODELLED,
            f"{', '.join(dict.fromkeys(ignored))} change what vLLM allocates in ways kvplan does not model "
            "yet: the plan is the engine's without them (each flag is listed with what it changes).",
        )
        b = msgspec.structs.replace(b, warnings=(*b.warnings, said))
    return b, labels, command


def _auto_fit(registry: Registry, question: BudgetRequest, command: Command) -> tuple[BudgetRequest, Command]:
    """`--max-model-len auto` (or -1), unless max_model_len is given beside the command: the
    longest length up to the model's own whose blocks fit the KV memory, as vLLM fits it after
    profiling (vllm/v1/core/kv_cache_planning.py _auto_fit_max_model_len: a binary search against the
    memory less the null block, which kvplan's max_context_tokens is)."""
    auto = next((f for f in command.flags if f.option == "--max-model-len" and f.value == "auto"), None)
    if auto is None or question.max_model_len is not None:
        return question, command
    full, _ = budget_answer(registry, question, False)
    if full.max_context_tokens <= 0:
        raise InvalidInput(
            "command",
            "--max-model-len auto: not enough GPU memory to serve even a single token (vLLM refuses to "
            "start: Cannot auto-fit max_model_len); raise gpu_memory_utilization or use more GPUs",
        )
    fitted = msgspec.structs.replace(
        auto,
        value=full.max_context_tokens,
        effect="plan",
        field="max_model_len",
        note=f"auto-fit: the longest length that fits, of the model's {full.max_model_len:,}"
        " (vllm/v1/core/kv_cache_planning.py _auto_fit_max_model_len)",
    )
    flags = tuple(fitted if f is auto else f for f in command.flags)
    settings = {**command.settings, "max_model_len": full.max_context_tokens}
    return (
        msgspec.structs.replace(question, max_model_len=full.max_context_tokens),
        msgspec.structs.replace(command, flags=flags, settings=settings),
    )


# Flags that act on Mamba (and hybrid) models' state only (core/engine/flags_table.py's reasons).
_MAMBA_ONLY = frozenset(
    {"--enable-prefix-caching", "--mamba-cache-dtype", "--mamba-ssm-cache-dtype", "--mamba-block-size",
     "--enable-mamba-shared-prefix-checkpoint", "--replayssm-buffer-len", "--use-replayssm"}
)  # fmt: skip
_STATE_KINDS = frozenset({"mamba", "mamba_replicated"})
