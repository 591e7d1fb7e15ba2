"""The simulator's inputs from its wire request (moving to kvplan.services with the workload split)."""

from __future__ import annotations

from kvplan.core.budget import compute_budget, settings_for
from kvplan.core.errors import InvalidInput
from kvplan.core.profiles import get_profile
from kvplan.core.simulate import Generator, SimConfig, SimRequest
from kvplan.presets import Registry
from kvplan.services.scenarios import budget_input, resolve_model

from .schemas import BudgetRequest, SimulateRequest


def simulation_input(
    registry: Registry, req: SimulateRequest
) -> tuple[SimConfig, list[SimRequest] | None, Generator | None, str, str]:
    """The simulator's pool and workload; also the pool's source and the engine profile."""
    profile = get_profile(req.engine)
    shared = {
        f: getattr(req, f) for f in BudgetRequest.__struct_fields__ if f in SimulateRequest.__struct_fields__
    }
    if req.num_blocks is not None:
        # A pool given by its size: the same defaults budget would use for this model and GPU.
        geometry = None if req.model is None else resolve_model(registry, req.model).geometry
        memory, gpu_name = req.gpu_memory_bytes, ""
        if req.gpu is not None:
            gpu = registry.gpu(req.gpu)
            memory, gpu_name = memory or gpu.memory_bytes, gpu.name
        settings = settings_for(
            geometry,
            profile,
            gpu_memory_bytes=memory,
            gpu_name=gpu_name,
            block_size=req.block_size,
            max_num_batched_tokens=req.max_num_batched_tokens,
            max_num_seqs=req.max_num_seqs,
        )
        cfg_blocks, block_size, source = req.num_blocks, settings.block_size, "given"
        max_num_seqs, max_num_batched_tokens = settings.max_num_seqs, settings.max_num_batched_tokens
    else:
        if req.model is None:
            raise InvalidInput("model", "required unless num_blocks is given")
        inp, _, _ = budget_input(registry, BudgetRequest(**shared))
        b = compute_budget(inp)
        if len(b.groups) != 1 or b.groups[0].groups != 1:
            raise InvalidInput(
                "model",
                "the simulator models one KV-cache group; for a hybrid model give num_blocks and block_size",
            )
        cfg_blocks, block_size = b.num_blocks, b.block_size
        max_num_seqs, max_num_batched_tokens = b.max_num_seqs, b.max_num_batched_tokens
        source = f"budget: {b.num_blocks:,} blocks of {b.block_size} tokens"
        if cfg_blocks < 2:
            raise InvalidInput("model", "the budget leaves no blocks: nothing to simulate")
    cfg = SimConfig(
        num_blocks=cfg_blocks,
        block_size=block_size,
        max_num_seqs=max_num_seqs,
        max_num_batched_tokens=max_num_batched_tokens,
        policy=req.scheduling_policy,
        prefix_caching=req.enable_prefix_caching,
    )
    engine = profile.id
    w = req.workload  # the core's own workload types: decoding validated them, plan() checks the rest
    return cfg, w.requests, w.generator, source, engine
