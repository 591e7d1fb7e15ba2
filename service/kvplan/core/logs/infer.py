"""What a start-up log implies but does not state as a setting, each with how it was inferred and
the line: the parallel layout (from the engine's settings, `world_size`, and the worker tags and
rank lines of the processes that printed), the engine (V0 or V1) and its version range (from the
banner, the engine line, or the line formats and source line numbers), the GPU and its memory (from
a printed total and name), and the model (from the engine line, the arguments, the command, the
loader's line).

A printed setting beats a count: a count of the ranks seen is only a lower bound (a paste is often
rank 0's lines alone) and `how` says so."""

from __future__ import annotations

import re

import msgspec

from ..units import GiB
from .figure import Figure


class Inference(msgspec.Struct, frozen=True, kw_only=True):
    """One input of a plan the log implies. `name` is a /v1/budget field (tensor_parallel_size,
    pipeline_parallel_size, data_parallel_size, gpu_memory_bytes, model) or `engine` (V0/V1, the
    version range in `how`) or `gpu` (the name printed); `line` the 1-based line it rests on."""

    name: str
    value: int | str
    how: str
    line: int


_TAG_NUMBER = re.compile(r"(TP|PP|DP|rank=)(\d{1,4})")
_TEXT_RANK = re.compile(r"\b(TP|PP|DP|tp|pp|dp)[ _]rank[=: ]{1,3}(\d{1,4})")
# Where V0 and V1 print from (vllm/worker/, vllm/executor/ against vllm/v1/): a line's file or wording.
_V0 = re.compile(
    r"(?<!\w)(?:worker|model_runner|executor_base|gpu_executor|distributed_gpu_executor|ray_gpu_executor|"
    r"multiproc_gpu_executor|llm_engine)\.py:\d{1,5}|# (?:GPU|CUDA|cuda) blocks: |"
    r"Memory profiling results: total_gpu_memory=|VllmWorkerProcess|"
    # V0's worker.py raise_if_cache_size_invalid (V1 words its check otherwise), and its traceback.
    r"is larger than the maximum number of tokens that can be stored in KV cache|"
    r"vllm/worker/worker\.py\""
)
_V1 = re.compile(
    r"(?<!\w)(?:gpu_worker|gpu_model_runner|kv_cache_utils|kv_cache_planning|core|core_client|"
    r"multiproc_executor)\.py:\d{1,5}|v1/|EngineCore|Worker_(?:TP|PP|DP)|VllmWorker rank=|"
    r"KV cache size: [\d,]{1,20} tokens|"
    r"Available KV cache memory"
)
_SOURCE_LINE = re.compile(
    r"(?<![\w.])((?:gpu_)?(?:worker|model_runner)|executor_base|kv_cache_utils|gpu_executor)\.py:(\d{1,5})"
)
# Source lines whose release is known: a log that printed its version printed this line there, or
# vLLM 0.33.0's source (/tmp/flags-vllm) has the call there.
ANCHORS: dict[str, str] = {
    "worker.py:267": "0.8.2", "model_runner.py:1146": "0.8.2", "worker.py:287": "0.8.5.post1",
    "model_runner.py:1140": "0.8.5.post1", "worker.py:295": "0.10.0 (V0)", "gpu_worker.py:456": "0.18.0",
    "kv_cache_utils.py:1316": "0.18.0", "gpu_model_runner.py:4566": "0.18.0", "gpu_worker.py:424": "0.19.0",
    "gpu_worker.py:435": "0.19.0", "gpu_worker.py:436": "0.19.0", "gpu_worker.py:597": "0.19.0",
    "kv_cache_utils.py:1319": "0.19.0", "kv_cache_utils.py:1324": "0.19.0",
    "gpu_model_runner.py:4820": "0.19.0", "gpu_model_runner.py:5955": "0.19.0",
    "gpu_model_runner.py:6046": "0.19.0", "gpu_worker.py:772": "0.33.0", "kv_cache_utils.py:1147": "0.33.0",
    "gpu_model_runner.py:5088": "0.33.0",
}  # fmt: skip
# Wordings that belong to a range of releases.
_WORDINGS: tuple[tuple[re.Pattern[str], str], ...] = tuple(
    (re.compile(p), say)
    for p, say in (
        (r"Memory profiling results: total_gpu_memory=", "the one-line profiling summary of vLLM 0.6.4"),
        (
            r"the current vLLM instance can use total_gpu_memory",
            "the profiling summary of vLLM 0.6.5 to 0.10",
        ),
        (r"Loading model weights took [\d.]{1,12} GB", "the weights line of vLLM 0.4 to 0.7"),
        (r"# GPU blocks: ", "the V0 block line of vLLM 0.4 to 0.6 (gpu_executor.py)"),
        (r"# (?:cuda|CUDA) blocks: ", "the V0 block line of vLLM 0.7 to 0.10 (executor_base.py)"),
        (r"GiB for consumed memory \(weights \+ non-torch\)", "the start-up summary of vLLM 0.33"),
        (r"GiB for weight, [\d.]{1,12} GiB for peak activation", "the start-up summary of vLLM 0.10 to 0.2x"),
        (r"KV cache size: [\d,]{1,20} tokens, Maximum concurrency", "vLLM 0.33's one-line capacity"),
    )
)


class Evidence:
    """What the lines say of the layout and the engine, gathered while the log is read (a few
    sets and counters, bounded by the distinct values seen)."""

    def __init__(self) -> None:
        self.ranks: dict[str, dict[int, int]] = {"TP": {}, "PP": {}, "DP": {}, "rank=": {}}
        # Axes a Worker tag names: vLLM adds _TPn, _PPn, _DPn to a worker's name only when that
        # size is over 1 (v1/executor/multiproc_executor.py, ray_utils.py).
        self.tagged: set[str] = set()
        self.processes: dict[str, int] = {}  # worker pid(@ip) → first line
        self.process_kind = ""
        self.v0: tuple[int, str] | None = None
        self.v1: tuple[int, str] | None = None
        self.anchors: dict[str, int] = {}
        self.wordings: dict[str, int] = {}

    def see(self, line: str, number: int, rank: str, process: str) -> None:
        """Take note of one (cleaned) line."""
        for m in _TAG_NUMBER.finditer(rank):
            self.ranks[m.group(1)].setdefault(int(m.group(2)), number)
            if rank.startswith("Worker_") or (m.group(1) == "DP" and m.group(2) != "0"):
                self.tagged.add(m.group(1))
        for m in _TEXT_RANK.finditer(line[:2000]):
            self.ranks[m.group(1).upper()].setdefault(int(m.group(2)), number)
        if process and len(self.processes) < 1024:
            self.processes.setdefault(process, number)
            self.process_kind = rank
        if (
            self.v0 is None
            and (
                "py:" in line
                or "blocks" in line
                or "Worker" in line
                or "KV cache" in line
                or "vllm/worker/" in line
            )
            and (m0 := _V0.search(line))
        ):
            self.v0 = (number, m0.group(0))
        if self.v1 is None and (m1 := _V1.search(line)):
            self.v1 = (number, m1.group(0))
        if len(self.anchors) < 64:
            for m in _SOURCE_LINE.finditer(line[:2000]):
                key = f"{m.group(1)}.py:{m.group(2)}"
                if key in ANCHORS:
                    self.anchors.setdefault(key, number)
        if len(self.wordings) < 16 and (
            "GiB" in line or "GB" in line or "blocks" in line or "Memory" in line
        ):
            for pattern, say in _WORDINGS:
                if say not in self.wordings and pattern.search(line):
                    self.wordings[say] = number


def _where(f: Figure) -> str:
    if "with config:" in f.text or "LLM engine" in f.text:
        return "the engine-config line"
    if "non-default args" in f.text:
        return "non-default args"
    if "--" in f.text or "vllm serve" in f.text:
        return "the command line"
    if "server version" in f.text or "█" in f.text:
        return "vLLM's banner"
    return "a line of the log"


# Where a setting is printed, most authoritative first.
_PLACES = (
    "the engine-config line",
    "non-default args",
    "the command line",
    "vLLM's banner",
    "a line of the log",
)


def _first_printed(found: list[Figure]) -> Figure | None:
    """Of these figures, the one printed in the most authoritative place (_PLACES)."""
    return min(found, key=lambda f: _PLACES.index(_where(f))) if found else None


def _printed(figures: tuple[Figure, ...], name: str) -> Figure | None:
    """The setting as printed: the engine-config line first, then the arguments, then any line."""
    return _first_printed([f for f in figures if f.name == name and f.rank != "metrics"])


def _from_ranks(name: str, key: str, ev: Evidence) -> Inference | None:
    """A lower bound from the ranks seen: the highest rank + 1 (2 at least when a worker's tag
    names the axis, which vLLM does only when that size is over 1)."""
    seen = ev.ranks[key]
    if not seen or (key not in ev.tagged and max(seen) == 0):
        return None
    value = max(max(seen) + 1, 2 if key in ev.tagged else 1)
    how = (
        f"a lower bound: lines of {key} rank{'s' if len(seen) > 1 else ''} "
        f"{', '.join(str(r) for r in sorted(seen)[:8])} were seen"
        + (f" (a _{key}n tag is printed only when the size is over 1)" if key in ev.tagged else "")
        + "; a paste may hold some ranks' lines only: set it if the engine ran on more"
    )
    return Inference(name=name, value=value, line=min(seen.values()), how=how)


def _from_processes(ev: Evidence, stages: int) -> Inference | None:
    """A lower bound from the worker processes that printed (VllmWorkerProcess, RayWorkerWrapper,
    VllmWorker rank=N), read as tensor-parallel ranks."""
    if not (ev.ranks["rank="] or ev.processes):
        return None
    # V0's driver worker runs in the engine's process, untagged; V1's Ray workers are all actors.
    # A worker tagged rank=0 is the driver itself (V1's VllmWorker rank=N).
    driver = 0 if ev.process_kind == "RayWorkerWrapper" and ev.v1 is not None and ev.v0 is None else 1
    if 0 in ev.ranks["rank="]:
        driver = 0
    workers = max(len(ev.processes) + driver, max(ev.ranks["rank="], default=0) + 1)
    first = min([*ev.processes.values(), *ev.ranks["rank="].values()])
    how = (
        f"a lower bound: {workers} worker processes printed ({ev.process_kind or 'VllmWorker rank='} tags"
        + (", the driver counted as rank 0" if driver else "")
        + f"){f' over {stages} pipeline stages' if stages > 1 else ''}, read as tensor-parallel ranks"
    )
    return Inference(name="tensor_parallel_size", value=max(1, workers // stages), line=first, how=how)


def _from_world_size(w: Figure, stages: int, replicas: int, seen: int) -> Inference:
    """TP from the distributed world: world_size = TP × PP (× DP in V1, distributed/parallel_state.py)."""
    value = max(1, int(w.value) // (stages * replicas), seen)
    how = f"world_size={w.value} printed (TP × PP × DP), with PP {stages} and DP {replicas}: TP = {value}"
    if seen == value and int(w.value) // (stages * replicas) < seen:
        how += f" (TP ranks up to {seen - 1} were seen)"
    return Inference(name="tensor_parallel_size", value=value, line=w.line, how=how)


def _layout(figures: tuple[Figure, ...], ev: Evidence) -> list[Inference]:
    """TP, PP, DP: a printed setting, else (TP) world_size, else the ranks seen (a lower bound)."""
    out: list[Inference] = []
    sizes = {"PP": 1, "DP": 1}
    for name, key in (
        ("pipeline_parallel_size", "PP"),
        ("data_parallel_size", "DP"),
        ("tensor_parallel_size", "TP"),
    ):
        f = _printed(figures, name)
        w = _printed(figures, "world_size") if key == "TP" else None
        found: Inference | None
        if f is not None and isinstance(f.value, int):
            found = Inference(
                name=name, value=f.value, line=f.line, how=f"printed on {_where(f)}: {name}={f.value}"
            )
        elif w is not None and isinstance(w.value, int):
            found = _from_world_size(w, sizes["PP"], sizes["DP"], max(ev.ranks["TP"], default=-1) + 1)
        else:
            found = _from_ranks(name, key, ev) or (_from_processes(ev, sizes["PP"]) if key == "TP" else None)
        if found is not None:
            out.append(found)
            if key in sizes and isinstance(found.value, int):
                sizes[key] = found.value
    return out


def _engine(figures: tuple[Figure, ...], ev: Evidence) -> list[Inference]:
    """V0 or V1, and the version range the lines' wording and source lines point to."""
    printed = _printed(figures, "engine")
    version = _printed(figures, "version")
    notes = [f"{say} (line {n})" for say, n in ev.wordings.items()][:3]
    notes += [f"{key} is where vLLM {ANCHORS[key]} prints it (line {n})" for key, n in ev.anchors.items()][:3]
    tail = ("; " + "; ".join(notes)) if notes else ""
    if printed is not None:
        return [Inference(name="engine", value=str(printed.value), line=printed.line,
                          how=f"printed: 'Initializing a {printed.value} LLM engine'{tail}")]  # fmt: skip
    if version is not None:
        tail = f"; vLLM {version.value} printed (line {version.line})" + tail
    if ev.v0 is not None and ev.v1 is None:
        return [Inference(name="engine", value="V0", line=ev.v0[0],
                          how=f"V0's line format ('{ev.v0[1]}'), no V1 line{tail}")]  # fmt: skip
    if ev.v1 is not None and ev.v0 is None:
        return [Inference(name="engine", value="V1", line=ev.v1[0],
                          how=f"V1's line format ('{ev.v1[1]}'), no V0 line{tail}")]  # fmt: skip
    if version is not None and (nums := re.match(r"(\d+)\.(\d+)", str(version.value))):
        kind = "V0" if (int(nums.group(1)), int(nums.group(2))) < (0, 8) else "V1"
        why = (
            "before 0.8 vLLM ran V0 only"
            if kind == "V0"
            else "V1 is the default from 0.8 (the only engine from 0.11)"
        )
        return [
            Inference(name="engine", value=kind, line=version.line, how=f"the version printed: {why}{tail}")
        ]
    if ev.v0 is not None and ev.v1 is not None:
        return [Inference(name="engine", value="V1", line=ev.v1[0],
                          how=f"lines of both formats ('{ev.v0[1]}', '{ev.v1[1]}'): "
                              f"read as V1{tail}")]  # fmt: skip
    return []


def _gpu(figures: tuple[Figure, ...]) -> list[Inference]:
    """The GPU's name as printed, and its memory: the total printed, else the memory requested
    divided by the utilization printed on the same line."""
    out: list[Inference] = []
    name = next((f for f in figures if f.name == "gpu_name"), None)
    if name is not None:
        out.append(
            Inference(name="gpu", value=str(name.value), line=name.line, how="the GPU's name as printed")
        )
    total = next((f for f in figures if f.name == "gpu_total_gib"), None)
    if total is not None and isinstance(total.value, float | int) and total.value > 0:
        half = 0.5 * 10**-total.decimals if total.decimals else 0.5
        out.append(Inference(name="gpu_memory_bytes", value=round(total.value * GiB), line=total.line,
                             how=f"the GPU's total memory printed: {total.value} GiB "
                                 f"(± {half:g} GiB, its rounding)"))  # fmt: skip
        return out
    req = next((f for f in figures if f.name == "requested_gib"), None)
    util = next(
        (f for f in figures if f.name == "gpu_memory_utilization" and f.line == (req.line if req else -1)),
        None,
    )
    if (
        req is not None
        and util is not None
        and isinstance(req.value, float | int)
        and isinstance(util.value, float | int)
        and util.value > 0
    ):
        total_gib = req.value / util.value
        out.append(Inference(name="gpu_memory_bytes", value=round(total_gib * GiB), line=req.line,
                             how=f"requested {req.value} GiB ÷ gpu_memory_utilization {util.value} "
                                 f"= {total_gib:.2f} GiB"))  # fmt: skip
    return out


def _model(figures: tuple[Figure, ...]) -> list[Inference]:
    """The model as the engine-config line, the arguments, the command or the loader names it."""
    f = _first_printed([f for f in figures if f.name == "model" and isinstance(f.value, str) and f.value])
    if f is None:
        return []
    where = "the model loader's line" if "Starting to load model" in f.text else _where(f)
    value = str(f.value)
    how = f"named on {where}"
    if value.startswith(("/", "./", "../", "~")) or re.match(r"[A-Za-z]:\\", value):
        last = value.rstrip("/\\").rsplit("/", 1)[-1]
        how += f": a local path, its last component '{last}' names the model"
    return [Inference(name="model", value=value, line=f.line, how=how)]


def _version(figures: tuple[Figure, ...], ev: Evidence) -> list[Inference]:
    """The release the log's source line numbers point to, when it prints no version and every
    line whose release is known (ANCHORS) names the same one."""
    if _printed(figures, "version") is not None or not ev.anchors:
        return []
    releases = {ANCHORS[key].split(" ")[0] for key in ev.anchors}
    if len(releases) != 1:
        return []
    key, line = next(iter(ev.anchors.items()))
    release = releases.pop()
    return [Inference(name="version", value=release, line=line,
                      how=f"{key} is where vLLM {release} prints it (no version printed)")]  # fmt: skip


def infer(figures: tuple[Figure, ...], ev: Evidence) -> tuple[Inference, ...]:
    """Every inference the log supports, each once."""
    return (
        *_layout(figures, ev), *_engine(figures, ev), *_version(figures, ev), *_gpu(figures), *_model(figures)
    )  # fmt: skip
