"""docs/vllm-flags.md: every option of vLLM 0.33's `vllm serve`, as kvplan reads it (core/engine
flags.py): the ones it plans with, the ones that change memory in ways it does not model yet (and
where vLLM does that), and the ones that change no memory. `python -m tests.engine.document`
writes it; tests/engine/test_flags_doc.py fails when it is stale."""

from __future__ import annotations

import sys
from pathlib import Path

from kvplan.core.engine.flags import FLAGS

DOC = Path(__file__).parents[2] / "docs" / "vllm-flags.md"

HEAD = """# The flags of `vllm serve`, as kvplan reads them

`POST /v1/plan` and `kvplan plan` read a `vllm serve` command (or the `non-default args: {…}` line
vLLM prints) as vLLM 0.33.0's argument parser does (`vllm/engine/arg_utils.py`
`EngineArgs.add_cli_args`, `vllm/entrypoints/common/cli_args.py`): aliases (`-tp`), the `--no-x` and
`--disable-x` forms of a switch, underscores for dashes, `--x.key value` for one key of a JSON flag,
`-O3`, sizes as `human_readable_int` reads them (`32k` = 32,000, `32K` = 32,768), JSON values, and a
`--config` file's content. Nothing is executed: `$(…)`, backticks and `${…}` are refused. An option
vLLM 0.33 does not have is a 400 naming the nearest one.

Each option has one of three effects. **planned**: it sets the plan's input named. **not modelled**:
it changes what vLLM allocates or plans, and kvplan does not model that yet: the answer names it in
a warning (`flags_not_modelled`) and plans the engine without it. **no memory effect**: nothing to
the plan. This file is generated from the table the parser reads (`python -m tests.engine.document`).
"""


def _options(option: str) -> str:
    aliases = [a for a in FLAGS[option].aliases if not a.startswith(("--no-", "--disable-", "--enable-"))]
    return ", ".join(f"`{o}`" for o in (option, *aliases))


def render() -> str:
    """The document, from FLAGS."""
    out = [HEAD]
    planned = [o for o, f in FLAGS.items() if f.effect == "plan"]
    out += [f"\n## Planned ({len(planned)})\n", "| option | sets | read as |", "|---|---|---|"]
    out += [f"| {_options(o)} | `{FLAGS[o].field}` | {FLAGS[o].kind} |" for o in sorted(planned)]
    memory = [o for o, f in FLAGS.items() if f.effect == "memory"]
    out += [
        f"\n## Not modelled yet ({len(memory)})\n",
        "| option | what it changes, and where |",
        "|---|---|",
    ]
    out += [f"| {_options(o)} | {FLAGS[o].reason.replace('|', '/')} |" for o in sorted(memory)]
    none = sorted(o for o, f in FLAGS.items() if f.effect == "none")
    out += [f"\n## No memory effect ({len(none)})\n", ", ".join(f"`{o}`" for o in none)]
    return "\n".join(out) + "\n"


def main() -> int:
    DOC.write_text(render())
    return 0


if __name__ == "__main__":
    sys.exit(main())
