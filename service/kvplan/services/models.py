"""A request's `model`, parsed once into a reference (ModelRef) that the Hub prefetch, the
resolution into a geometry, the answer cache and the labels all take: a preset (its id, name or
an alias), a Hub repository at a revision, or a model sent inline (a config.json or a geometry).
"""

from __future__ import annotations

import threading
from typing import Any, NamedTuple

import msgspec

from kvplan.core.errors import InvalidInput
from kvplan.core.hf.reader import from_hf_config, language_config
from kvplan.core.model.geometry import Geometry
from kvplan.hub import Hub as HubClient
from kvplan.hub import (
    HubError,
    HubModel,
    HubRef,
    ModelUnreadable,
    default_hub,
    looks_like_hub_id,
    parse_hub_ref,
)
from kvplan.presets import Registry
from kvplan.schemas import ModelSpec

from .inline import geometry_from_spec


class Preset(NamedTuple):
    """A model preset, named as the request named it (its id, its name or an alias)."""

    name: str


class Inline(NamedTuple):
    """A model sent in the request: a config.json (hf_config) or a geometry."""

    spec: ModelSpec


ModelRef = Preset | HubRef | Inline


def model_ref(registry: Registry, model: str | ModelSpec) -> ModelRef:
    """The one parse of a request's model. A string with a slash is a Hub id (`org/name` or
    `org/name@revision`, checked by the Hub's rules: InvalidInput naming `model` otherwise),
    unless it is a preset's alias and pins no revision: a preset answers offline."""
    if not isinstance(model, str):
        return Inline(model)
    if not looks_like_hub_id(model) or ("@" not in model and registry.has_model(model)):
        return Preset(model)
    return parse_hub_ref(model)


def hub_refs(refs: list[ModelRef]) -> set[HubRef]:
    return {r for r in refs if isinstance(r, HubRef)}


class Resolved:
    """A model as the core needs it, plus the label answers carry."""

    __slots__ = ("geometry", "hub", "label")

    def __init__(self, geometry: Geometry, label: str, hub: HubModel | None = None) -> None:
        self.geometry = geometry
        self.label = label
        self.hub = hub

    def labels(self) -> dict[str, Any]:
        """What an answer says about its model: the label, and for a Hub model the commit it read
        and whether that came from the cache because the Hub could not be asked."""
        if self.hub is None:
            return {"model": self.label}
        h = self.hub
        return {
            "model": self.label,
            "hub": {"repo_id": h.repo_id, "revision": h.revision, "sha": h.sha, "from_cache": h.from_cache},
        }


_hub_geometries: dict[str, Geometry] = {}
_HUB_GEOMETRIES_KEPT = 256
_hub_geometries_lock = threading.Lock()


def hub_geometry(hm: HubModel) -> Geometry:
    """The geometry of a Hub model at its commit (read once per commit), with the checkpoint's
    own weights."""
    geo = _hub_geometries.get(hm.label)
    if geo is None:
        try:
            geo = from_hf_config(hm.config, name=hm.label, quantization=hm.weights is None)
        except InvalidInput as e:  # the repo's config, not the request, is at fault: a 422
            raise ModelUnreadable(f"{hm.label}'s config.json: {e.field}: {e.reason}") from None
        if hm.weights is not None:
            geo = msgspec.structs.replace(geo, loaded_weights=hm.weights)
        with _hub_geometries_lock:  # the event loop and the heavy pool's threads both read models
            while len(_hub_geometries) >= _HUB_GEOMETRIES_KEPT:
                _hub_geometries.pop(next(iter(_hub_geometries)))
            _hub_geometries[hm.label] = geo
    return geo


def resolve(registry: Registry, ref: ModelRef, hub: HubClient | None = None) -> Resolved:
    """The model a reference names, as the core needs it. A Hub model comes from the Hub client's
    memory (the HTTP routes fetch it first, off the event loop)."""
    if isinstance(ref, Preset):
        preset = registry.model(ref.name)
        return Resolved(preset.geometry, preset.id)
    if isinstance(ref, HubRef):
        hm = (hub or default_hub()).resolve(ref)
        return Resolved(hub_geometry(hm), hm.label, hm)
    model = ref.spec
    given = (model.hf_config is not None) + (model.geometry is not None)
    if given != 1:
        raise InvalidInput("model", "give exactly one of hf_config or geometry (or a preset id string)")
    if model.hf_config is not None:
        name = model.name or str(model.hf_config.get("_name_or_path") or "custom")[:200]
        try:
            return Resolved(from_hf_config(model.hf_config, name=name), name)
        except InvalidInput as e:
            raise type(e)(f"model.hf_config.{e.field}", e.reason) from None
    assert model.geometry is not None
    return Resolved(geometry_from_spec(model.geometry, model.name), model.name or model.geometry.name)


def resolve_model(registry: Registry, model: str | ModelSpec, hub: HubClient | None = None) -> Resolved:
    """The model a request's `model` field names (parsed here: callers holding a ModelRef call
    `resolve`)."""
    return resolve(registry, model_ref(registry, model), hub)


def model_layers(registry: Registry, ref: ModelRef) -> int:
    """The layers a scenario's model has, read cheaply (before any per-layer work) to bound it."""
    if isinstance(ref, Preset):
        return registry.model(ref.name).geometry.num_layers
    if isinstance(ref, HubRef):
        return resolve(registry, ref).geometry.num_layers
    model = ref.spec
    if model.geometry is not None:
        return model.geometry.num_layers
    source = language_config(model.hf_config or {})
    n = source.get("num_hidden_layers")
    types = source.get("layer_types")
    counts = [n if type(n) is int else 0, len(types) if isinstance(types, list) else 0]
    per_layer = 2 if source.get("model_type") == "falcon_h1" else 1  # attention and Mamba in each
    return max(1, *counts) * per_layer


def cacheable(ref: ModelRef) -> bool:
    """An answer may be kept unless it names a Hub revision that can move (a branch such as main):
    the Hub client's own cache expires those; nor one read from the disk copy in an outage (it
    says so, and will not once the Hub is back)."""
    if not isinstance(ref, HubRef):
        return True
    try:
        found = default_hub().cached(ref, stale_ok=True)
    except Exception:
        return False
    return ref.pinned and found is not None and not found.from_cache


def hub_commit(ref: ModelRef) -> str:
    """The commit a Hub model's answer was computed at ("" for presets and inline models)."""
    if not isinstance(ref, HubRef):
        return ""
    try:
        found = default_hub().resolve(ref)  # pinned by the prefetch
    except HubError:
        return ""
    # The body says whether it came from the disk copy: so must its ETag.
    return f"{found.sha}{' from cache' if found.from_cache else ''}"
