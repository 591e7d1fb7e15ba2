"""Models read from the Hugging Face Hub with huggingface_hub: the commit, config.json and the
safetensors headers (by HTTP range: never the weights). Answers are kept on disk beside the Hub
cache (so offline mode can serve them) and in process (bounded in bytes; revisions that can move,
such as `main`, expire). Concurrent requests for one repo and revision fetch once."""

from __future__ import annotations

import hashlib
import json
import os
import threading
import time
from concurrent.futures import Future
from contextvars import ContextVar
from pathlib import Path
from typing import Any

import httpx2
import msgspec
from huggingface_hub import HfApi, get_hf_file_metadata, hf_hub_download, hf_hub_url
from huggingface_hub.errors import (
    GatedRepoError,
    HfHubHTTPError,
    NotASafetensorsRepoError,
    OfflineModeIsEnabled,
    RemoteEntryNotFoundError,
    RepositoryNotFoundError,
    RevisionNotFoundError,
    SafetensorsParsingError,
)

from kvplan.core.geometry import language_config
from kvplan.core.weights import LoadedWeights, loaded_weights

from .errors import GatedModel, HubError, HubUnavailable, ModelNotOnHub, ModelTooLarge, ModelUnreadable
from .refs import HubRef

# Whether a lookup that misses the caches may ask the Hub. The HTTP service turns it off for the
# work of an answer (on the event loop or the heavy pool): it fetches first, in a pool of its own,
# so a model that was not fetched is a 503, never a network wait where none is allowed.
_may_fetch: ContextVar[bool] = ContextVar("kvplan_hub_may_fetch", default=True)


def cache_only() -> None:
    """From here on, in this context, Hub lookups answer from the caches or not at all."""
    _may_fetch.set(False)


class HubSettings(msgspec.Struct, frozen=True, kw_only=True):
    endpoint: str
    token: str | None
    cache_dir: str
    offline: bool
    timeout_seconds: float
    max_config_bytes: int
    max_tensors: int
    cache_bytes: int
    ttl_seconds: float
    # How long a failure (unknown repo, gated, unreachable) and an answer served from the disk
    # cache because the Hub could not be asked are kept before the Hub is asked again.
    retry_seconds: float

    @classmethod
    def from_env(cls) -> HubSettings:
        home = os.environ.get("HF_HOME") or os.path.join(os.path.expanduser("~"), ".cache", "huggingface")
        return cls(
            endpoint=(os.environ.get("HF_ENDPOINT") or "https://huggingface.co").rstrip("/"),
            token=os.environ.get("HF_TOKEN") or None,
            cache_dir=os.environ.get("HF_HUB_CACHE") or os.path.join(home, "hub"),
            offline=os.environ.get("HF_HUB_OFFLINE", "").lower() in ("1", "true", "yes", "on"),
            timeout_seconds=float(os.environ.get("KVPLAN_HUB_TIMEOUT_SECONDS", "10")),
            max_config_bytes=int(os.environ.get("KVPLAN_HUB_MAX_CONFIG_BYTES", str(1 << 20))),
            max_tensors=int(os.environ.get("KVPLAN_HUB_MAX_TENSORS", "200000")),
            cache_bytes=int(os.environ.get("KVPLAN_HUB_CACHE_BYTES", str(16 << 20))),
            ttl_seconds=float(os.environ.get("KVPLAN_HUB_TTL_SECONDS", "600")),
            retry_seconds=float(os.environ.get("KVPLAN_HUB_RETRY_SECONDS", "30")),
        )


class HubModel(msgspec.Struct, frozen=True, kw_only=True):
    """What kvplan reads of one repo at one commit."""

    repo_id: str
    revision: str
    sha: str
    config: dict[str, Any]
    weights: LoadedWeights | None
    # True when the answer came from the disk cache because the Hub could not be asked.
    from_cache: bool = False

    @property
    def label(self) -> str:
        return f"{self.repo_id}@{self.sha}"


class Hub:
    def __init__(self, settings: HubSettings) -> None:
        self.settings = settings
        self.api = HfApi(endpoint=settings.endpoint, token=settings.token or False)
        self._lock = threading.Lock()
        self._inflight: dict[tuple[str, str], Future[HubModel]] = {}
        self._memory: dict[tuple[str, str], tuple[float, int, HubModel | HubError]] = {}
        self._memory_bytes = 0
        self.fetches = 0  # Hub round trips started (for tests and metrics)

    # -- the one entry point ---------------------------------------------------------------------
    def resolve(self, ref: HubRef) -> HubModel:
        """The model at `ref`: from memory, else fetched once however many threads ask (unless
        this context is cache-only)."""
        key = (ref.repo_id, ref.revision)
        may_fetch = _may_fetch.get()
        with self._lock:
            # Without the network, an entry past its expiry still answers: the route refreshed
            # it a moment ago (hubfetch.prefetch), and it is the latest known.
            hit = self._fresh(key, stale_ok=not may_fetch)
            if hit is not None:
                return hit
            if not may_fetch:
                raise HubUnavailable(f"{ref.repo_id}@{ref.revision} was not fetched before the answer")
            future = self._inflight.get(key)
            owner = future is None
            if owner:
                future = self._inflight[key] = Future()
        assert future is not None
        if not owner:
            return future.result()
        try:
            model = self._fetch(ref)
        except BaseException as e:
            future.set_exception(e)
            with self._lock:
                del self._inflight[key]
                if isinstance(e, HubError):
                    self._remember(key, e, self.settings.retry_seconds)
            raise
        future.set_result(model)
        with self._lock:
            del self._inflight[key]
            if model.from_cache:  # asked again once the Hub may be back
                ttl = self.settings.retry_seconds
            else:
                ttl = float("inf") if ref.pinned else self.settings.ttl_seconds
            self._remember(key, model, ttl)
        return model

    def cached(self, ref: HubRef, stale_ok: bool = False) -> HubModel | None:
        """The model at `ref` if memory holds it (a remembered failure is raised), without waiting;
        with `stale_ok`, also past its expiry (the latest known)."""
        with self._lock:
            return self._fresh((ref.repo_id, ref.revision), stale_ok)

    # -- in-process cache (answers and, briefly, failures) -----------------------------------------
    def _fresh(self, key: tuple[str, str], stale_ok: bool = False) -> HubModel | None:
        entry = self._memory.get(key)
        if entry is None:
            return None
        expires, _, value = entry
        if not stale_ok and time.monotonic() > expires:
            self._forget(key)
            return None
        if isinstance(value, HubError):
            raise type(value)(value.reason)
        return value

    def _remember(self, key: tuple[str, str], value: HubModel | HubError, ttl: float) -> None:
        size = len(msgspec.json.encode(value)) if isinstance(value, HubModel) else len(value.reason)
        if size > self.settings.cache_bytes:
            return
        self._forget(key)
        self._memory[key] = (time.monotonic() + ttl, size, value)
        self._memory_bytes += size
        while self._memory_bytes > self.settings.cache_bytes:
            self._forget(next(iter(self._memory)))

    def _forget(self, key: tuple[str, str]) -> None:
        entry = self._memory.pop(key, None)
        if entry is not None:
            self._memory_bytes -= entry[1]

    # -- disk cache (beside the Hub's own cache, so offline mode can answer) ----------------------
    def _disk(self, repo_id: str) -> Path:
        return Path(self.settings.cache_dir) / "kvplan" / repo_id.replace("/", "--")

    @staticmethod
    def _ref_file(revision: str) -> str:
        # Branch names may hold "/" and run to 255 characters: hashed, they make one short name each.
        return hashlib.sha256(revision.encode()).hexdigest()[:32]

    def _save(self, model: HubModel) -> None:
        """Best effort (a full or read-only disk costs the offline copy, not the answer); written
        whole and renamed into place, so a reader never sees half an entry."""
        base = self._disk(model.repo_id)
        try:
            (base / "refs").mkdir(parents=True, exist_ok=True)
            _write_atomic(base / f"{model.sha}.json", msgspec.json.encode(model))
            _write_atomic(base / "refs" / self._ref_file(model.revision), model.sha.encode())
        except OSError:
            pass

    def _load(self, ref: HubRef) -> HubModel | None:
        """The disk copy for `ref`, or None when there is none or it cannot be read."""
        base = self._disk(ref.repo_id)
        try:
            sha = (
                ref.revision
                if ref.pinned
                else (base / "refs" / self._ref_file(ref.revision)).read_text().strip()
            )
            model = msgspec.json.decode((base / f"{sha}.json").read_bytes(), type=HubModel)
        except (OSError, ValueError, msgspec.MsgspecError):
            return None
        return msgspec.structs.replace(model, revision=ref.revision, from_cache=True)

    # -- one fetch --------------------------------------------------------------------------------
    def _fetch(self, ref: HubRef) -> HubModel:
        if self.settings.offline:
            cached = self._load(ref)
            if cached is None:
                raise HubUnavailable(
                    f"{ref.repo_id}@{ref.revision} is not in the Hub cache and HF_HUB_OFFLINE is set"
                )
            return cached
        self.fetches += 1
        try:
            return self._ask_hub(ref)
        except HubError:
            raise
        except GatedRepoError:
            raise GatedModel(
                f"{ref.repo_id} is gated: the server needs an HF_TOKEN with access to it"
                + ("" if self.settings.token else " (none is set)")
            ) from None
        except RevisionNotFoundError:
            raise ModelNotOnHub(f"{ref.repo_id} has no revision {ref.revision!r}") from None
        except RemoteEntryNotFoundError:
            raise ModelUnreadable(
                f"{ref.repo_id} has no config.json: kvplan reads models in the transformers layout"
            ) from None
        except RepositoryNotFoundError:
            raise ModelNotOnHub(
                f"no model {ref.repo_id!r} on {self.settings.endpoint} (or it is private)"
            ) from None
        except (SafetensorsParsingError, NotASafetensorsRepoError) as e:
            raise ModelTooLarge(f"{ref.repo_id}'s safetensors headers cannot be read: {e}") from None
        except (httpx2.HTTPError, OfflineModeIsEnabled, HfHubHTTPError, OSError) as e:
            cached = self._load(ref)
            if cached is not None:
                return cached
            raise HubUnavailable(
                f"the Hub ({self.settings.endpoint}) did not answer for {ref.repo_id}: {type(e).__name__}"
            ) from None

    def _ask_hub(self, ref: HubRef) -> HubModel:
        s = self.settings
        info = self.api.model_info(ref.repo_id, revision=ref.revision, timeout=s.timeout_seconds)
        sha = info.sha or ref.revision
        url = hf_hub_url(ref.repo_id, "config.json", revision=sha, endpoint=s.endpoint)
        meta = get_hf_file_metadata(url, token=s.token or False, timeout=s.timeout_seconds)
        if meta.size is not None and meta.size > s.max_config_bytes:
            raise ModelTooLarge(
                f"{ref.repo_id}'s config.json is {meta.size:,} bytes; kvplan reads at most "
                f"{s.max_config_bytes:,}"
            )
        path = hf_hub_download(
            ref.repo_id,
            "config.json",
            revision=sha,
            cache_dir=s.cache_dir,
            endpoint=s.endpoint,
            token=s.token or False,
            etag_timeout=s.timeout_seconds,
        )
        if os.path.getsize(path) > s.max_config_bytes:
            raise ModelTooLarge(f"{ref.repo_id}'s config.json is larger than {s.max_config_bytes:,} bytes")
        try:
            config = json.loads(Path(path).read_bytes())
        except ValueError as e:  # not UTF-8, or not JSON
            raise ModelUnreadable(f"{ref.repo_id}'s config.json is not JSON: {e}") from None
        if not isinstance(config, dict):
            raise ModelUnreadable(f"{ref.repo_id}'s config.json is not a JSON object")
        model = HubModel(
            repo_id=ref.repo_id,
            revision=ref.revision,
            sha=sha,
            config=config,
            weights=self._weights(ref.repo_id, sha, config),
        )
        self._save(model)
        return model

    def _weights(self, repo_id: str, sha: str, config: dict[str, Any]) -> LoadedWeights | None:
        try:
            meta = self.api.get_safetensors_metadata(
                repo_id, revision=sha, timeout=self.settings.timeout_seconds
            )
        except NotASafetensorsRepoError:
            return None  # no safetensors: weights from the parameters and quantization_config
        count = sum(len(f.tensors) for f in meta.files_metadata.values())
        if count > self.settings.max_tensors:
            cap = self.settings.max_tensors
            raise ModelTooLarge(f"{repo_id} has {count:,} tensors; kvplan reads at most {cap:,}")
        layers = language_config(config).get("num_hidden_layers")
        return loaded_weights(
            (
                (name, t.dtype, t.parameter_count)
                for f in meta.files_metadata.values()
                for name, t in f.tensors.items()
            ),
            layers if type(layers) is int else None,
            f"safetensors headers of {repo_id}@{sha[:12]}",
        )


def _write_atomic(path: Path, data: bytes) -> None:
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
    tmp.write_bytes(data)
    os.replace(tmp, path)


_default: Hub | None = None
_default_lock = threading.Lock()


def default_hub() -> Hub:
    """The process's Hub client, configured from the environment (HF_ENDPOINT, HF_TOKEN,
    HF_HOME, HF_HUB_OFFLINE, KVPLAN_HUB_*)."""
    global _default
    with _default_lock:
        if _default is None:
            _default = Hub(HubSettings.from_env())
        return _default


def reset_default_hub() -> None:
    """Forget the process's client (tests change the environment between cases)."""
    global _default
    with _default_lock:
        _default = None
