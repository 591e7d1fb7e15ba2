"""The preset registry: model and GPU data files, loaded once, immutable, versioned by content."""

from .registry import GpuPreset, ModelPreset, PresetError, Registry, load_registry

__all__ = ["GpuPreset", "ModelPreset", "PresetError", "Registry", "load_registry"]
