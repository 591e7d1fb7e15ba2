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

from kvplan.hub import HubError, HubModel, HubRef, HubUnavailable, default_hub, pin
from kvplan.presets import Registry
from kvplan.services.models import ModelRef, model_ref

from .settings import Settings

_pool: ThreadPoolExecutor | None = None
_flights: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, dict[HubRef, asyncio.Future[HubModel]]]
_flights = weakref.WeakKeyDictionary()


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


def hub_refs(registry: Registry, models: Iterable[ModelRef | str], skip_invalid: bool = False) -> set[HubRef]:
    """The Hub models named. A model is a reference (services/models.py: parsed once, where the
    request was decoded), or an id a caller without one gives (a malformed Hub id raises
    InvalidInput, a 400, unless skipped)."""
    refs = set()
    for m in models:
        if isinstance(m, str):
            try:
                m = model_ref(registry, m)
            except Exception:
                if skip_invalid:
                    continue
                raise
        if isinstance(m, HubRef):
            refs.add(m)
    return refs


async def prefetch(registry: Registry, models: Iterable[ModelRef | str], each_alone: bool = False) -> None:
    """Fetch every Hub model named, unless memory holds it, and pin them for this request's
    answer. A failure is raised (the first one), or with `each_alone` (a batch, whose scenarios
    fail one by one) left for the answer's own lookup to raise again: the client remembers it."""
    hub = default_hub()
    found: list[HubModel] = []
    waits: list[asyncio.Future[HubModel]] = []
    names: list[str] = []
    for ref in hub_refs(registry, models, skip_invalid=each_alone):
        try:
            model = hub.cached(ref)
            if model is None:
                waits.append(_fetch(ref))
                names.append(ref.repo_id)
            else:
                found.append(model)
        except HubError:
            if not each_alone:
                raise
    if waits:
        # One answer's wait is bounded as a whole (the fetch itself stops at the same deadline, in
        # the Hub pool, so its thread comes back); a slow fetch goes on, shielded, for the next
        # request.
        # One call's timeout more than the fetch's own deadline: a fetch that runs out of time
        # falls back to the disk copy, and that answer should reach this request.
        limit = hub.settings.deadline_seconds + hub.settings.timeout_seconds
        fetches = asyncio.gather(*(asyncio.shield(w) for w in waits), return_exceptions=each_alone)
        try:
            done = await asyncio.wait_for(fetches, timeout=limit)
            found.extend(m for m in done if isinstance(m, HubModel))
        except TimeoutError:
            if not each_alone:
                listed = ", ".join(sorted(names))
                raise HubUnavailable(f"the Hub did not answer for {listed} within {limit:g} s") from None
    pin(found)
