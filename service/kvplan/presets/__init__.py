"""The preset registry: model and GPU data files, loaded once, immutable, versioned by content."""

from .registry import GpuInfo, GpuPreset, ModelPreset, PresetError, Registry, load_registry

__all__ = ["GpuInfo", "GpuPreset", "ModelPreset", "PresetError", "Registry", "load_registry"]
