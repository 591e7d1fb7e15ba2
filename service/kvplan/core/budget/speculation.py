"""Speculative decoding in the budget (docs/vllm-rules.md §11): the scenario's settings resolved
once into a Speculation (core/model/speculative.py), the geometry given the draft's KV layers, and
the drafter's weights, which vLLM's "Model loading took" counts with the target's."""

from __future__ import annotations

from msgspec.structs import replace

from ..engine.dtypes import weight_bytes
from ..model.speculative import draft_params, resolve, with_draft_layers
from .types import BudgetInput


def with_speculation(inp: BudgetInput) -> BudgetInput:
    """inp with its speculative decoding resolved and the draft's KV layers in its geometry; inp
    itself when it plans none or was resolved already (so calling it twice changes nothing)."""
    if inp.speculation is not None or (
        inp.speculative_method is None
        and inp.speculative_model is None
        and inp.draft is None
        and inp.num_speculative_tokens is None
    ):
        return inp
    spec = resolve(
        inp.geometry,
        inp.speculative_method,
        inp.speculative_model,
        inp.num_speculative_tokens,
        inp.draft,
    )
    if spec is None:
        return inp
    return replace(inp, geometry=with_draft_layers(inp.geometry, spec), speculation=spec)


def draft_weights(inp: BudgetInput, target_bytes: int) -> tuple[int, str]:
    """Bytes of the drafter's weights and how they were found: the MTP layers' parameters at the
    target's bytes a parameter (they load with its quantization); a draft model's checkpoint
    tensors, or its parameters × the target's dtype. (0, "") without a drafter."""
    spec = inp.speculation
    if spec is None or not spec.draft_layers:
        return 0, ""
    g = inp.geometry
    if spec.method == "mtp":
        found = draft_params(g, spec, inp.draft)
        if found is None or not g.params_total:
            return 0, "unknown (the MTP layers' sizes are not in the config)"
        params = found[0]
        return target_bytes * params // g.params_total, f"{params:,} MTP params at the target's bytes a param"
    d = inp.draft
    assert d is not None
    if d.loaded_weights is not None:
        return d.loaded_weights.total_bytes, f"the draft checkpoint's tensors ({d.loaded_weights.source})"
    if d.params_total is None:
        return 0, "unknown (the draft's parameter count is not known)"
    # vLLM loads the draft in the target's dtype (SpeculativeConfig: dtype=target_model_config.dtype).
    dt = g.weight_dtype or g.dtype
    return weight_bytes(d.params_total, dt), f"{d.params_total:,} draft params × {dt} (the target's dtype)"
