"""This worker's copy of the deployments file's plans (services/deployments.py): read at start,
again whenever the file's bytes change (polled every KVPLAN_DEPLOYMENTS_RELOAD_SECONDS: a
ConfigMap update swaps the file under its mount) and on SIGHUP, without a restart.

Every worker reads the same file and plans it the same way, so whichever worker answers a scrape
reports the same values: the deployment series are rendered from this worker's plans, not summed
across workers by prometheus-client's multiprocess mode (a sum would count each plan once per
worker, and a removed deployment would linger in the other workers' files). They are rendered
once a reload, so a scrape costs a copy however many deployments there are. For the length of a
reload interval after an edit, two workers may still disagree."""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import signal
import threading
import time
from pathlib import Path
from typing import Any

import msgspec
import structlog
from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.core import GaugeMetricFamily

from kvplan.core.errors import KvplanError
from kvplan.hub import cache_only
from kvplan.presets import Registry
from kvplan.services.deployments import (
    SERIES,
    Failure,
    Fleet,
    Parsed,
    Plan,
    ReloadState,
    digest,
    file_failure,
    parse,
    plan_all,
)
from kvplan.services.models import ModelRef, model_ref

from .hubfetch import prefetch

_log = structlog.get_logger("kvplan.deployments")
LABELS = ("namespace", "deployment", "model_name", "accelerator_type")
# Waited for at start-up, so a file of presets is served from the first request; a file whose Hub
# models take longer goes on loading in the background.
FIRST_LOAD_WAIT_SECONDS = 2.0


class _Families:
    def __init__(self, families: list[GaugeMetricFamily]) -> None:
        self.families = families

    def collect(self) -> list[GaugeMetricFamily]:
        return self.families


def _parsed(registry: Registry, data: bytes) -> tuple[Parsed, list[ModelRef]]:
    """The file's deployments and the models they name (those that can be named)."""
    parsed = parse(data)
    refs = []
    for spec in parsed.specs:
        with contextlib.suppress(KvplanError):
            refs.append(model_ref(registry, spec.model))
    return parsed, refs


class Deployments:
    """The plans this worker serves, the outcome of its last reload, and their exposition."""

    def __init__(self, path: str, reload_seconds: float) -> None:
        self.path = path
        self.reload_seconds = reload_seconds
        self.fleet: Fleet | None = None
        self.file_error: Failure | None = None  # the file could not be used at the last reload
        self.last_reload_ok = False
        self.last_reload_at = 0.0
        self.last_success_at = 0.0
        self.exposition = b""
        self._wake = asyncio.Event()
        self._first = asyncio.Event()  # set once the first reading ended, however it ended
        self._empty_seen = False  # the last reading found the file empty and kept the plans
        self._task: asyncio.Task[None] | None = None
        self._stopping = threading.Event()  # ends a planning thread's rate searches at shutdown

    @property
    def configured(self) -> bool:
        return bool(self.path)

    def failures(self) -> tuple[Failure, ...]:
        """What the last reload could not use: the file, or each deployment that failed."""
        if self.file_error is not None:
            return (self.file_error,)
        return () if self.fleet is None else self.fleet.failures

    @property
    def loading(self) -> bool:
        """The file is configured and its first reading has not ended."""
        return self.configured and not self._first.is_set()

    @property
    def ready(self) -> bool:
        """Planned at least once, or not configured: a pod started on a broken file is not ready,
        so a rollout of a bad ConfigMap stops at its first new pod and the old pods keep their plans."""
        return not self.configured or (self._first.is_set() and self.fleet is not None)

    def reload_state(self) -> ReloadState | None:
        if not self.configured:
            return None
        return ReloadState(
            successful=self.last_reload_ok, at=self.last_reload_at, last_success_at=self.last_success_at
        )

    async def reload(self, registry: Registry, force: bool = False) -> None:
        """Read, parse, fetch the Hub models named, plan (off the loop), publish. A file that
        cannot be read or parsed changes nothing served but marks every plan not current. An
        unchanged file is not planned again, unless the Hub failed a deployment last time."""
        try:
            data = await asyncio.to_thread(Path(self.path).read_bytes)
        except OSError as e:
            return self._failed(file_failure(self.path, e))
        file_digest = digest(data)
        empty = not data.strip()
        if not empty:
            self._empty_seen = False
        unchanged = self.file_error is None and self.fleet is not None and self.fleet.digest == file_digest
        if not force and unchanged and not any(f.transient for f in self.failures()):
            return None
        if empty and self.fleet is not None and self.fleet.plans and not self._empty_seen:
            # Read while an editor rewrites the file in place, or emptied on purpose (a ConfigMap
            # key set to ""): the plans stay until the next reading finds it empty still.
            self._empty_seen = True
            _log.warning("deployments file empty: its plans stay until the next reading", path=self.path)
            return None
        self.last_reload_at = time.time()
        # Hub models are fetched first, in the Hub pool; planning then finds them (cache only).
        cache_only()
        try:  # off the loop: a file of inline configs is megabytes of TOML to read
            parsed, refs = await asyncio.to_thread(_parsed, registry, data)
        except KvplanError as e:
            return self._failed(Failure.of(e))
        await prefetch(registry, refs, each_alone=True)
        fleet = await asyncio.to_thread(
            plan_all, registry, parsed, file_digest, self.fleet, None, self._stopping.is_set
        )
        self.fleet, self.file_error = fleet, None
        self.last_reload_ok = not fleet.failures
        if self.last_reload_ok:
            self.last_success_at = self.last_reload_at
        self._render()
        log = _log.info if self.last_reload_ok else _log.warning
        log(
            "deployments reloaded" if self.last_reload_ok else "deployments reloaded with failures",
            path=self.path,
            planned=sum(p.current for p in fleet.plans.values()),
            kept=sum(not p.current for p in fleet.plans.values()),
            failures=[f.message() for f in fleet.failures],
        )
        return None

    def _failed(self, failure: Failure) -> None:
        """Nothing of this reading is used: the plans stay, none of them current any more."""
        self.last_reload_at = time.time()
        self.file_error = failure
        self.last_reload_ok = False
        if self.fleet is not None:
            kept = {k: msgspec.structs.replace(p, current=False) for k, p in self.fleet.plans.items()}
            self.fleet = msgspec.structs.replace(self.fleet, plans=kept)
        self._render()
        kept = 0 if self.fleet is None else len(self.fleet.plans)
        _log.error(
            "deployments file not used: the last good plans stay",
            path=self.path,
            error=failure.message(),
            kept=kept,
        )

    def _render(self) -> None:
        """The series of every plan served and of the last reload, rendered once."""
        families = deployment_families(
            self.fleet, self.last_reload_ok, self.last_success_at, len(self.failures())
        )
        reg = CollectorRegistry(auto_describe=False)
        reg.register(_Families(families))  # type: ignore[arg-type]
        self.exposition = generate_latest(reg)

    def start(self, registry: Registry) -> None:
        """Watch the file in the background, and reload on SIGHUP where this process gets it."""
        if not self.configured or self._task is not None:
            return
        loop = asyncio.get_running_loop()
        with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):
            loop.add_signal_handler(signal.SIGHUP, self.wake)  # only the main thread may
        self._task = loop.create_task(self._watch(registry))

    def wake(self) -> None:
        self._wake.set()

    async def _watch(self, registry: Registry) -> None:
        forced = True
        while True:
            try:  # each reading in a context of its own: the Hub models it pins go with it
                await asyncio.create_task(self.reload(registry, forced), context=contextvars.copy_context())
            except Exception:  # a defect must not end the watching: logged, reported, retried
                _log.exception("deployments reload raised", path=self.path)
                self._failed(
                    Failure(deployment=None, field="KVPLAN_DEPLOYMENTS", reason="internal error: see the log")
                )
            self._first.set()
            forced = False
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._wake.wait(), timeout=self.reload_seconds)
                forced = True  # SIGHUP: read the file again even if its bytes did not change
            self._wake.clear()

    async def first_load(self) -> None:
        """Wait a little for the first reading (the watcher goes on regardless)."""
        try:
            await asyncio.wait_for(self._first.wait(), FIRST_LOAD_WAIT_SECONDS)
        except TimeoutError:
            _log.info("deployments still loading: served once planned", path=self.path)

    async def stop(self) -> None:
        self._stopping.set()
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None


def deployment_families(
    fleet: Fleet | None, ok: bool, success_at: float, failures: int
) -> list[GaugeMetricFamily]:
    """kvplan_deployment_* (one series a deployment served), the plan and cache-config info, and
    the reload's outcome, named as Prometheus names its own (…_last_reload_successful)."""
    plans: list[Plan] = [] if fleet is None else sorted(fleet.plans.values(), key=lambda p: p.key)
    families = []
    for name, (help_text, value) in SERIES.items():
        g = GaugeMetricFamily(f"kvplan_deployment_{name}", help_text, labels=LABELS)
        for p in plans:
            v = value(p)
            if v is not None:
                g.add_metric(_labels(p), float(v))
        families.append(g)
    info = GaugeMetricFamily(
        "kvplan_deployment_info",
        "the plan's engine profile, preset registry and model revision (a Hub commit)",
        labels=[*LABELS, "engine", "registry_version", "model_revision"],
    )
    cache = GaugeMetricFamily(
        "kvplan_deployment_cache_config_info",
        "the plan's blocks as vLLM's vllm:cache_config_info labels them, to compare with the engines'",
        labels=[*LABELS, "num_gpu_blocks", "block_size"],
    )
    current = GaugeMetricFamily(
        "kvplan_deployment_plan_current",
        "1: planned from the file as it is; 0: its entry fails, the last good plan is served",
        labels=LABELS,
    )
    for p in plans:
        b = p.budget
        info.add_metric([*_labels(p), b.engine, p.labels["registry_version"], p.model_revision], 1.0)
        block = SERIES["block_size_tokens"][1](p)
        cache.add_metric([*_labels(p), str(b.num_blocks), str(block)], 1.0)
        current.add_metric(_labels(p), 1.0 if p.current else 0.0)
    reload_ok = GaugeMetricFamily(
        "kvplan_deployments_last_reload_successful",
        "whether the last reading of KVPLAN_DEPLOYMENTS planned every deployment",
        value=1.0 if ok else 0.0,
    )
    reload_at = GaugeMetricFamily(
        "kvplan_deployments_last_reload_success_timestamp_seconds",
        "when KVPLAN_DEPLOYMENTS was last read and planned without a failure",
        value=success_at,
    )
    failed = GaugeMetricFamily(
        "kvplan_deployments_failed",
        "deployments of the file (or the file itself) that the last reading could not plan",
        value=float(failures),
    )
    return [*families, info, cache, current, reload_ok, reload_at, failed]


def _labels(p: Plan) -> list[str]:
    return [p.spec.namespace, p.spec.name, p.model_name, p.accelerator_type]


def of(app_state: Any) -> Deployments:
    """The app's deployments (create_app always sets them; without a file, none)."""
    plans: Deployments = app_state.deployments
    return plans
