"""Hub model references: `org/name` or `org/name@revision`, validated by the Hub's rules before
any request is made."""

from __future__ import annotations

import re
from typing import NamedTuple

from huggingface_hub.errors import HFValidationError
from huggingface_hub.utils import validate_repo_id

from kvplan.core.errors import InvalidInput

# A pinned revision: a full commit sha, whose answers never change.
COMMIT_SHA = re.compile(r"[0-9a-f]{40}")
# Branch and tag names as git allows them, bounded.
_REVISION = re.compile(r"[A-Za-z0-9][A-Za-z0-9._/\-]{0,254}")


class HubRef(NamedTuple):
    repo_id: str
    revision: str  # "main" when not given
    explicit_revision: bool

    @property
    def pinned(self) -> bool:
        return COMMIT_SHA.fullmatch(self.revision) is not None


def looks_like_hub_id(model: str) -> bool:
    return "/" in model


def parse_hub_ref(model: str, field: str = "model") -> HubRef:
    """`org/name[@revision]` → a validated reference; InvalidInput naming the field otherwise."""
    repo_id, at, revision = model.partition("@")
    try:
        validate_repo_id(repo_id)
    except HFValidationError as e:
        raise InvalidInput(field, f"{repo_id!r} is not a Hugging Face repo id: {e}") from None
    if repo_id.count("/") != 1:
        raise InvalidInput(field, f"{repo_id!r} is not a Hugging Face repo id (org/name)")
    if at and (not _REVISION.fullmatch(revision) or ".." in revision):
        raise InvalidInput(field, f"revision {revision!r} is not a branch, tag or commit sha")
    return HubRef(repo_id, revision or "main", bool(at))
