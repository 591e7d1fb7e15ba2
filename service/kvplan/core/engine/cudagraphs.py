"""The CUDA graphs vLLM 0.33 captures: the mode and compilation mode the flags leave, the batch
sizes captured, and how many graphs that makes (docs/vllm-rules.md "the profiled peak"). The
non-KV estimate (nonkv.py cudagraph_memory) scales with the count; vLLM's figures here are exact,
the bytes a graph takes are kvplan's estimate."""

from __future__ import annotations

import msgspec

from ..errors import InvalidInput
from ..limits import MAX_CUDAGRAPH_CAPTURE_SIZES

SRC_MODE = (
    "vllm/config/vllm.py (OPTIMIZATION_LEVEL_00–03, enforce_eager, _normalize_piecewise_cudagraph_mode)"
)
SRC_SIZES = "vllm/config/vllm.py (VllmConfig._set_cudagraph_sizes)"
SRC_KEYS = "vllm/v1/cudagraph_dispatcher.py (CudagraphDispatcher.initialize_cudagraph_keys)"

# CUDAGraphMode (vllm/config/compilation.py): a mode of two routines is (decode, mixed).
NONE, PIECEWISE, FULL = "none", "piecewise", "full"
_ROUTINES: dict[str, tuple[str, str]] = {
    NONE: (NONE, NONE),
    PIECEWISE: (PIECEWISE, PIECEWISE),
    FULL: (FULL, FULL),
    "full_decode_only": (FULL, NONE),
    "full_and_piecewise": (FULL, PIECEWISE),
}
ROUTINES = _ROUTINES  # read by the step-time model (core/perf/steptime.py)
# Each optimization level's cudagraph_mode (OPTIMIZATION_LEVEL_00 … 03); -O2 is vLLM's default.
LEVEL_MODES = {0: NONE, 1: PIECEWISE, 2: "full_and_piecewise", 3: "full_and_piecewise"}
DEFAULT_LEVEL = 2
VLLM_COMPILE = "vllm_compile"
COMPILATION_NONE = "none"  # CompilationMode.NONE: eager PyTorch
# The default capture ceiling: 1024 on data-center Blackwell (SM 10.x), else 512.
DEFAULT_MAX_GRAPH_SIZE = 512
BLACKWELL_MAX_GRAPH_SIZE = 1024


class Graphs(msgspec.Struct, frozen=True, gc=False, kw_only=True):
    """What vLLM captures: the mode in force, the capture sizes, and the graphs of each routine."""

    mode: str
    sizes: tuple[int, ...]
    mixed_graphs: int  # one a capture size (PIECEWISE: one graph a piece of each size)
    decode_graphs: int  # FULL decode graphs of a separate routine
    eager_forward: bool = False  # the model runs as eager PyTorch, not compiled (eager_forward)

    @property
    def captured(self) -> int:
        return self.mixed_graphs + self.decode_graphs


def cudagraph_mode(
    given: str | None, compilation_mode: str | None, optimization_level: int | None, enforce_eager: bool
) -> str:
    """The cudagraph_mode in force: none under --enforce-eager; the one given, else the
    optimization level's; without vLLM's own compilation (mode other than VLLM_COMPILE; -O0's
    default) a mode's piecewise routine is dropped (without_piecewise)."""
    if enforce_eager:
        return NONE
    level = _level(optimization_level)
    mode = given if given is not None else LEVEL_MODES[level]
    compiled = compilation_mode == VLLM_COMPILE if compilation_mode is not None else level > 0
    if not compiled and PIECEWISE in _ROUTINES[mode]:
        return NONE if mode == PIECEWISE else "full_decode_only"
    return mode


def eager_forward(compilation_mode: str | None, optimization_level: int | None, enforce_eager: bool) -> bool:
    """Whether vLLM runs the model as eager PyTorch, not compiled: under --enforce-eager (which sets
    compilation mode NONE and cudagraph mode NONE, vllm/config/vllm.py), compilation mode none,
    or -O0 (whose compilation mode is none)."""
    if enforce_eager:
        return True
    if compilation_mode is not None:
        return compilation_mode == COMPILATION_NONE
    return _level(optimization_level) == 0


def _level(optimization_level: int | None) -> int:
    return DEFAULT_LEVEL if optimization_level is None else optimization_level


def capture_sizes(
    *,
    given: tuple[int, ...] | None,
    given_max: int | None,
    max_num_seqs: int,
    max_num_batched_tokens: int,
    blackwell: bool,
    decode_query_len: int = 1,
) -> tuple[int, ...]:
    """The batch sizes captured (VllmConfig._set_cudagraph_sizes): the given ones up to
    max_num_batched_tokens; else 1, 2, 4, multiples of 8 below 256 and of 16 from 256, up to
    --max-cudagraph-capture-size (default min(2 × max_num_seqs × decode_query_len, 512), 1024 on
    Blackwell) and max_num_batched_tokens, plus max_num_batched_tokens and max_num_seqs (a
    decode batch) where they fit. Speculative decoding's wider decode batches (decode_query_len
    > 1) are not modelled: 1."""
    mnbt = max_num_batched_tokens
    if given is not None:
        sizes = sorted({s for s in given if s <= mnbt})
        if given_max is not None and sizes and given_max != sizes[-1]:
            raise InvalidInput(
                "max_cudagraph_capture_size",
                f"{given_max} is not the largest of cudagraph_capture_sizes ({sizes[-1]}): vLLM raises",
            )
        return tuple(sizes)
    decode: list[int] = []
    ceiling = given_max
    if ceiling is None:
        platform_max = BLACKWELL_MAX_GRAPH_SIZE if blackwell else DEFAULT_MAX_GRAPH_SIZE
        ceiling = min(max_num_seqs * decode_query_len * 2, platform_max)
        if max_num_seqs <= ceiling:
            decode = [max_num_seqs]
    ceiling = min(mnbt, ceiling)
    count = 3 + len(range(8, min(ceiling + 1, 256), 8)) + len(range(256, ceiling + 1, 16))
    if count > MAX_CUDAGRAPH_CAPTURE_SIZES:  # checked before the list is built: it would be huge
        raise InvalidInput(
            "max_cudagraph_capture_size",
            f"{ceiling:,} (with max_num_batched_tokens {mnbt:,}) makes vLLM capture {count:,} batch "
            f"sizes, one CUDA graph each; kvplan takes at most {MAX_CUDAGRAPH_CAPTURE_SIZES:,}, as "
            "for cudagraph_capture_sizes: give a smaller maximum or the sizes themselves",
        )
    out = [s for s in (1, 2, 4) if s <= ceiling]
    if ceiling >= 8:
        out += range(8, min(ceiling + 1, 256), 8)
    if ceiling >= 256:
        out += range(256, ceiling + 1, 16)
    if mnbt <= ceiling:
        out.append(mnbt)
    out += [s for s in decode if s <= mnbt]
    return tuple(sorted(set(out)))


def graphs(mode: str, sizes: tuple[int, ...], max_num_seqs: int, decode_query_len: int = 1) -> Graphs:
    """The graphs captured (initialize_cudagraph_keys): a mixed-batch graph a size unless the
    mixed routine is none; with a separate FULL decode routine, a decode graph a size from
    decode_query_len to decode_query_len × max_num_seqs. No LoRA (one case)."""
    if mode == NONE:
        return Graphs(mode=mode, sizes=(), mixed_graphs=0, decode_graphs=0)
    decode_routine, mixed_routine = _ROUTINES[mode]
    mixed = len(sizes) if mixed_routine != NONE else 0
    separate = mode in ("full_decode_only", "full_and_piecewise")  # CUDAGraphMode.separate_routine
    top = decode_query_len * max_num_seqs
    decode = sum(decode_query_len <= s <= top for s in sizes) if separate and decode_routine == FULL else 0
    return Graphs(mode=mode, sizes=sizes, mixed_graphs=mixed, decode_graphs=decode)


__all__ = ["ROUTINES", "Graphs", "capture_sizes", "cudagraph_mode", "eager_forward", "graphs"]
