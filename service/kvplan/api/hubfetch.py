"""Hub models are fetched before the answer is computed, in a small pool of their own: the
fetch waits on the network (connect and read timeouts bound it), so it neither holds the event
loop nor the heavy pool. The answer's work then finds the model in the Hub client's memory
(it may not fetch: app.py makes every request cache-only).

On this worker's event loop each model is fetched once however many requests wait for it, and at
most `hub_queue` distinct models are in flight: past that, and while the Hub keeps failing (the
client remembers failures for a while), requests answer at once instead of queueing threads."""

from __future__ import annotations

import asyncio
import weakref
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor

from kvplan.hub import HubError, HubModel, HubRef, HubUnavailable, default_hub
from kvplan.presets import Registry
from kvplan.services.scenarios import hub_ref_of

from .settings import Settings

_pool: ThreadPoolExecutor | None = None
_flights: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, dict[HubRef, asyncio.Future[HubModel]]]
_flights = weakref.WeakKeyDictionary()
# The Hub calls one model takes (info, config HEAD and GET, safetensors index and headers): the
# whole fetch may take this many per-call timeouts before the answer gives up with a 503.
DEADLINE_CALLS = 4


def _get_pool() -> ThreadPoolExecutor:
    global _pool
    if _pool is None:
        _pool = ThreadPoolExecutor(max_workers=Settings().hub_threads, thread_name_prefix="kvplan-hub")
    return _pool


def _fetch(ref: HubRef) -> asyncio.Future[HubModel]:
    loop = asyncio.get_running_loop()
    flights = _flights.setdefault(loop, {})
    flight = flights.get(ref)
    if flight is None:
        if len(flights) >= Settings().hub_queue:
            raise HubUnavailable(f"{len(flights)} Hub models are being fetched on this worker")
        flight = flights[ref] = loop.run_in_executor(_get_pool(), default_hub().resolve, ref)
        flight.add_done_callback(lambda f: (flights.pop(ref, None), f.cancelled() or f.exception()))
    return flight


def hub_refs(registry: Registry, models: Iterable[object], skip_invalid: bool = False) -> set[HubRef]:
    """The Hub models named (a malformed id raises InvalidInput, a 400, unless skipped)."""
    refs = set()
    for m in models:
        try:
            ref = hub_ref_of(registry, m)
        except Exception:
            if skip_invalid:
                continue
            raise
        if ref is not None:
            refs.add(ref)
    return refs


async def prefetch(registry: Registry, models: Iterable[object], each_alone: bool = False) -> None:
    """Fetch every Hub model named, unless memory holds it. A failure is raised (the first one),
    or with `each_alone` (a batch, whose scenarios fail one by one) left for the answer's own
    lookup to raise again: the client remembers it."""
    hub, waits, names = default_hub(), [], []
    for ref in hub_refs(registry, models, skip_invalid=each_alone):
        try:
            if hub.cached(ref) is None:
                waits.append(_fetch(ref))
                names.append(ref.repo_id)
        except HubError:
            if not each_alone:
                raise
    if not waits:
        return
    # One answer's wait is bounded as a whole: huggingface_hub bounds each call, but retries a
    # timed-out download's HEAD with a longer timeout of its own. The fetch itself goes on (shielded)
    # for the next request.
    deadline = hub.settings.timeout_seconds * DEADLINE_CALLS
    fetches = asyncio.gather(*(asyncio.shield(w) for w in waits), return_exceptions=each_alone)
    try:
        await asyncio.wait_for(fetches, timeout=deadline)
    except TimeoutError:
        if not each_alone:
            listed = ", ".join(sorted(names))
            raise HubUnavailable(f"the Hub did not answer for {listed} within {deadline:g} s") from None


def cacheable(registry: Registry, model: object) -> bool:
    """An answer may be kept unless it names a Hub revision that can move (a branch such as main):
    the Hub client's own cache expires those; nor one read from the disk copy in an outage (it
    says so, and will not once the Hub is back)."""
    try:
        ref = hub_ref_of(registry, model)
        if ref is None:
            return True
        found = default_hub().cached(ref, stale_ok=True)
    except Exception:
        return False
    return ref.pinned and found is not None and not found.from_cache


def hub_commit(registry: Registry, model: object) -> str:
    """The commit a Hub model's answer was computed at ("" for presets and inline models)."""
    ref = hub_ref_of(registry, model)
    found = None if ref is None else default_hub().cached(ref, stale_ok=True)
    return "" if found is None else found.sha
