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
from collections.abc import Iterable
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
    OfflineModeIsEnabled,
    RemoteEntryNotFoundError,
    RepositoryNotFoundError,
    RevisionNotFoundError,
)

from kvplan.core.errors import InvalidInput
from kvplan.core.hf.reader import language_config
from kvplan.core.model.weights import LoadedWeights, loaded_weights

from . import errors
from .refs import COMMIT_SHA, HubRef
from .safetensors import Limits, files_of, tensors_of
from .transport import deadline, install

# Whether a lookup that misses the caches may ask the Hub. The HTTP service turns it off for the
# work of an answer (on the event loop or the heavy pool): it fetches first, in a pool of its own,
# so a model that was not fetched is a 503, never a network wait where none is allowed.
_may_fetch: ContextVar[bool] = ContextVar("kvplan_hub_may_fetch", default=True)


# The models a request's route fetched for it: its answer finds them here whatever the bounded
# cache has evicted since (a batch may name more models than the cache holds).
_pinned: ContextVar[dict[tuple[str, str], HubModel] | None] = ContextVar("kvplan_hub_pinned", default=None)


def cache_only() -> None:
    """From here on, in this context, Hub lookups answer from the caches or not at all."""
    _may_fetch.set(False)


def pin(models: Iterable[HubModel]) -> None:
    """In this context, lookups of these models answer with them."""
    pinned = dict(_pinned.get() or {})
    pinned.update(((m.repo_id, m.revision), m) for m in models)
    _pinned.set(pinned)


class HubSettings(msgspec.Struct, frozen=True, kw_only=True):
    endpoint: str
    token: str | None
    cache_dir: str
    offline: bool
    timeout_seconds: float
    max_config_bytes: int
    max_tensors: int
    max_index_bytes: int
    max_header_bytes: int
    max_shards: int
    cache_bytes: int
    ttl_seconds: float
    # How long a failure (unknown repo, gated, unreachable) and an answer served from the disk
    # cache because the Hub could not be asked are kept before the Hub is asked again.
    retry_seconds: float

    # The Hub calls one model takes (info, config HEAD and GET, index, headers): the whole fetch
    # may take this many per-call timeouts before it is abandoned.
    DEADLINE_CALLS = 4

    @property
    def deadline_seconds(self) -> float:
        return self.timeout_seconds * self.DEADLINE_CALLS

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
            max_index_bytes=int(os.environ.get("KVPLAN_HUB_MAX_INDEX_BYTES", str(32 << 20))),
            max_header_bytes=int(os.environ.get("KVPLAN_HUB_MAX_HEADER_BYTES", str(25_000_000))),
            max_shards=int(os.environ.get("KVPLAN_HUB_MAX_SHARDS", "1024")),
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
        self._memory: dict[tuple[str, str], tuple[float, int, HubModel | errors.HubError]] = {}
        self._memory_bytes = 0
        self.fetches = 0  # Hub round trips started (for tests and metrics)
        self._limits = Limits(
            timeout_seconds=settings.timeout_seconds,
            max_index_bytes=settings.max_index_bytes,
            max_header_bytes=settings.max_header_bytes,
            max_tensors=settings.max_tensors,
            max_shards=settings.max_shards,
        )
        install()

    # -- the one entry point ---------------------------------------------------------------------
    def resolve(self, ref: HubRef) -> HubModel:
        """The model at `ref`: from memory, else fetched once however many threads ask (unless
        this context is cache-only)."""
        key = (ref.repo_id, ref.revision)
        pinned = _pinned.get()
        if pinned is not None and key in pinned:
            return pinned[key]
        may_fetch = _may_fetch.get()
        with self._lock:
            # Without the network, an entry past its expiry still answers: the route refreshed
            # it a moment ago (hubfetch.prefetch), and it is the latest known.
            hit = self._fresh(key, stale_ok=not may_fetch)
            if hit is not None:
                return hit
            if not may_fetch:
                raise errors.HubUnavailable(f"{ref.repo_id}@{ref.revision} was not fetched before the answer")
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
                if isinstance(e, errors.HubError):
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
            return None  # kept: a cache-only lookup may still answer with it while it is refreshed
        if isinstance(value, errors.HubError):
            raise type(value)(value.reason)
        return value

    def _remember(self, key: tuple[str, str], value: HubModel | errors.HubError, ttl: float) -> None:
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
        """One model from the Hub: the commit its revision names, its config.json and its weights as the
        safetensors headers list them, saved to the cache. Offline, the cache alone answers or
        HubUnavailable says why."""
        if self.settings.offline:
            cached = self._load(ref)
            if cached is None:
                raise errors.HubUnavailable(
                    f"{ref.repo_id}@{ref.revision} is not in the Hub cache and HF_HUB_OFFLINE is set"
                )
            return cached
        self.fetches += 1
        try:
            with deadline(self.settings.deadline_seconds):
                return self._ask_hub(ref)
        except errors.HubError:
            raise
        except GatedRepoError:
            raise errors.GatedModel(
                f"{ref.repo_id} is gated: the server needs an HF_TOKEN with access to it"
                + ("" if self.settings.token else " (none is set)")
            ) from None
        except RevisionNotFoundError:
            raise errors.ModelNotOnHub(f"{ref.repo_id} has no revision {ref.revision!r}") from None
        except RepositoryNotFoundError:
            raise errors.ModelNotOnHub(
                f"no model {ref.repo_id!r} on {self.settings.endpoint} (or it is private)"
            ) from None
        except (httpx2.HTTPError, OfflineModeIsEnabled, HfHubHTTPError, OSError) as e:
            cached = self._load(ref)
            if cached is not None:
                return cached
            raise errors.HubUnavailable(
                f"the Hub ({self.settings.endpoint}) did not answer for {ref.repo_id}: {type(e).__name__}"
            ) from None
        except (ValueError, TypeError, KeyError, AttributeError, RecursionError) as e:
            # huggingface_hub parsing an answer that is not the Hub's (a proxy page, odd JSON)
            raise errors.HubBadAnswer(
                f"the Hub ({self.settings.endpoint}) answered for {ref.repo_id} in a form kvplan "
                f"cannot read: {type(e).__name__}"
            ) from None

    def _ask_hub(self, ref: HubRef) -> HubModel:
        s = self.settings
        info = self.api.model_info(ref.repo_id, revision=ref.revision, timeout=s.timeout_seconds)
        sha = info.sha
        if not isinstance(sha, str) or not COMMIT_SHA.fullmatch(sha):
            raise errors.HubBadAnswer(f"the Hub named no commit for {ref.repo_id}@{ref.revision}")
        files = {f.rfilename for f in info.siblings or () if isinstance(f.rfilename, str)}
        if "config.json" not in files:
            raise errors.ModelUnreadable(
                f"{ref.repo_id} has no config.json: kvplan reads models in the transformers layout"
            )
        config = self._config(ref.repo_id, sha)
        model = HubModel(
            repo_id=ref.repo_id,
            revision=ref.revision,
            sha=sha,
            config=config,
            weights=self._weights(ref.repo_id, sha, files, config),
        )
        self._save(model)
        return model

    def _config(self, repo_id: str, sha: str) -> dict[str, Any]:
        """A repository's config.json at a commit, refused before download when it is larger than the
        limit, and parsed as a JSON object."""
        s = self.settings
        url = hf_hub_url(repo_id, "config.json", revision=sha, endpoint=s.endpoint)
        try:
            meta = get_hf_file_metadata(url, token=s.token or False, timeout=s.timeout_seconds)
            if meta.size is not None and meta.size > s.max_config_bytes:
                raise errors.ModelTooLarge(
                    f"{repo_id}'s config.json is {meta.size:,} bytes; kvplan reads at most "
                    f"{s.max_config_bytes:,}"
                )
            path = hf_hub_download(
                repo_id,
                "config.json",
                revision=sha,
                cache_dir=s.cache_dir,
                endpoint=s.endpoint,
                token=s.token or False,
                etag_timeout=s.timeout_seconds,
            )
        except RemoteEntryNotFoundError:
            raise errors.ModelUnreadable(
                f"{repo_id} has no config.json: kvplan reads models in the transformers layout"
            ) from None
        if os.path.getsize(path) > s.max_config_bytes:
            raise errors.ModelTooLarge(f"{repo_id}'s config.json is larger than {s.max_config_bytes:,} bytes")
        try:
            config = json.loads(Path(path).read_bytes())
        except (ValueError, RecursionError) as e:  # not UTF-8, not JSON, or nested past reason
            raise errors.ModelUnreadable(f"{repo_id}'s config.json is not JSON: {type(e).__name__}") from None
        if not isinstance(config, dict):
            raise errors.ModelUnreadable(f"{repo_id}'s config.json is not a JSON object")
        return config

    def _weights(
        self, repo_id: str, sha: str, files: set[str], config: dict[str, Any]
    ) -> LoadedWeights | None:
        """The checkpoint's tensors, or None without safetensors (then the weights come from the
        parameters and quantization_config)."""
        s, limits = self.settings, self._limits
        shards = files_of(repo_id, sha, files, s.endpoint, s.token, s.cache_dir, limits)
        if not shards:
            return None
        tensors: list[tuple[str, str, int]] = []
        for f in shards:  # the cap is checked as the headers come, not after all of them
            tensors.extend(tensors_of(repo_id, sha, f, s.endpoint, s.token, limits))
            if len(tensors) > s.max_tensors:
                raise errors.ModelTooLarge(
                    f"{repo_id} has more than {s.max_tensors:,} tensors (kvplan's limit) in its safetensors"
                )
        if not tensors:
            raise errors.ModelUnreadable(f"{repo_id}'s safetensors hold no tensors")
        layers = language_config(config).get("num_hidden_layers")
        try:
            source = f"safetensors headers of {repo_id}@{sha[:12]}"
            return loaded_weights(tensors, layers if type(layers) is int else None, source)
        except InvalidInput as e:
            raise errors.ModelUnreadable(f"{repo_id}'s safetensors headers: {e.reason}") from None


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
