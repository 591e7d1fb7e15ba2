"""What can go wrong reaching a model on the Hub. Each names the model; api/errors.py maps them to
HTTP (the CLI prints them)."""

from __future__ import annotations


class HubError(Exception):
    """Base: a Hub model could not be read. `field` is the request field that named it."""

    field = "model"

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class ModelNotOnHub(HubError):
    """The repo, or the revision, does not exist (or is private and the token cannot see it)."""


class GatedModel(HubError):
    """The repo is gated and the server's HF_TOKEN is missing or not granted access."""


class HubUnavailable(HubError):
    """The Hub did not answer in time, or offline mode with nothing cached: retry later."""

    retry_after_seconds = 30


class ModelTooLarge(HubError):
    """The repo's config or tensor headers exceed what kvplan reads for one model."""


class ModelUnreadable(HubError):
    """The repo has no config.json, or one that is not a JSON object."""


class HubBadAnswer(HubError):
    """The Hub answered, but not as the Hub does (a proxy's page, a truncated or odd JSON)."""

    retry_after_seconds = 30
