"""Loads presets from data files. This is the shell around the core: it reads files,
then hands plain values to `kvplan.core.model.geometry`.

Layout of a presets directory (built-in: `presets/data`; extra: $KVPLAN_EXTRA_PRESETS):
    models/*.json   {"id", "name", "hf_repo", "aliases", "params": {...}, "config": {config.json}}
    gpus.toml       [[gpu]] tables: id, name, vendor, memory_bytes, memory_source, nominal,
                    and optionally vllm_memory_bytes, vllm_memory_source, and a [gpu.specs]
                    table (core/perf/specs.py GpuSpecs) for the step-time model
    perf/aic-*.json the step-time model's fitted tables (presets/perf.py reads them)
"""

from __future__ import annotations

import difflib
import hashlib
import json
import math
import os
import tomllib
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from typing import Any

import msgspec
from msgspec.structs import replace

from kvplan.core.errors import InvalidInput, NoGpuSpecs, UnknownPreset
from kvplan.core.hf.reader import from_hf_config
from kvplan.core.model.geometry import Geometry
from kvplan.core.perf.specs import GpuSpecs
from kvplan.core.validate import integer

BUILTIN_DIR = Path(__file__).parent / "data"
EXTRA_ENV = "KVPLAN_EXTRA_PRESETS"


class PresetError(Exception):
    """A malformed preset file; names the file and the field. Stops start-up."""

    def __init__(self, path: Path | str, field: str, reason: str) -> None:
        super().__init__(f"{path}: {field}: {reason}")
        self.path = str(path)
        self.field = field
        self.reason = reason


@dataclass(frozen=True, slots=True)
class ModelPreset:
    id: str
    name: str
    hf_repo: str
    aliases: tuple[str, ...]
    geometry: Geometry
    params_source: str
    config_source: str
    origin: str


class GpuInfo(msgspec.Struct, kw_only=True):
    id: str
    name: str
    vendor: str
    memory_bytes: int
    memory_source: str
    nominal: bool
    # What vLLM sees of it (torch.cuda.mem_get_info's total, below the driver's figure), from
    # vLLM's own start-up logs; the memory model budgets against it. None where no log says.
    vllm_memory_bytes: int | None = None
    vllm_memory_source: str = ""


class GpuPreset(GpuInfo, frozen=True, kw_only=True):
    """A GPU preset: what the catalog shows of it (GpuInfo, with what vLLM sees of its memory)
    and the file it came from, with its peak figures for the step-time model (None: not timed)."""

    origin: str
    specs: GpuSpecs | None = None


class Registry:
    """Immutable after construction; lookups are case-insensitive and accept aliases."""

    def __init__(self, models: dict[str, ModelPreset], gpus: dict[str, GpuPreset], version: str):
        self.models = MappingProxyType(dict(sorted(models.items())))
        self.gpus = MappingProxyType(dict(gpus))
        self.version = version
        index: dict[str, str] = {}
        for m in models.values():
            for key in (m.id, m.name, m.hf_repo, *m.aliases):
                index[key.lower()] = m.id
        self._model_index = MappingProxyType(index)
        self._gpu_index = MappingProxyType(
            {g.id.lower(): g.id for g in gpus.values()} | {g.name.lower(): g.id for g in gpus.values()}
        )

    def model(self, name: str, field: str = "model") -> ModelPreset:
        mid = self._model_index.get(name.lower())
        if mid is None:
            raise UnknownPreset(
                field, "model preset", name, tuple(self.models), _suggest(name, self._model_index)
            )
        return self.models[mid]

    def gpu_specs(self, name: str, field: str = "gpu") -> GpuSpecs:
        """The step-time model's figures of a GPU preset; NoGpuSpecs (naming the GPUs that have
        them) where gpus.toml gives none."""
        preset = self.gpu(name, field)
        if preset.specs is None:
            raise NoGpuSpecs(preset.id, tuple(g.id for g in self.gpus.values() if g.specs), field)
        return preset.specs

    def has_model(self, name: str) -> bool:
        return name.lower() in self._model_index

    def gpu(self, name: str, field: str = "gpu") -> GpuPreset:
        gid = self._gpu_index.get(name.lower())
        if gid is None:
            raise UnknownPreset(field, "GPU preset", name, tuple(self.gpus), _suggest(name, self._gpu_index))
        return self.gpus[gid]


def _suggest(name: str, index: MappingProxyType[str, str]) -> tuple[str, ...]:
    """Names that contain what was asked (h100 → h100-sxm-80gb), then difflib's close matches."""
    q = name.lower().strip()
    contains = sorted(k for k in index if q and q in k) if len(q) >= 2 else []
    close = [*contains, *difflib.get_close_matches(q, list(index), n=5, cutoff=0.6)]
    out: list[str] = []
    for c in close:
        if index[c] not in out:
            out.append(index[c])
    return tuple(out[:3])


def _count(v: object, path: Path, field: str, reason: str, maximum: float = math.inf) -> int:
    """A preset file's count from 1 to maximum, by the one integer rule (core/validate.py)."""
    try:
        return integer(v, field, maximum, 1)
    except InvalidInput:
        raise PresetError(path, field, reason) from None


def _require(doc: dict[str, Any], key: str, kind: type, path: Path) -> Any:
    v = doc.get(key)
    if not isinstance(v, kind) or (isinstance(v, bool) and kind is not bool):
        raise PresetError(path, key, f"required, of type {kind.__name__}")
    return v


def _load_model(path: Path, raw: bytes) -> ModelPreset:
    """One model preset from its JSON file, every field checked and named in a PresetError, so a bad data
    file fails the start-up with its path and field rather than a request later."""
    try:
        doc = json.loads(raw)
    except ValueError as e:
        raise PresetError(path, "(file)", f"not valid JSON: {e}") from None
    if not isinstance(doc, dict):
        raise PresetError(path, "(file)", "must be a JSON object")
    mid = _require(doc, "id", str, path)
    name = doc.get("name", mid)
    config = _require(doc, "config", dict, path)
    params = doc.get("params") or {}
    if not isinstance(params, dict):
        raise PresetError(path, "params", "must be an object")
    for key in ("total", "active", "expert"):
        v = params.get(key)
        if v is not None:
            _count(v, path, f"params.{key}", "must be a positive integer")
    aliases = doc.get("aliases", [])
    if not isinstance(aliases, list) or not all(isinstance(a, str) for a in aliases):
        raise PresetError(path, "aliases", "must be a list of strings")
    try:
        geo = from_hf_config(config, name=mid)
    except InvalidInput as e:
        raise PresetError(path, f"config.{e.field}", e.reason) from None
    if params.get("total") is not None:
        # Published counts: the weights are those parameters × the weight dtype, as documented
        # per preset (the quantization fallback is for configs without counts of their own).
        geo = replace(
            geo,
            params_total=params["total"],
            params_active=params.get("active"),
            params_expert=params.get("expert"),
            params_estimated=False,
            quant=None,
        )
        params_source = str(params.get("source", ""))
    elif geo.params_total is not None:
        params_source = "estimated from config.json (kvplan.core.hf.params)"
    else:
        raise PresetError(path, "params.total", "required: the config is too sparse to estimate it")
    return ModelPreset(
        id=mid,
        name=str(name),
        hf_repo=str(doc.get("hf_repo", "")),
        aliases=tuple(aliases),
        geometry=geo,
        params_source=params_source,
        config_source=str(doc.get("config_source", "")),
        origin=str(path),
    )


def _load_gpus(path: Path, raw: bytes) -> list[GpuPreset]:
    """Every GPU preset of gpus.toml, each entry checked the way _load_model checks a model."""
    try:
        doc = tomllib.loads(raw.decode())
    except (ValueError, UnicodeDecodeError) as e:
        raise PresetError(path, "(file)", f"not valid TOML: {e}") from None
    out = []
    for i, g in enumerate(doc.get("gpu", [])):
        where = f"gpu[{i}]"
        if not isinstance(g, dict):
            raise PresetError(path, where, "must be a table")
        for key, kind in (("id", str), ("name", str), ("memory_bytes", int)):
            v = g.get(key)
            if not isinstance(v, kind) or isinstance(v, bool):
                raise PresetError(path, f"{where}.{key}", f"required, of type {kind.__name__}")
        _count(g["memory_bytes"], path, f"{where}.memory_bytes", "must be positive")
        seen = g.get("vllm_memory_bytes")
        if seen is not None:
            reason = "must be an integer from 1 to memory_bytes"
            _count(seen, path, f"{where}.vllm_memory_bytes", reason, g["memory_bytes"])
        specs = g.get("specs")
        if specs is not None:
            try:
                specs = msgspec.convert(specs, GpuSpecs)
            except msgspec.ValidationError as e:
                raise PresetError(path, f"{where}.specs", str(e)) from None
        out.append(
            GpuPreset(
                id=g["id"],
                name=g["name"],
                vendor=str(g.get("vendor", "")),
                memory_bytes=g["memory_bytes"],
                memory_source=str(g.get("memory_source", "")),
                nominal=bool(g.get("nominal", False)),
                origin=str(path),
                vllm_memory_bytes=seen,
                vllm_memory_source=str(g.get("vllm_memory_source", "")),
                specs=specs,
            )
        )
    return out


def _files(root: Path) -> list[Path]:
    files = sorted((root / "models").glob("*.json")) if (root / "models").is_dir() else []
    files += sorted(root.glob("*.toml"))
    return files


def load_registry(extra_dir: str | Path | None = None, builtin_dir: Path = BUILTIN_DIR) -> Registry:
    """Read every preset file once; extra presets override built-in ids. `extra_dir` None reads
    $KVPLAN_EXTRA_PRESETS; an empty string means none."""
    if extra_dir is None:
        extra_dir = os.environ.get(EXTRA_ENV, "")
    roots = [builtin_dir]
    if extra_dir:
        extra = Path(extra_dir)
        if not extra.is_dir():
            raise PresetError(extra, EXTRA_ENV, "is not a directory")
        roots.append(extra)
    digest = hashlib.sha256()
    models: dict[str, ModelPreset] = {}
    gpus: dict[str, GpuPreset] = {}
    for root in roots:
        for path in _files(root):
            raw = path.read_bytes()
            digest.update(path.name.encode() + b"\0" + raw + b"\0")
            if path.suffix == ".json":
                m = _load_model(path, raw)
                models[m.id] = m
            else:
                for g in _load_gpus(path, raw):
                    gpus[g.id] = g
    return Registry(models, gpus, "reg-" + digest.hexdigest()[:12])
