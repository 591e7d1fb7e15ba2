"""A start-up that failed, as the log says it did: what failed, in vLLM's or torch's words and
figures, and the line. The first cause printed is the failure (a negative KV memory comes before
the ValueError it leads to); a bare "failed to start" is the failure only when no cause is printed."""

from __future__ import annotations

import re

import msgspec

# The kinds, most specific first.
CUDA_OUT_OF_MEMORY = "cuda_out_of_memory"  # torch.OutOfMemoryError while profiling or capturing
NEGATIVE_KV_MEMORY = "negative_kv_memory"  # Available KV cache memory: -2.14 GiB
NO_KV_MEMORY = "no_kv_memory"  # ValueError: No available memory for the cache blocks.
MAX_LEN_OVER_KV_TOKENS = "max_model_len_over_kv_capacity"  # V0: … larger than … stored in KV cache (N)
KV_NEEDED_OVER_AVAILABLE = "kv_needed_over_available"  # V1: … (X GiB KV cache is needed, …
ENGINE_FAILED = "engine_failed_to_start"  # EngineCore failed to start. / Engine core initialization failed.


class Failure(msgspec.Struct, frozen=True, kw_only=True):
    """The engine did not start: `kind` (one of the kinds above), `detail` (what the log says, with
    its figures), `line` (1-based)."""

    kind: str
    detail: str
    line: int


_N = r"-?\d[\d,]{0,20}(?:\.\d{1,12})?"
# (kind, pattern, how to say it): the groups fill the sentence.
_CAUSES: tuple[tuple[str, re.Pattern[str], str], ...] = tuple(
    (kind, re.compile(pattern), say)
    for kind, pattern, say in (
        (CUDA_OUT_OF_MEMORY, r"CUDA out of memory\. Tried to allocate (" + _N + r" ?[GM]iB)",
         "CUDA ran out of memory (tried to allocate {0})"),
        (NEGATIVE_KV_MEMORY, r"Available KV cache memory: (-" + _N + r") ?GiB",
         "the KV cache's memory is negative ({0} GiB): weights, activation and non-torch memory "
         "exceed the memory requested"),
        (NEGATIVE_KV_MEMORY, r"the rest of the memory reserved for KV Cache is (-" + _N + r") ?GiB",
         "the KV cache's memory is negative ({0} GiB): weights, activation and non-torch memory "
         "exceed the memory requested"),
        (NEGATIVE_KV_MEMORY, r"kv_cache_size=(-" + _N + r") ?GiB",
         "the KV cache's memory is negative ({0} GiB)"),
        (KV_NEEDED_OVER_AVAILABLE,
         r"max seq len \((" + _N + r")\), \(?(" + _N + r") GiB KV cache is needed, which is larger than "
         r"the available KV cache memory \((" + _N + r") GiB\)",
         "one request of max_model_len {0} needs {1} GiB of KV cache, more than the {2} GiB available"),
        (KV_NEEDED_OVER_AVAILABLE,
         r"(" + _N + r") GiB KV cache is needed, which is larger than the available KV cache memory "
         r"\((" + _N + r") GiB\)",
         "one request of max_model_len needs {0} GiB of KV cache, more than the {1} GiB available"),
        (MAX_LEN_OVER_KV_TOKENS,
         r"max seq len \((" + _N + r")\) is larger than the maximum number of tokens that can be stored "
         r"in KV cache \((" + _N + r")\)",
         "max_model_len {0} is more than the {1} tokens the KV cache holds"),
        (NO_KV_MEMORY, r"(No available memory for the cache blocks)",
         "no memory is left for the KV cache's blocks"),
        # V0 (executor_base.py / gpu_executor.py) prints the blocks it found before it raises.
        (NO_KV_MEMORY, r"# (?:GPU|CUDA|cuda|gpu) blocks: (0),",
         "no memory is left for the KV cache's blocks ({0} GPU blocks)"),
        (ENGINE_FAILED, r"(EngineCore failed to start|Engine core initialization failed|"
         r"WorkerProc failed to start|Engine process failed to start|EngineCore hit an exception)",
         "the engine did not start ({0})"),
    )
)  # fmt: skip
CUES = (
    "out of memory",
    "KV cache",
    "KV Cache",
    "kv_cache_size",
    "cache blocks",
    "failed",
    "blocks: 0,",
    "hit an exception",
)


def failure_in(line: str, number: int) -> Failure | None:
    """The failure this line reports, if any."""
    if not any(cue in line for cue in CUES):
        return None
    for kind, pattern, say in _CAUSES:
        m = pattern.search(line)
        if m is not None:
            return Failure(kind=kind, detail=say.format(*m.groups()), line=number)
    return None


def first_cause(found: list[Failure]) -> Failure | None:
    """The failure to report: the first cause printed, else the first "failed to start"."""
    causes = [f for f in found if f.kind != ENGINE_FAILED]
    if causes:
        return causes[0]
    return found[0] if found else None
