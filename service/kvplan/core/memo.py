"""Memoisation bounded in memory: answers are pure, so the core keeps recent ones, but an entry's
size grows with the model's layers (per-layer tuples), so models above a layer bound are
computed every time instead of cached. Count × the per-entry bound caps the memory held."""

from __future__ import annotations

from collections.abc import Callable
from functools import lru_cache, wraps
from typing import ParamSpec, TypeVar

from .limits import MEMO_MAX_LAYERS

P = ParamSpec("P")
R = TypeVar("R")
_CLEARERS: list[Callable[[], None]] = []


def register_clear(clear: Callable[[], None]) -> None:
    """For a cache that checks the layer bound itself (on the hottest path, one call less)."""
    _CLEARERS.append(clear)


def clear_all() -> None:
    """Forget every memoised answer (benchmarks measure the cold path with it)."""
    for clear in _CLEARERS:
        clear()


def memo_bounded(maxsize: int, layers_of: Callable[P, int]) -> Callable[[Callable[P, R]], Callable[P, R]]:
    """lru_cache(maxsize) for calls whose model has at most MEMO_MAX_LAYERS layers."""

    def decorate(fn: Callable[P, R]) -> Callable[P, R]:
        cached = lru_cache(maxsize=maxsize)(fn)

        @wraps(fn)
        def call(*args: P.args, **kwargs: P.kwargs) -> R:
            if layers_of(*args, **kwargs) > MEMO_MAX_LAYERS:
                return fn(*args, **kwargs)
            return cached(*args, **kwargs)  # type: ignore[arg-type]

        _CLEARERS.append(cached.cache_clear)
        return call

    return decorate
