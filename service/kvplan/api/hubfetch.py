"""Hub models are fetched before the answer is computed, in a small pool of their own: the
fetch waits on the network (connect and read timeouts bound it), so it neither holds the event
loop nor the heavy pool's one thread. The compute then finds the model in the Hub client's cache."""

from __future__ import annotations

import asyncio
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor

from kvplan.hub import HubUnavailable, default_hub
from kvplan.presets import Registry
from kvplan.services.scenarios import hub_ref_of

from .settings import Settings

_pool: ThreadPoolExecutor | None = None
# The Hub calls one model takes (info, config HEAD and GET, safetensors index and headers): the
# whole fetch may take this many per-call timeouts before the answer gives up with a 503.
DEADLINE_CALLS = 4


def _get_pool() -> ThreadPoolExecutor:
    global _pool
    if _pool is None:
        _pool = ThreadPoolExecutor(max_workers=Settings().hub_threads, thread_name_prefix="kvplan-hub")
    return _pool


async def prefetch(registry: Registry, models: Iterable[object]) -> None:
    """Fetch every Hub model named (a bad id is a 400 here, before any request is made)."""
    refs = {ref for m in models if (ref := hub_ref_of(registry, m)) is not None}
    if not refs:
        return
    hub, loop = default_hub(), asyncio.get_running_loop()
    fetches = asyncio.gather(*(loop.run_in_executor(_get_pool(), hub.resolve, r) for r in refs))
    # One answer's wait is bounded as a whole: huggingface_hub bounds each call, but retries a
    # timed-out download's HEAD with a longer timeout of its own.
    deadline = hub.settings.timeout_seconds * DEADLINE_CALLS
    try:
        await asyncio.wait_for(asyncio.shield(fetches), timeout=deadline)
    except TimeoutError:
        names = ", ".join(sorted(r.repo_id for r in refs))
        raise HubUnavailable(f"the Hub did not answer for {names} within {deadline:g} s") from None


def cacheable(registry: Registry, model: object) -> bool:
    """An answer may be kept unless it names a Hub revision that can move (a branch such as main):
    the Hub client's own cache expires those."""
    try:
        ref = hub_ref_of(registry, model)
    except Exception:
        return False
    return ref is None or ref.pinned
