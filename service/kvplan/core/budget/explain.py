"""The budget's ledger: each step's formula, inputs, value and the vLLM source it mirrors,
built from the finished answer so the arithmetic (compute.py) stays apart from its explanation."""

from __future__ import annotations

from typing import TYPE_CHECKING

from msgspec.structs import replace

from ..engine.cudagraphs import SRC_KEYS as SRC_CG_KEYS
from ..engine.cudagraphs import SRC_MODE as SRC_CG_MODE
from ..engine.cudagraphs import SRC_SIZES as SRC_CG_SIZES
from ..engine.profiles import ConcurrencyRule, InflightRule, KvCacheSizeRule
from ..kv import dsv4
from ..kv.pertoken import per_token_ledger
from ..ledger import LedgerBuilder, Step
from ..model.geometry import KIND_NAMES, MAMBA
from ..model.mamba import SRC_DTYPES, SRC_MODE, mamba_cache_mode
from ..model.served_dtype import with_served_dtype
from ..model.speculative import SRC_LAYERS, SRC_LOAD, SRC_LOOKAHEAD, SRC_MAMBA
from ..model.towers import tower_skipped, without_tower
from ..units import GiB
from .explain_weights import weights_per_gpu_steps
from .kv_cache_utils import (
    SRC_BLOCKS,
    SRC_CONC,
    SRC_FIT,
    SRC_GROUPS,
    SRC_POOL,
    SRC_REPORT,
    SRC_V0_CONC,
    SRC_V0_POOL,
)
from .memory import SRC_AVAILABLE, SRC_REQUESTED, resolve_weights
from .types import Budget, BudgetInput

if TYPE_CHECKING:
    from .capacity import LayoutCapacity

SRC_SLIDING = "vllm/v1/kv_cache_interface.py (SlidingWindowSpec.max_memory_usage_bytes)"
SRC_BATCH_DEFAULTS = "vllm/engine/arg_utils.py (get_batch_defaults)"


SRC_PROFILE_RUN = "vllm/v1/worker/gpu_model_runner.py (profile_run: _dummy_run, _dummy_sampler_run)"
SRC_NON_TORCH = "vllm/v1/worker/gpu_worker.py (determine_available_memory: non-torch increase)"
SRC_GRAPHS = "vllm/v1/worker/gpu_model_runner.py (capture_model)"


def _memory_steps(inp: BudgetInput, b: Budget, cap: LayoutCapacity, led: LedgerBuilder) -> None:
    """What comes off besides the weights: the caller's figures, or the profile's estimate term
    by term, each with the fitted constants it uses."""
    m = b.memory
    if m is None or m.non_kv_source != "estimated":
        led.add(
            "non_kv_bytes",
            "as given (activation peak + non-torch memory)" if m and m.non_kv_source == "given"
            else "0: not estimated (the model's hidden size and vocabulary are unknown)",
            b.non_kv_bytes,
            "B",
            "request",
            cudagraph_bytes=b.cudagraph_bytes,
        )  # fmt: skip
        return
    r, s, settings = inp.profile.memory, inp.geometry.shape, cap.settings
    assert s is not None
    led.add(
        "activation_bytes",
        "floor + sampler_B × max_num_seqs × vocab + moe_B × max_num_batched_tokens × top_k × "
        "moe_intermediate ÷ TP",
        m.activation_bytes,
        "B",
        f"{SRC_PROFILE_RUN}; constants fitted on {r.calibration} (docs/memory-model.md)",
        floor=r.activation_floor_bytes,
        sampler_B=r.sampler_bytes_per_logit,
        max_num_seqs=settings.max_num_seqs,
        vocab=s.vocab_size,
        moe_B=r.moe_bytes_per_token_expert_column,
        max_num_batched_tokens=settings.max_num_batched_tokens,
        top_k=s.experts_per_token,
        moe_intermediate=s.moe_intermediate_size,
        TP=cap.parallel.tensor,
        GiB=round((m.activation_bytes or 0) / GiB, 6),
    )
    led.add(
        "non_torch_bytes",
        "CUDA context; with TP > 1 also NCCL and custom all-reduce buffers",
        m.non_torch_bytes,
        "B",
        f"{SRC_NON_TORCH}; fitted on {r.calibration}",
        TP=cap.parallel.tensor,
        GiB=round((m.non_torch_bytes or 0) / GiB, 6),
    )
    scaled = bool(r.cudagraph_calibration_graphs)
    led.add(
        "cudagraphs_captured",
        "mixed-batch graphs (one a capture size, unless the mixed routine is none) + FULL decode graphs "
        "(a separate routine: one a size ≤ max_num_seqs)",
        m.cudagraphs_captured,
        "graphs",
        f"{SRC_CG_MODE}; {SRC_CG_SIZES}; {SRC_CG_KEYS}",
        cudagraph_mode=m.cudagraph_mode,
        capture_sizes=m.cudagraph_capture_sizes,
        max_num_seqs=settings.max_num_seqs,
        max_num_batched_tokens=settings.max_num_batched_tokens,
    )
    led.add(
        "cudagraph_bytes",
        ("0: no CUDA graphs (enforce_eager, -O0 or cudagraph_mode none)" if not m.cudagraphs_captured
         else "(floor + per_layer × decoder layers on the worker)"
         + (" × graphs captured ÷ the calibration's graphs (an estimate)" if scaled else ""))
        + ("; subtracted before the KV cache is sized" if m.cudagraph_subtracted
           else "; captured after the KV cache is sized, so not subtracted"),
        b.cudagraph_bytes,
        "B",
        f"{SRC_GRAPHS}; fitted on {r.calibration}",
        graph_memory=m.cudagraph_bytes,
        floor=r.cudagraph_floor_bytes,
        per_layer=r.cudagraph_bytes_per_layer,
        graphs=m.cudagraphs_captured if scaled else None,
        calibration_graphs=r.cudagraph_calibration_graphs or None,
        GiB=round(b.cudagraph_bytes / GiB, 6),
    )  # fmt: skip
    led.add(
        "non_kv_bytes",
        "activation_bytes + non_torch_bytes (estimated: the answer's band spans the calibration residuals)",
        b.non_kv_bytes,
        "B",
        "vllm/v1/worker/gpu_worker.py (non_kv_cache_memory = weights + activation peak + non-torch)",
        GiB=round(b.non_kv_bytes / GiB, 6),
    )
    if b.band is not None:
        led.add(
            "band",
            "available_kv + [band_low, band_high] of the calibration residuals → requests held",
            f"{b.band.concurrency_low}–{b.band.concurrency_high}",
            "requests",
            "docs/memory-model.md",
            band_low=r.band_low_bytes,
            band_high=r.band_high_bytes,
            available_kv_low=b.band.available_kv_low_bytes,
            available_kv_high=b.band.available_kv_high_bytes,
        )


def _tower_step(inp: BudgetInput, b: Budget, led: LedgerBuilder) -> None:
    """The multimodal tower vLLM leaves unbuilt, when it does: the weights it no longer holds."""
    g = inp.geometry
    if not tower_skipped(g.tower_modalities, inp.language_model_only, inp.mm_limit_zero):
        return
    why = (
        "--language-model-only"
        if inp.language_model_only
        else "--limit-mm-per-prompt 0 for " + " and ".join(g.tower_modalities)
    )
    # The model's weights in the dtype served, with the tower and without (no drafter, no LoRA).
    served = replace(inp, geometry=with_served_dtype(g, inp.dtype))
    text_only = replace(served, geometry=without_tower(served.geometry))
    left_out = resolve_weights(served)[0] - resolve_weights(text_only)[0]
    led.add(
        "tower_bytes_left_out",
        "the vision tower and projector's weights, not built: " + why,
        left_out,
        "B",
        "vllm/model_executor/models/interfaces.py (_mark_tower_model)",
        modalities=", ".join(g.tower_modalities),
        GiB=round(left_out / GiB, 6),
    )


def _mamba_steps(inp: BudgetInput, cap: LayoutCapacity, led: LedgerBuilder) -> None:
    """The Mamba state's dtypes (--mamba-cache-dtype, --mamba-ssm-cache-dtype) and its cache mode
    (--enable-prefix-caching), which the state's bytes and blocks follow."""
    m = cap.geometry.mamba
    if MAMBA not in cap.geometry.layer_pattern:
        return
    if m is not None:
        led.add(
            "mamba_state_dtypes",
            "conv: --mamba-cache-dtype (auto: the model dtype); SSM: --mamba-ssm-cache-dtype, auto: the "
            "model's own if it names one (Nemotron-H float32, Qwen3.5 mamba_ssm_dtype, KDA float32), "
            "else the conv dtype",
            f"{m.conv_dtype} / {m.ssm_dtype}",
            "",
            SRC_DTYPES,
            mamba_cache_dtype=inp.mamba_cache_dtype,
            mamba_ssm_cache_dtype=inp.mamba_ssm_cache_dtype,
            state_bytes=cap.layer_bytes.mamba_state_gpu,
        )
    mode = mamba_cache_mode(inp.enable_prefix_caching, cap.geometry.attention_free)
    led.add(
        "mamba_cache_mode",
        "align with prefix caching (unset: on, off for attention-free models), else none: one state "
        "a request in a block of max_model_len",
        mode,
        "",
        SRC_MODE,
        enable_prefix_caching=inp.enable_prefix_caching,
        attention_free=cap.geometry.attention_free,
    )


def _speculative_steps(inp: BudgetInput, led: LedgerBuilder) -> None:
    """The speculative decoding planned: the draft's KV layers joining the target's, and the
    lookahead vLLM adds to sliding windows and Mamba states."""
    spec = inp.speculation
    if spec is None:
        return
    led.add(
        "speculative_decoding",
        f"method {spec.method}: {len(spec.draft_layers)} draft KV layers from {spec.draft_source}, "
        "planned with the target's",
        len(spec.draft_layers),
        "layers",
        SRC_LAYERS,
        method=spec.method,
        num_speculative_tokens=spec.num_speculative_tokens,
        draft_layer_kinds=",".join(KIND_NAMES[k] for k in sorted(set(spec.draft_layers))) or None,
    )
    led.add(
        "extra_retained_tokens",
        "max(0, num_prefill_lookahead_tokens − 1), num_prefill_lookahead_tokens = num_speculative_tokens "
        "for multi-module MTP, 1 for other EAGLE-style drafters, 0 otherwise (added to every sliding window)",
        spec.extra_retained_tokens,
        "tokens",
        SRC_LOOKAHEAD,
    )
    if MAMBA in inp.geometry.layer_pattern:
        led.add(
            "num_speculative_blocks",
            "num_speculative_tokens more state blocks a Mamba request keeps",
            spec.num_speculative_blocks,
            "blocks",
            SRC_MAMBA,
        )


def budget_ledger(inp: BudgetInput, b: Budget, cap: LayoutCapacity) -> tuple[Step, ...]:
    """Every step of the budget with its formula, inputs, value and the vLLM source it mirrors."""
    g, par, plan, profile = cap.geometry, cap.parallel, cap.plan, inp.profile  # g: as on the named GPU
    led = LedgerBuilder()
    led.add(
        "engine_profile",
        "rules used for every vLLM-version-dependent step",
        b.engine,
        "",
        "docs/vllm-rules.md §9",
    )
    if inp.dtype != "auto":
        led.add(
            "model_dtype",
            "--dtype: the unquantized weights' dtype, and the KV cache's under kv_cache_dtype auto",
            g.dtype,
            "",
            "vllm/config/model.py (_get_and_verify_dtype)",
            dtype=inp.dtype,
            auto_would_serve=inp.geometry.dtype,
        )
    _speculative_steps(inp, led)
    per_token_ledger(g, cap.layer_bytes, par, b.per_token, into=led)
    _mamba_steps(inp, cap, led)
    if inp.kv_cache_memory_bytes is not None:
        led.add(
            "available_kv_bytes",
            "kv_cache_memory_bytes (replaces the whole budget)",
            b.available_kv_bytes,
            "B",
            "vllm/config/cache.py (kv_cache_memory_bytes)",
            GiB=round(b.available_kv_bytes / GiB, 6),
        )
    elif b.requested_bytes is not None:
        led.add(
            "requested_bytes",
            "ceil(total_memory × gpu_memory_utilization)",
            b.requested_bytes,
            "B",
            SRC_REQUESTED,
            total_memory=b.gpu_memory_bytes,
            total_memory_from=inp.gpu_memory_source or None,
            gpu_memory_utilization=b.gpu_memory_utilization,
            GiB=round(b.requested_bytes / GiB, 6),
        )
        if cap.draft_weights_bytes or cap.draft_weights_how:
            led.add(
                "draft_weights_bytes",
                cap.draft_weights_how,
                cap.draft_weights_bytes,
                "B",
                SRC_LOAD,
                GiB=round(cap.draft_weights_bytes / GiB, 6),
            )
        led.add(
            "weights_bytes",
            cap.weights_how + (" + the draft's weights" if cap.draft_weights_bytes else ""),
            b.weights_bytes,
            "B",
            "request / preset",
            GiB=round(b.weights_bytes / GiB, 6),
        )
        _tower_step(inp, b, led)
        weights_per_gpu_steps(inp, b, cap, led)
        _memory_steps(inp, b, cap, led)
        led.add(
            "available_kv_bytes",
            "max(0, requested − weights_per_gpu − non_kv_bytes − cudagraph_bytes)",
            b.available_kv_bytes,
            "B",
            SRC_AVAILABLE,
            requested=b.requested_bytes,
            weights_per_gpu=b.weights_bytes_per_gpu,
            non_kv_bytes=b.non_kv_bytes,
            cudagraph_bytes=b.cudagraph_bytes,
            shortfall=b.kv_memory_shortfall_bytes or None,
            GiB=round(b.available_kv_bytes / GiB, 6),
        )
    if plan.packing is not None:
        if g.dsv4 is not None:
            dsv4.explain(led, g.dsv4, plan.packing)
        _packed_steps(led, b, cap)
    elif plan.uniform:
        led.add(
            "bytes_per_block",
            "Σ layers' pages = bytes_per_token × block_size",
            b.bytes_per_block,
            "B",
            SRC_BLOCKS,
            bytes_per_token=b.per_token.bytes_per_token,
            block_size=b.block_size,
        )
    else:
        for kind, old, new in plan.raised_block_sizes:
            led.add(
                f"block_size[{kind}]",
                "align × ceil(mamba_page / (align × attention bytes per token)), align = max(16, block)"
                if kind == "attention"
                else "block × (largest page / this kind's page)",
                new,
                "tokens",
                "vllm/platforms/interface.py (Platform._align_hybrid_block_size)"
                if kind == "attention"
                else "vllm/v1/core/kv_cache_utils.py (unify_kv_cache_spec_page_size)",
                requested=old,
                mamba_page=cap.layer_bytes.mamba_state_gpu if kind == "attention" else None,
            )
        if cap.layer_bytes.mamba_state_gpu:
            led.add(
                "mamba_page_padded",
                "a Mamba layer's state padded to the attention page",
                plan.page_bytes,
                "B",
                "vllm/platforms/interface.py (mamba_page_size_padded)",
                state=cap.layer_bytes.mamba_state_gpu,
                padding=plan.page_bytes - cap.layer_bytes.mamba_state_gpu,
            )
        led.add(
            "group_size",
            "smallest kind's layer count, or the largest if < 1.5 × smallest",
            plan.group_size,
            "layers",
            SRC_GROUPS,
            groups=len(plan.groups),
            padding_slots=plan.padding_slots,
        )
        led.add(
            "bytes_per_block",
            "group_size × page (page = bytes per token-layer × block)",
            b.bytes_per_block,
            "B",
            SRC_GROUPS,
            group_size=plan.group_size,
            page=plan.page_bytes,
        )
    if par.pipeline > 1:
        led.add(
            "bytes_per_block_by_stage",
            "each stage's own layers",
            ",".join(str(x) for x in b.bytes_per_block_by_stage),
            "B",
            SRC_BLOCKS,
        )
    led.add(
        "num_blocks",
        "min over workers of available // bytes_per_block"
        + (" (num_gpu_blocks_override)" if inp.num_gpu_blocks_override is not None else ""),
        b.num_blocks,
        "blocks",
        SRC_BLOCKS,
        available=b.available_kv_bytes,
        bytes_per_block=b.bytes_per_block,
        computed=b.num_blocks_computed,
    )
    if profile.null_block:
        led.add(
            "usable_blocks", "num_blocks − 1 (block 0 is the null block)", b.usable_blocks, "blocks", SRC_POOL
        )
    else:
        led.add(
            "usable_blocks", "num_blocks (V0 keeps no null block)", b.usable_blocks, "blocks", SRC_V0_POOL
        )
    led.add(
        "token_slots",
        "usable_blocks // groups × block_size × DCP",
        b.token_slots,
        "tokens",
        SRC_POOL,
        groups=len(plan.groups),
        block_size=plan.min_block_size,
    )
    if b.sliding_inflight_tokens is not None:
        led.add(
            "max_num_batched_tokens",
            "given"
            if "max_num_batched_tokens" in cap.settings.given
            else f"vllm serve default for {cap.settings.batch_tier} ({profile.batch_rule_text()})",
            b.max_num_batched_tokens,
            "tokens",
            SRC_BATCH_DEFAULTS,
            gpu_memory_bytes=inp.gpu_memory_bytes,
            gpu=inp.gpu_name or None,
        )
        led.add(
            "sliding_inflight_tokens",
            "max_concurrent_batches × max_num_batched_tokens"
            if profile.sliding_inflight_rule is InflightRule.BATCHES
            else "max_num_batched_tokens",
            b.sliding_inflight_tokens,
            "tokens",
            SRC_SLIDING,
            max_num_batched_tokens=b.max_num_batched_tokens,
            async_scheduling=cap.settings.async_scheduling,
            PP=par.pipeline,
        )
    for gr, own_window in zip(b.groups, cap.plan.class_windows, strict=True):
        window = own_window if own_window is not None else g.sliding_window
        if gr.kind in ("sliding_attention", "sliding_window_mla"):
            formula = "ceil(min(W − 1 + F, T) / block_size) + 1"
            src = SRC_SLIDING
        elif gr.kind == "sconv":
            formula = (
                "ceil(min(sconv_kernel_size − 1 + F, T) / block_size) + 1 (a sliding window of the kernel)"
            )
            src = SRC_SLIDING
        elif gr.kind == "chunked_attention":
            formula = "ceil(min(chunk + F, T) / block_size)"
            src = "vllm/v1/kv_cache_interface.py (ChunkedLocalAttentionSpec.max_admission_blocks_per_request)"
        elif gr.kind == "mamba_replicated":
            formula = "2 state blocks (running + last cached), the state on every TP rank"
            src = "vllm/models/qwen4_exp/nvidia/ple_layer.py (Qwen4ExpPLELayer, MambaSpec tp_replicated)"
        elif gr.kind == "circular_buffer":
            formula = (
                "1 block: the ring (raw keys of the open pool or region; DeepSeek-V4.1: the compressor's "
                "open group), kept for the request's life"
            )
            src = "vllm/v1/kv_cache_interface.py (CircularBufferSpec.max_memory_usage_bytes)"
        elif gr.kind == "mamba" and gr.blocks_per_request == 1:
            formula = "1 state block (mamba_cache_mode none: prefix caching off)"
            src = "vllm/v1/kv_cache_interface.py (MambaSpec.max_memory_usage_bytes)"
        elif gr.kind == "mamba":
            formula = "2 state blocks (running + last cached, prefix caching in align mode)" + (
                " + 1 prefill checkpoint" if g.mamba is not None and g.mamba.checkpoint_blocks else ""
            )
            src = "vllm/v1/kv_cache_interface.py (MambaSpec.max_memory_usage_bytes)"
        else:
            formula = "ceil(T / (block_size × DCP))"
            src = "vllm/v1/core/single_type_kv_cache_manager.py"
        led.add(
            f"blocks_per_request[{gr.kind} × {gr.groups} groups]",
            formula,
            gr.blocks_per_request,
            "blocks",
            src,
            T=b.context_tokens,
            block_size=gr.block_size,
            W=window if gr.kind in ("sliding_attention", "sliding_window_mla") else None,
            chunk=g.attention_chunk_size if gr.kind == "chunked_attention" else None,
            F=b.sliding_inflight_tokens
            if gr.kind in ("sliding_attention", "chunked_attention", "sliding_window_mla")
            else None,
            DCP=par.decode_context,
        )
    led.add(
        "blocks_per_request", "Σ over groups (groups × blocks each)", b.blocks_per_request, "blocks", SRC_CONC
    )
    c = b.concurrency
    led.add(
        "concurrency.guaranteed",
        "floor(usable_blocks / blocks_per_request)",
        c.guaranteed,
        "requests",
        SRC_POOL,
        usable_blocks=b.usable_blocks,
        blocks_per_request=b.blocks_per_request,
        unrounded=round(c.guaranteed_unrounded, 4),
    )
    led.add(
        "concurrency.schedulable",
        "min(guaranteed, max_num_seqs); max_num_seqs "
        + (
            "given"
            if "max_num_seqs" in cap.settings.given
            else f"vllm serve default for {cap.settings.batch_tier} ({profile.batch_rule_text()})"
        ),
        c.schedulable,
        "requests",
        SRC_BATCH_DEFAULTS,
        guaranteed=c.guaranteed,
        max_num_seqs=b.max_num_seqs,
    )
    v0 = profile.concurrency_rule is ConcurrencyRule.TOKENS
    led.add(
        "concurrency.vllm_reported",
        "num_gpu_blocks × block_size / T (vLLM's log line)"
        if v0
        else "num_blocks / blocks_per_request (vLLM's log line)",
        round(c.vllm_reported, 4),
        "×",
        SRC_V0_CONC if v0 else SRC_CONC,
        num_blocks=b.num_blocks,
    )
    led.add(
        "concurrency.budget_floor",
        "floor(available_kv_bytes / kv_bytes_per_request)",
        c.budget_floor,
        "requests",
        "docs/seed-figures.md table 2",
        available=b.available_kv_bytes,
        kv_bytes_per_request=b.kv_bytes_per_request,
        unrounded=round(c.budget_unrounded, 4),
    )
    led.add(
        "kv_cache_size_tokens",
        "int(vllm_reported × T)"
        if profile.kv_cache_size_rule is KvCacheSizeRule.CONCURRENCY_X_TOKENS
        else "num_blocks // groups × block_size",
        b.kv_cache_size_tokens,
        "tokens",
        SRC_REPORT,
    )
    led.add(
        "tail_waste_tokens",
        "ceil(T / block_size) × block_size − T",
        b.tail_waste_tokens,
        "tokens",
        "docs/vllm-rules.md §4",
    )
    led.add(
        "max_context_tokens",
        "largest T with blocks_per_request(T) ≤ fit budget",
        b.max_context_tokens,
        "tokens",
        SRC_FIT,
        fit_budget_blocks=cap.fit_blocks,
        null_block_reserved=profile.null_block_in_fit_check,
        limited_by=b.max_context_limited_by,
    )
    if b.target_concurrency is not None:
        led.add(
            "max_context_for_target",
            "largest T with N × blocks_per_request(T) ≤ usable",
            b.max_context_for_target,
            "tokens",
            SRC_CONC,
            N=b.target_concurrency,
        )
        led.add(
            "min_gpu_memory_utilization",
            "smallest u (4 decimals) with ceil(total × u) ≥ (N × blocks + 1) × bytes_per_block"
            " + weights + non_kv + cudagraph",
            b.min_gpu_memory_utilization,
            "",
            SRC_REQUESTED,
            N=b.target_concurrency,
        )
    if b.data_parallel is not None:
        d = b.data_parallel
        led.add(
            "data_parallel.concurrency",
            "DP × one engine's schedulable requests (each DP rank its own engine and KV cache)",
            d.concurrency,
            "requests",
            "vllm/v1/engine/core.py (DPEngineCoreProc: one engine core per DP rank)",
            DP=d.engines,
            gpus=d.gpus,
            per_engine=b.concurrency.schedulable,
            kv_cache_size_tokens=d.kv_cache_size_tokens,
        )
    if b.pooled is not None:
        p = b.pooled
        led.add(
            "pooled.concurrency",
            "floor((ceil(GPUs × memory × util) − weights) / (T × bytes_per_token_model))",
            p.concurrency,
            "requests",
            "docs/seed-figures.md table 2 (pooled arithmetic, not deployable)",
            gpus=p.gpus,
            available=p.available_kv_bytes,
            kv_bytes_per_request=p.kv_bytes_per_request,
            unrounded=round(p.concurrency_unrounded, 4),
        )
    return led.build()


SRC_PACKED = "vllm/v1/core/kv_cache_planning.py (_get_packed_kv_cache_groups, _get_kv_cache_bytes_per_block)"


def _packed_steps(led: LedgerBuilder, b: Budget, cap: LayoutCapacity) -> None:
    """Groups packed block-outermost (docs/vllm-rules.md §8.6): the block the family's backends
    settle on, each group (its caches, page, padding to the widest group, blocks a request) and
    the bytes a block takes."""
    plan, lb = cap.plan, cap.layer_bytes
    packing = plan.packing
    assert packing is not None
    kpool = lb.kpool_indexer
    for kind, old, new in plan.raised_block_sizes:
        led.add(
            f"block_size[{kind}]",
            "align × ceil(mamba_page / (align × latent bytes per token)), align = max(index_kpool × 32, "
            "block, 128), in multiples of lcm(index_kpool × 32, 64)"
            if kpool
            else "align × ceil(state / (align × attention bytes per token)), align = max(16, block)",
            new,
            "tokens",
            "vllm/platforms/interface.py (update_block_size_for_backend, _align_hybrid_block_size)"
            if kpool
            else "vllm/platforms/interface.py (Platform._align_hybrid_block_size)",
            requested=old,
            state=max(lb.mamba_state_gpu, lb.mamba_align_gpu),
            index_kpool=kpool[1] if kpool else None,
        )
    state_page = next((s.page_bytes for g in packing.groups for s in g.specs if s.kind == MAMBA), None)
    if state_page is not None:
        led.add(
            "mamba_page_padded",
            "a Mamba layer's state padded to the attention page",
            state_page,
            "B",
            "vllm/platforms/interface.py (mamba_page_size_padded)",
            state=lb.mamba_state_gpu,
            padding=state_page - lb.mamba_state_gpu,
        )
    led.add(
        "packed_groups",
        "buckets of one spec type, their caches by page size; a bucket with each page size as often "
        "splits into groups of r repeats (the approximate gcd, at least the largest mixed bucket's); "
        "Mamba, ring (and, nothing repeating, sliding) buckets hold no more than the widest block",
        len(plan.groups),
        "groups",
        SRC_PACKED,
        repeats_per_group=packing.repeats,
        caches=sum(len(g.specs) for g in packing.groups),
    )
    blocks = {
        (kind, bs, window): r.blocks_per_request
        for (kind, bs, _), window, r in zip(plan.classes, plan.class_windows, b.groups, strict=True)
    }
    widest = packing.widest
    for j, (group, kv) in enumerate(zip(packing.groups, plan.groups, strict=True)):
        led.add(
            f"kv_cache_group[{j}]",
            "Σ its caches' pages (block-outermost: not unified); blocks a request by its kind's rule "
            "(blocks_per_request steps)",
            group.page_bytes,
            "B",
            SRC_PACKED,
            kind=KIND_NAMES[group.kind],
            of=", ".join(dict.fromkeys(s.role or KIND_NAMES[s.kind] for s in group.specs)),
            layers=len(kv.layers),
            caches=len(group.specs),
            block_size=group.block_size,
            window=group.window,
            padding_to_widest=widest - group.page_bytes,
            blocks_per_request=blocks[(group.kind, group.block_size, group.window)],
        )
    led.add(
        "bytes_per_block",
        "the widest group's pages, rounded up to the lcm of every cache's block stride alignment"
        + (
            "; per pipeline stage its own layers' share, the widest stage"
            if len(plan.stage_bytes_per_block) > 1
            else ""
        ),
        b.bytes_per_block,
        "B",
        SRC_PACKED,
        widest=widest,
        alignment=packing.alignment,
        padding=b.bytes_per_block - widest if len(plan.stage_bytes_per_block) == 1 else None,
    )
