"""Models named by their Hugging Face Hub id, read with huggingface_hub (the shell's I/O)."""

from .client import Hub, HubModel, HubSettings, cache_only, default_hub, pin, reset_default_hub
from .errors import (
    GatedModel,
    HubBadAnswer,
    HubError,
    HubUnavailable,
    ModelNotOnHub,
    ModelTooLarge,
    ModelUnreadable,
)
from .refs import HubRef, looks_like_hub_id, parse_hub_ref

__all__ = [
    "GatedModel",
    "Hub",
    "HubBadAnswer",
    "HubError",
    "HubModel",
    "HubRef",
    "HubSettings",
    "HubUnavailable",
    "ModelNotOnHub",
    "ModelTooLarge",
    "ModelUnreadable",
    "cache_only",
    "default_hub",
    "looks_like_hub_id",
    "parse_hub_ref",
    "pin",
    "reset_default_hub",
]
