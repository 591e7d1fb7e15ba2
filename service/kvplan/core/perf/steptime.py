"""How long one engine step takes (docs/steptime.md): the physics of the step (FLOPs and bytes from
the model's geometry, the dtypes and the layout) priced by coefficients fitted on AIConfigurator's
vLLM kernel tables (coeffs.py), plus a committed prior for the host's costs.

Built once per simulation (`step_model`), called once per simulated step (`StepModel.seconds`):
everything that depends only on the model, GPU and layout is folded at build into a few per-step
coefficients, and the token-dependent parts are memoised by (padded) token count, so a call is a
handful of float operations and dict look-ups, no loop over layers."""

from __future__ import annotations

from bisect import bisect_left
from math import floor, log, log2
from typing import NamedTuple

import msgspec

from ..engine.cudagraphs import FULL as FULL_GRAPH
from ..engine.cudagraphs import NONE, PIECEWISE, ROUTINES
from ..engine.dtypes import (
    MODEL_DTYPES,
    attention_cell_bytes,
    mla_cell_bytes,
    resolve_kv_dtype,
)
from ..errors import InvalidInput
from ..ledger import Step
from ..model.geometry import CHUNKED, FULL, KIND_NAMES, MLA, SLIDING, Geometry
from .attention import AttnTerms, attn_terms, head_dim_key, kv_dtype_of, mla_terms
from .coeffs import (
    Coefficients,
    Curve,
    GemmFit,
    MoeFit,
    Roofline,
    SystemCoeffs,
)
from .elementwise import ELEMENTWISE_PRIOR, ElementwisePrior
from .experts import expert_table
from .mla import mla_module, mla_params
from .specs import GpuSpecs
from .weights import GEMM_DTYPES, WEIGHT_ONLY

UNBOUNDED = 1 << 62  # decode_line's `until` when its form holds on
SRC_GRAPHS = "vllm/config/vllm.py (_set_cudagraph_sizes), vllm/v1/cudagraph_dispatcher.py"
SRC_ASYNC = "vllm/v1/core/sched/async_scheduler.py; vllm/config/vllm.py (async_scheduling resolved True)"
DOC = "docs/steptime.md"


class Batch(NamedTuple):
    decode_requests: int  # requests sampling one token this step (no prefill work)
    decode_context: int  # Σ over them of their KV length this step (tokens attended)
    prefill_requests: int  # requests with a prefill chunk this step
    prefill_tokens: int  # Σ of the chunks' new tokens
    prefill_context: int  # Σ over chunks of chunk × (tokens cached before it + chunk)  (attention area)


class HostPrior(msgspec.Struct, frozen=True, gc=False, kw_only=True):
    """The host's costs: a PRIOR, committed by judgement and not fitted on any measurement (least of
    all silicon_sample.csv, the validation set). vLLM V1 keeps a persistent batch and prepares only
    the changes each step; its scheduler, input preparation and output processing run on the CPU
    once a step and per scheduled request (vLLM blog "vLLM V1: A Major Upgrade to vLLM's Core
    Architecture", 2025-01-27). With async scheduling (v1/core/sched/async_scheduler.py) step N+1 is
    scheduled while step N runs on the GPU, so the host's time hides behind the GPU's but for a
    small exposed hand-off (the sampled tokens' copy back): T = max(GPU + exposed, host); without it
    T = host + GPU. Kernel launches add to the GPU's time (the gaps between kernels a launch leaves):
    a full CUDA graph is one launch, counted as none; a piecewise graph launches its pieces and the
    attention between them, a few a layer; a forward without a graph launches every kernel. That
    forward, eager or compiled, is bound by the host's Python besides: the GPU's time is at least
    layers × eager_layer_s."""

    step_s: float = 0.8e-3  # scheduler + input preparation + output processing, once a step
    per_request_s: float = 10e-6  # the same, per scheduled request
    exposed_async_s: float = 0.1e-3  # what async scheduling leaves exposed a step
    launch_s: float = 5e-6  # one kernel (or graph piece) launched from Python
    eager_launches_per_layer: int = 12  # norms, QKV, RoPE, cache write, attention, O, 2 all-reduces, MLP
    piecewise_launches_per_layer: int = 3  # the graph piece, the attention and its cache write
    # A forward without a CUDA graph is the host's: Python dispatches each op of each layer, and the
    # GPU waits unless its own work is longer. Public runs of vLLM with --enforce-eager at one
    # request, where the step is the host's, net of the step's own host time: 0.50 ms a layer
    # (Qwen3-14B-AWQ, 40 layers, A100, vLLM 0.9.1 without async scheduling: TPOT 20.6 ms less 0.8;
    # vLLM issue #20469) to 0.80 (Qwen2.5-7B, 28 layers, A800, vLLM 0.29: ~22.5 ms eager less 0.1,
    # ~13 ms graphed; vllm-omni issue #7960); the middle. Compiling does not lift it: with
    # torch.compile and no graphs a decode step is as slow as eager (Qwen3-30B-A3B, 48 layers, TP 4:
    # TPOT 35.20 ms compiled against 33.92 eager and 10.03 graphed on 4090D; 34.4 against 11.8
    # piecewise on L20; vLLM issue #45709).
    eager_layer_s: float = 0.65e-3

    def cpu_seconds(self, requests: int) -> float:
        return self.step_s + self.per_request_s * requests


HOST_PRIOR = HostPrior()


class _Gemm(msgspec.Struct, frozen=True, gc=False):
    fit: Roofline
    n: int
    k: int
    weight_bytes: float
    count: int  # layers it runs in
    scale: float = 1.0  # the fit's shape factor for n × k


class StepModel(msgspec.Struct, frozen=True, kw_only=True):
    """One model on one GPU layout: batch → seconds. Built by `step_model`."""

    gemms: tuple[_Gemm, ...]
    lm_head: _Gemm
    moe: MoeFit | Roofline | None
    moe_layers: int
    moe_nk: int  # top-k × an expert's weights (n·k of the GEMM form), per GPU
    moe_expert_bytes: float  # one expert's weights per GPU
    experts: int
    top_k: int
    hidden: int
    allreduces: int  # a step (2 a decoder layer with TP > 1)
    allreduce_graph: Curve | None
    allreduce_eager: Curve | None
    p2p_transfers: int  # pipeline stages − 1
    p2p_latency_s: float
    p2p_bytes_per_s: float
    full: AttnTerms
    sliding: AttnTerms | None
    layers: int
    hbm_bytes_per_s: float
    sizes: tuple[int, ...]  # CUDA-graph capture sizes (empty: eager)
    decode_graph: str  # the routine a uniform decode batch runs: full, piecewise or none
    mixed_graph: str  # the routine any other batch runs
    async_scheduling: bool
    host: HostPrior
    ledger: tuple[Step, ...]
    # Element-wise kernels (ElementwisePrior): how many a step, and their bytes a token, all layers.
    elementwise_kernels: int = 0
    elementwise_bytes_per_token: float = 0.0
    elementwise: ElementwisePrior = ELEMENTWISE_PRIOR
    # The model's measured error on silicon (median abs % of TPOT), once validated; the caller fills it.
    validation_error_pct: float | None = None
    _memo: dict[int, float] = msgspec.field(default_factory=dict)
    # decode_line's parts that do not depend on the context, by n (a run asks for them per stretch)
    _lines: dict[int, tuple[float, float, float, float, float]] = msgspec.field(default_factory=dict)

    def seconds(self, batch: Batch) -> float:
        n, ctx, pr, pt, pc = batch
        if pr == 0 and pt == 0:
            if n == 0:
                return 0.0
            a, b, _ = self.decode_line(n, ctx)
            return a + b * ctx
        return self._mixed(n, ctx, pr, pt, pc)

    def decode_line(self, n: int, context: int) -> tuple[float, float, int]:
        """A step of n decoding requests (nothing else) with Σ context = `context`: (a, b, until)
        such that seconds(Batch(n, c, 0, 0, 0)) == a + b·c exactly for every c in [context, until]."""
        parts = self._lines.get(n)
        if parts is None:
            parts = self._lines[n] = self._decode_parts(n)
        gpu, launches, host, exposed, ungraphed = parts
        slope, until = self.full.decode_per_ctx, UNBOUNDED
        s = self.sliding
        if s is not None:
            # Σ min(ctx, window) read as min(Σctx, n·window): exact when all sit on one side of it
            cap = n * s.window
            if context <= cap:
                slope, until = slope + s.decode_per_ctx, cap
            else:
                gpu += s.decode_per_ctx * cap
        gpu += launches
        # The floor: the host's step under async scheduling, and an ungraphed forward's host time.
        if self.async_scheduling:
            a, floor_s = gpu + exposed, max(host, ungraphed + exposed)
        else:
            a, floor_s = gpu + host, ungraphed + host if ungraphed else 0.0
        if a + slope * context >= floor_s:
            return a, slope, until
        if slope > 0:  # the floor holds up to the last c where the line is still below it
            c = max(context, floor((floor_s - a) / slope))
            while a + slope * (c + 1) < floor_s:
                c += 1
            while c > context and a + slope * c >= floor_s:
                c -= 1
            until = min(until, c)
        return floor_s, 0.0, until

    def _decode_parts(self, n: int) -> tuple[float, float, float, float, float]:
        """A decode step's GPU seconds before its context and launches, its launches, the host's
        seconds, what of them async scheduling exposes, and an ungraphed forward's host time (0
        in a graph)."""
        largest = self.sizes[-1] if self.sizes and self.decode_graph != NONE else 0
        graphed = n <= largest
        m = self.sizes[bisect_left(self.sizes, n)] if graphed else n
        gpu = self._tokens(m, graphed) + self._head(n)
        f = self.full
        gpu += f.decode_const + f.decode_per_request * m
        s = self.sliding
        if s is not None:
            gpu += s.decode_const + s.decode_per_request * m
        routine = self.decode_graph if graphed else NONE
        host, launches, ungraphed = self.host, self._launches(routine), self._ungraphed_host(routine)
        return gpu, launches, host.cpu_seconds(n), host.exposed_async_s, ungraphed

    def explain(self) -> tuple[Step, ...]:
        if self.validation_error_pct is None:
            return self.ledger
        return (
            *self.ledger,
            Step(
                "step-time validation error",
                "median |modelled − measured| ÷ measured TPOT on silicon_sample.csv's vLLM rows",
                {},
                self.validation_error_pct,
                "%",
                "docs/validation-steptime.md",
            ),
        )

    # --- the parts -------------------------------------------------------------------------------

    def _mixed(self, n: int, ctx: int, pr: int, pt: int, pc: int) -> float:
        tokens = n + pt
        largest = self.sizes[-1] if self.sizes and self.mixed_graph != NONE else 0
        graphed = tokens <= largest  # the linear layers see the padded count
        m = self.sizes[bisect_left(self.sizes, tokens)] if graphed else tokens
        gpu = self._tokens(m, graphed) + self._head(n + pr)
        # Causal work of the chunks: Σ c·(p + c/2) = area − Σc²/2, Σc² read as (Σc)²/requests
        # (exact for one chunk, the usual case under chunked prefill).
        work = max(0.0, pc - pt * pt / (2 * pr)) if pr else 0.0
        for t in (self.full, self.sliding):
            if t is None:
                continue
            if n:
                c = ctx if not t.window else min(ctx, n * t.window)
                gpu += t.decode_const + t.decode_per_request * n + t.decode_per_ctx * c
            if pr:
                w = work if not t.window else min(work, pt * t.window)
                gpu += t.prefill_const + t.prefill_per_token * pt + t.prefill_per_work * w
        routine = self.mixed_graph if graphed else NONE
        gpu = max(gpu + self._launches(routine), self._ungraphed_host(routine))
        host = self.host.cpu_seconds(n + pr)
        if self.async_scheduling:
            return max(gpu + self.host.exposed_async_s, host)
        return host + gpu

    def _launches(self, routine: str) -> float:
        """Kernel launches a step: none for a full graph, a few a layer piecewise, every kernel
        without a graph (whose host time is a floor besides: _ungraphed_host)."""
        if routine == FULL_GRAPH:
            return 0.0
        host = self.host
        per_layer = (
            host.piecewise_launches_per_layer if routine == PIECEWISE else host.eager_launches_per_layer
        )
        return self.layers * per_layer * host.launch_s

    def _ungraphed_host(self, routine: str) -> float:
        """A forward without a graph, eager or compiled: the host dispatching every op of every
        layer, the least such a step takes; 0 in a graph."""
        return self.layers * self.host.eager_layer_s if routine == NONE else 0.0

    def _tokens(self, m: int, graphed: bool) -> float:
        """What scales with the step's (padded) token count: linear layers, MoE, all-reduces, the
        pipeline's hand-offs. Memoised by (m, graph or eager all-reduce)."""
        key = 2 * m + graphed
        hit = self._memo.get(key)
        if hit is not None:
            return hit
        t: float = 0
        bw = self.hbm_bytes_per_s
        for g in self.gemms:  # not sum(): faster for a new m, and left to right on any Python
            t += g.count * _gemm_s(g, m, bw)
        if self.moe is not None:
            t += self.moe_layers * moe_seconds(
                self.moe,
                m,
                self.moe_nk,
                self.moe_expert_bytes,
                self.experts,
                self.top_k,
                self.hidden,
                self.hbm_bytes_per_s,
            )
        curve = self.allreduce_graph if graphed else self.allreduce_eager
        if self.allreduces and curve is not None:
            t += self.allreduces * _interp_loglog(curve, m * self.hidden)
        if self.p2p_transfers:
            t += self.p2p_transfers * (self.p2p_latency_s + 2 * m * self.hidden / self.p2p_bytes_per_s)
        if self.elementwise_kernels:
            ew = self.elementwise
            t += self.elementwise_kernels * ew.constant_s + m * self.elementwise_bytes_per_token / (
                ew.eta_mem * self.hbm_bytes_per_s
            )
        self._memo[key] = t
        return t

    def _head(self, sampled: int) -> float:
        """The LM head on the rows sampled (outside the graphs). Memoised by its negated count."""
        if sampled == 0:
            return 0.0
        key = -sampled
        hit = self._memo.get(key)
        if hit is None:
            hit = self._memo[key] = _gemm_s(self.lm_head, sampled, self.hbm_bytes_per_s)
        return hit


def _tau(r: Roofline, m: float) -> float:
    """Seconds per n·k at m tokens: linear between the measured m, proportional beyond the last."""
    ms, taus = r.m, r.s_per_nk
    if m >= ms[-1]:
        return taus[-1] * m / ms[-1]
    i = bisect_left(ms, m)
    if i == 0 or ms[i] == m:
        return taus[i]
    m0, m1 = ms[i - 1], ms[i]
    return taus[i - 1] + (taus[i] - taus[i - 1]) * (m - m0) / (m1 - m0)


def _gemm_s(g: _Gemm, m: int, bw: float) -> float:
    r, n, k = g.fit, g.n, g.k
    nbytes = n * k * g.weight_bytes + 2 * (m * k + m * n)
    return (r.t0_s + max(_tau(r, m) * n * k, nbytes / (bw * r.eta_mem))) * g.scale


def moe_seconds(
    fit: MoeFit | Roofline,
    m: int,
    nk: int,
    expert_bytes: float,
    experts: int,
    top_k: int,
    hidden: int,
    bw: float,
) -> float:
    """One MoE layer of m tokens: the GEMM form over top-k experts' weights (nk), its bytes those of
    the distinct experts m tokens touch, E·(1 − (1 − k/E)^m), fitted on AIConfigurator's power-law
    routing rows (tests/perf/fit_aic.py MOE_DISTRIBUTION). A MoE table's compute efficiency is read
    at m·k/E tokens an expert; a GPU without one prices the experts as a bf16 GEMM (a Roofline)."""
    touched = experts * (1 - (1 - top_k / experts) ** m)
    nbytes = touched * expert_bytes + 2 * m * hidden * (1 + top_k)
    if isinstance(fit, Roofline):
        return fit.t0_s + max(_tau(fit, m) * nk, nbytes / (bw * fit.eta_mem))
    compute = _per_weight(fit, m * top_k / experts) * experts / top_k * nk  # w · every expert's n·k
    return fit.t0_s + max(compute, nbytes / (bw * fit.eta_mem))


def _per_weight(fit: MoeFit, x: float) -> float:
    """w(x): linear in log2 x between the fitted half-octaves (non-decreasing, so a layer's time
    never falls as m grows), ∝ x beyond them (the end half-octaves' efficiency holds)."""
    xs, w = fit.tokens_per_expert, fit.s_per_weight
    if x <= xs[0]:
        return x * w[0] / xs[0]
    if x >= xs[-1]:
        return x * w[-1] / xs[-1]
    i = bisect_left(xs, x)
    if xs[i] == x:
        return w[i]
    f = (log2(x) - log2(xs[i - 1])) / (log2(xs[i]) - log2(xs[i - 1]))
    return w[i - 1] + (w[i] - w[i - 1]) * f


def gemm_seconds(fit: GemmFit, m: int, n: int, k: int, weight_bytes: float, bw: float) -> float:
    """One GEMM of m tokens by an n × k weight (the fit's roofline and shape factor)."""
    return _gemm_s(_gemm(fit, n, k, weight_bytes, 1), m, bw)


def _gemm(fit: GemmFit, n: int, k: int, weight_bytes: float, count: int) -> _Gemm:
    return _Gemm(fit.roofline(n * k), n, k, weight_bytes, count, fit.shape_factor(n, k))


def _interp_loglog(c: Curve, x: float) -> float:
    xs, ys = c.elements, c.seconds
    if x <= xs[0]:
        return ys[0]
    if x >= xs[-1]:
        return ys[-1] * x / xs[-1]  # bandwidth-bound beyond the last measurement
    i = bisect_left(xs, x)
    if xs[i] == x:
        return ys[i]
    f = (log(x) - log(xs[i - 1])) / (log(xs[i]) - log(xs[i - 1]))
    return float(ys[i - 1] * (ys[i] / ys[i - 1]) ** f)


# --- building ---------------------------------------------------------------------------------------

_MODELLED_KINDS = frozenset({FULL, SLIDING, CHUNKED, MLA})


def _route(dtype: str, table: SystemCoeffs, field: str) -> tuple[str, float, str]:
    """(the GEMM table priced, bytes a weight, how it was read) for a weights dtype."""
    if dtype in GEMM_DTYPES:
        key, wbytes = GEMM_DTYPES[dtype]
        if key in table.gemm:
            return key, wbytes, key
        if key == "fp8_block" and "fp8" in table.gemm:
            return "fp8", wbytes, "fp8 (no fp8_block table on this GPU)"
        return "bfloat16", wbytes, f"{dtype} weights read, bf16 compute (no {key} kernels on this GPU)"
    if dtype in WEIGHT_ONLY:
        return "bfloat16", WEIGHT_ONLY[dtype], f"{dtype}: weight-only, memory-bound read, bf16 compute"
    valid = ", ".join([*GEMM_DTYPES, *WEIGHT_ONLY])
    raise InvalidInput(field, f"the step-time model prices {valid}; got {dtype!r}")


def step_model(
    geometry: Geometry,
    gpu: GpuSpecs,
    coeffs: Coefficients,
    *,
    tensor_parallel: int,
    pipeline_parallel: int,
    weights_dtype: str,
    kv_cache_dtype: str,
    cudagraph_sizes: tuple[int, ...],
    async_scheduling: bool,
    cudagraph_mode: str = "full_and_piecewise",
    expert_weights_dtype: str | None = None,
    data_parallel: int = 1,
    expert_parallel: bool = False,
    moe_backend: str = "auto",
    mxfp8_activations: bool = False,
    eager_forward: bool = False,
    host: HostPrior = HOST_PRIOR,
    elementwise: ElementwisePrior = ELEMENTWISE_PRIOR,
) -> StepModel:
    """The step-time model of `geometry` on `gpu` (specs from its preset) with the fitted tables.
    cudagraph_sizes, cudagraph_mode: the capture sizes and mode in force (core/engine/cudagraphs.py
    capture_sizes, cudagraph_mode); no sizes or mode "none" is eager. moe_backend: vLLM's
    --moe-backend; "marlin" prices the experts on the Marlin kernel's table where AIC measured one
    beside the dtype's default kernel (MXFP4 on Hopper and Blackwell). mxfp8_activations: MXFP4
    experts on the MXFP4 × MXFP8 table where that kernel runs (Blackwell), BF16 activations elsewhere
    (the kernel as core/model/mxfp4.py picks it for the GPU's compute capability). eager_forward:
    the model runs as eager PyTorch, not compiled (core/engine/cudagraphs.py eager_forward): said in
    the ledger; the time is the same as compiled code's without a graph."""
    tp, pp = tensor_parallel, pipeline_parallel
    if data_parallel != 1:
        raise InvalidInput(
            "data_parallel_size", "the step-time model times one engine: give DP 1 (each DP rank steps alone)"
        )
    if expert_parallel:
        raise InvalidInput("enable_expert_parallel", "expert parallelism is not in the step-time model")
    table = coeffs.systems.get(gpu.aic_system)
    if table is None:
        raise InvalidInput("gpu", f"no fitted step-time tables for {gpu.aic_system!r}")
    shape = geometry.shape
    if shape is None:
        raise InvalidInput("model", "the step-time model needs the model's config (hidden size, vocabulary)")
    params = geometry.params_total
    if params is None:
        raise InvalidInput("model", "the step-time model needs the model's parameter count")
    kinds = set(geometry.layer_pattern)
    if not kinds <= _MODELLED_KINDS or geometry.dsv4 is not None:
        other = ", ".join(sorted(KIND_NAMES[k] for k in kinds - _MODELLED_KINDS)) or "DeepSeek-V4 caches"
        raise InvalidInput("model", f"the step-time model does not price {other} layers")
    h, vocab, layers = shape.hidden_size, shape.vocab_size, geometry.decoder_layer_count
    heads, kv_heads, d = geometry.num_attention_heads, geometry.num_kv_heads, geometry.head_dim
    heads_g, kv_g = max(1, heads // tp), max(1, kv_heads // tp)
    bw = float(gpu.hbm_bytes_per_s)

    # Linear layers: the dense parameters a layer (all but routed experts, embedding, LM head).
    key, wbytes, read_as = _route(weights_dtype, table, "weights_dtype")
    fits = table.gemm[key]
    experts = shape.num_experts
    expert_params = geometry.params_expert or 0
    dense = (params - expert_params - 2 * vocab * h) / layers
    if dense <= 0:
        raise InvalidInput(
            "model", "its parameter count leaves no dense weights beside embedding and LM head"
        )
    mla_fit, mla_key = mla_module(geometry, table, key, kv_cache_dtype)
    attn = mla_params(geometry) if mla_fit else h * d * (2 * heads + 2 * kv_heads)
    scale = min(1.0, dense / attn)  # MLA's low-rank projections hold fewer than the GQA formula says
    inter = max(0.0, dense - attn) / (3 * h)
    # Attention projections, unless the MLA module (which holds them) prices the attention.
    shapes = [] if mla_fit else [((heads_g + 2 * kv_g) * d, h, scale), (h, heads_g * d, scale)]
    if inter >= 1:
        shapes += [(round(2 * inter / tp), h, 1.0), (h, round(inter / tp), 1.0)]
    gemms = tuple(_gemm(fits, max(1, round(n * s)), k, wbytes, layers) for n, k, s in shapes if n * k)
    bf16 = table.gemm["bfloat16"]
    lm_n = -(-vocab // tp)
    lm_head = _gemm(bf16, lm_n, h, float(MODEL_DTYPES.get(geometry.dtype, 2)), 1)

    # MoE: the routed experts' layers, from the expert parameter count.
    moe: MoeFit | Roofline | None = None
    moe_layers = moe_nk = 0
    moe_bytes = 0.0
    moe_read = ""
    if experts and expert_params and shape.moe_intermediate_size:
        per_expert = 3 * h * shape.moe_intermediate_size
        moe_layers = max(1, round(expert_params / (experts * per_expert)))
        edtype = expert_weights_dtype or geometry.expert_weight_dtype or weights_dtype
        mkey, mbytes, mnote = expert_table(
            table, gpu.aic_system, edtype, tp, moe_backend, mxfp8_activations, gpu.sm_version // 10
        )
        moe_nk = shape.experts_per_token * per_expert // tp
        moe_bytes = per_expert / tp * mbytes
        if mkey in table.moe:
            moe = table.moe[mkey]
            moe_read = f"{edtype} experts priced on the {mkey} MoE table"
        else:  # no MoE measurements on this GPU (A100's tables): the experts as one bf16 GEMM
            moe = table.gemm["bfloat16"].roofline(moe_nk)
            moe_read = f"{edtype} experts priced as a bf16 GEMM (no MoE table on {gpu.aic_system})"
        if mnote:
            moe_read += f" ({mnote})"

    # Attention: per layer kind, folded over its layers.
    kv = resolve_kv_dtype(kv_cache_dtype, geometry.dtype)
    akey = "bfloat16" if kv in MODEL_DTYPES or "fp8" not in table.decode_attention else "fp8"
    dec = table.decode_attention[akey]
    prefill: dict[str, str] = {}  # layer kind → the prefill fit it reads (the ledger names them)
    if mla_fit is not None:
        full, sliding = mla_terms(geometry.layer_pattern.count(MLA), heads_g, mla_fit), None
        akey = f"MLA module {mla_key}"
    elif geometry.is_mla:
        # The fit over every head dim: MLA's prefill runs MLA's kernels, not the attention AIC
        # measured at a head dim.
        prefill["mla"] = akey
        pre = table.prefill_attention[akey]
        latent = geometry.mla_latent_dim
        cell = mla_cell_bytes(kv, latent, geometry.index_head_dim is not None)
        qk = (geometry.qk_nope_head_dim or 0) + (geometry.qk_rope_head_dim or 0) or d
        full = attn_terms(
            geometry.layer_pattern.count(MLA), 0, cell, heads_g, latent, qk, 3 * heads_g, dec, pre
        )
        sliding = None
    else:
        fd, fkv = geometry.full_head_dim or d, max(1, (geometry.full_kv_heads or kv_heads) // tp)
        full_cell = fkv * attention_cell_bytes(kv, fd, fd)
        window = geometry.sliding_window or geometry.attention_chunk_size or 0
        n_slide = geometry.layer_pattern.count(SLIDING) + geometry.layer_pattern.count(CHUNKED)
        n_full = geometry.layer_pattern.count(FULL)
        full_key, slide_key = (head_dim_key(table.prefill_attention, akey, dim) for dim in (fd, d))
        if n_full:
            prefill["full"] = full_key
        if n_slide:
            prefill["sliding"] = slide_key
        pre_full, pre_slide = table.prefill_attention[full_key], table.prefill_attention[slide_key]
        full = attn_terms(n_full, 0, full_cell, heads_g, fd, fd, heads_g + 2 * fkv, dec, pre_full)
        cell = kv_g * attention_cell_bytes(kv, d, geometry.v_head_dim or d)
        sliding = (
            attn_terms(n_slide, window, cell, heads_g, d, d, heads_g + 2 * kv_g, dec, pre_slide)
            if n_slide
            else None
        )

    if tp > 1:
        graph_curve = table.allreduce.get("vllm_graph", {}).get(str(tp))
        eager_curve = table.allreduce.get("vllm_eager", {}).get(str(tp)) or graph_curve
        if graph_curve is None or eager_curve is None:
            measured = sorted({int(g) for c in table.allreduce.values() for g in c})
            raise InvalidInput(
                "tensor_parallel_size",
                f"{gpu.aic_system}'s all-reduce was measured on {measured} GPUs, not {tp}",
            )
    else:
        graph_curve = eager_curve = None

    sizes = tuple(sorted(set(cudagraph_sizes)))
    if cudagraph_mode not in ROUTINES:
        raise InvalidInput("cudagraph_mode", f"must be one of {', '.join(ROUTINES)}")
    decode_graph, mixed_graph = ROUTINES[cudagraph_mode] if sizes else (NONE, NONE)
    # Element-wise kernels a layer (ElementwisePrior): two add + RMSNorm of 2h in and out, and the
    # dense MLP's SiLU-and-mul of 2·I/TP in and I/TP out; the bytes a token are in and out, bf16.
    dense_mlp = round(inter / tp) if inter >= 1 else 0
    ew_kernels = layers * (2 + (1 if dense_mlp else 0))
    ew_bytes = layers * elementwise.bytes_per_element * (2 * 4 * h + 3 * dense_mlp)
    ledger = _ledger(
        geometry,
        gpu,
        coeffs,
        table,
        tp,
        pp,
        weights_dtype,
        read_as,
        kv,
        akey,
        prefill,
        moe_read,
        sizes,
        cudagraph_mode if sizes else NONE,
        async_scheduling,
        host,
        elementwise,
        ew_kernels,
        eager_forward,
    )
    return StepModel(
        gemms=gemms,
        lm_head=lm_head,
        moe=moe,
        moe_layers=moe_layers,
        moe_nk=moe_nk,
        moe_expert_bytes=moe_bytes,
        experts=experts,
        top_k=shape.experts_per_token,
        hidden=h,
        allreduces=2 * layers if tp > 1 else 0,
        allreduce_graph=graph_curve,
        allreduce_eager=eager_curve,
        p2p_transfers=pp - 1,
        p2p_latency_s=gpu.p2p_latency_s,
        p2p_bytes_per_s=float(gpu.intra_node_bytes_per_s),
        full=full,
        sliding=sliding,
        layers=layers,
        hbm_bytes_per_s=bw,
        sizes=sizes,
        decode_graph=decode_graph,
        mixed_graph=mixed_graph,
        async_scheduling=async_scheduling,
        host=host,
        ledger=ledger,
        elementwise_kernels=ew_kernels,
        elementwise_bytes_per_token=ew_bytes,
        elementwise=elementwise,
    )


def _ledger(
    geometry: Geometry,
    gpu: GpuSpecs,
    coeffs: Coefficients,
    table: SystemCoeffs,
    tp: int,
    pp: int,
    weights_dtype: str,
    read_as: str,
    kv: str,
    akey: str,
    prefill: dict[str, str],
    moe_read: str,
    sizes: tuple[int, ...],
    mode: str,
    async_scheduling: bool,
    host: HostPrior,
    elementwise: ElementwisePrior,
    ew_kernels: int,
    eager_forward: bool,
) -> tuple[Step, ...]:
    """What the model is and what it was built from, as ledger steps (explain()): its formula, the
    GPU's figures, the dtypes and layout it priced, the graphs, the host prior and the fits."""
    gemm = table.gemm
    residual = {f"gemm {k} median abs %": v.fit.median_abs_pct for k, v in gemm.items()}
    residual |= {
        f"decode attention {k} median abs %": v.fit.median_abs_pct for k, v in table.decode_attention.items()
    }
    residual |= {
        f"prefill attention {k} median abs %": v.fit.median_abs_pct
        for k, v in table.prefill_attention.items()
        if kv_dtype_of(k) == k or k in prefill.values()
    }
    return (
        Step(
            "step-time model",
            "T = host ⊕ Σ_layers(linear + attention(decode, prefill) + MoE + 2 all-reduces + element-wise) "
            "+ LM head + "
            "(PP − 1) hand-offs; linear = t0 + max(τ(m̃)·n·k, bytes ÷ (η·HBM)); m̃ the padded token count",
            {"layers": geometry.decoder_layer_count, "pipeline stages summed": pp},
            "roofline, fitted",
            "s",
            DOC,
        ),
        Step(
            "GPU specs",
            "peak dense FLOP/s and HBM bandwidth the roofline divides by",
            {
                "aic_system": gpu.aic_system,
                "hbm_bytes_per_s": gpu.hbm_bytes_per_s,
                "bf16_flops": gpu.bf16_flops,
                "fp8_flops": gpu.fp8_flops,
                "fp4_flops": gpu.fp4_flops,
                "intra_node_bytes_per_s": gpu.intra_node_bytes_per_s,
            },
            gpu.aic_system,
            "",
            gpu.source,
        ),
        Step(
            "step-time dtypes and layout",
            "GEMM table by weights dtype; attention table by KV dtype; TP shards heads and weights",
            {
                "weights_dtype": weights_dtype,
                "gemm": read_as,
                "moe": moe_read or None,
                "kv_cache_dtype": kv,
                "attention table": akey,
                "prefill attention table": "; ".join(f"{kind} {key}" for kind, key in prefill.items())
                or akey,
                "tensor_parallel": tp,
                "pipeline_parallel": pp,
            },
            read_as,
            "",
            DOC,
        ),
        Step(
            "CUDA graphs in the step time",
            "decode-only batches ≤ the largest size pad to the next capture size (full graph); mixed "
            "batches ≤ it run piecewise graphs (linear layers padded); larger ones and eager pad nothing "
            "and pay per-kernel launches, the host's time a floor (host overhead)",
            {"capture sizes": len(sizes), "largest": sizes[-1] if sizes else 0, "mode": mode},
            mode,
            "",
            SRC_GRAPHS,
        ),
        Step(
            "host overhead (prior)",
            "async: max(GPU + exposed, step + per_request·n); else step + per_request·n + GPU; "
            "kernel launches add to the GPU's time; a step without a graph (eager or compiled) takes "
            "at least layers × eager_layer_s, the host dispatching every op",
            {
                "async_scheduling": async_scheduling,
                "step_s": host.step_s,
                "per_request_s": host.per_request_s,
                "exposed_async_s": host.exposed_async_s,
                "launch_s": host.launch_s,
                "eager_forward": eager_forward,
                "eager_layer_s": host.eager_layer_s,
            },
            "prior, not fitted",
            "s",
            SRC_ASYNC,
        ),
        Step(
            "element-wise kernels (prior)",
            "kernels × constant + tokens × bytes a token ÷ (η·HBM): two add + RMSNorm a layer and "
            "a dense MLP's SiLU-and-mul, as AIConfigurator's ElementWise ops price them",
            {
                "kernels a step": ew_kernels,
                "constant_s": elementwise.constant_s,
                "eta_mem": elementwise.eta_mem,
            },
            "prior, not fitted",
            "s",
            "AIConfigurator 0.12.0 sdk/models/llama.py, moe.py (ElementWise); systems/*.yaml "
            "(mem_empirical_constant_latency, mem_bw_empirical_scaling_factor)",
        ),
        Step(
            "fitted tables",
            "coefficients fitted on AIConfigurator's vLLM kernel tables (presets/data/perf/PROVENANCE.md)",
            {"vllm tables": table.vllm_version, **residual},
            coeffs.provenance,
            "",
            "tests/perf/fit_aic.py",
        ),
    )


__all__ = [
    "ELEMENTWISE_PRIOR",
    "HOST_PRIOR",
    "UNBOUNDED",
    "Batch",
    "ElementwisePrior",
    "HostPrior",
    "StepModel",
    "gemm_seconds",
    "moe_seconds",
    "step_model",
]
