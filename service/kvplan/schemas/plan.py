"""POST /v1/plan: a `vllm serve` command (or vLLM's `non-default args` line) and what it does not
say (the GPU, the engine version); any /v1/budget field beside it overrides what it says."""

from __future__ import annotations

from typing import Annotated, Any

from msgspec import Meta

from kvplan.core.budget.types import ENGINE_SETTINGS
from kvplan.core.limits import MAX_COMMAND_CHARS
from kvplan.core.validate import Input

from .common import _AT, takes


@takes(
    "command config model? gpu",
    *ENGINE_SETTINGS[:_AT],
    "quantization",
    *ENGINE_SETTINGS[_AT:],
    "engine",
    "speculative_hf_config",
    kw_only=True,
)
class PlanRequest(Input, kw_only=True):
    """A plan from the command line people already have."""

    command: Annotated[
        str,
        Meta(
            min_length=1,
            max_length=MAX_COMMAND_CHARS,
            description="`vllm serve MODEL --flag …`, `python -m vllm.entrypoints.openai.api_server …`, "
            "or the `non-default args: {…}` line vLLM printed",
            examples=[
                "vllm serve Qwen/Qwen3-8B --tensor-parallel-size 2 --max-model-len 32k --kv-cache-dtype fp8"
            ],
        ),
    ]
    config: (
        Annotated[
            str | dict[str, Any],
            Meta(description="the content of the file `--config` names (YAML text, or its keys as JSON)"),
        ]
        | None
    ) = None
