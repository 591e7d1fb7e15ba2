"""vLLM's V1 scheduler, step by step, on the block pool (vllm/v1/core/sched/scheduler.py,
vllm/v1/core/kv_cache_manager.py, docs/vllm-rules.md §7).

Per step, as vLLM V1 schedules: running requests first, in order (a decode needs its next token's
slot; a chunked prefill continues), allocating blocks incrementally (cdiv(tokens, block_size));
when no block is free the last running request (or the lowest priority) is preempted: it frees
every block and goes back to the front of the waiting queue, to be recomputed. Then, if nothing
was preempted, waiting requests are admitted in order while max_num_seqs, the step's token budget
(max_num_batched_tokens) and the free blocks allow; a new request first takes the longest run of
its full blocks already cached (prefix caching), never its last token. Requests finish at the end
of the step that samples their last token.

The loop is event-driven: between arrivals, block boundaries, completions and prefill chunks,
every running request just decodes one token a step, so those steps are skipped, not replayed.

A request's state changes in one place, `_transition`, by the table TRANSITIONS; the queue a
request sits in (waiting, running, prefilling) follows from its state there and nowhere else. An
event its state does not take is refused (SchedulerStateError) before any state or queue changes;
`process_event` is that door from outside, as h11's ConnectionState.process_event is.

How many steps a run can take is known before it starts (`step_bound`); the limits, and the
caller's `should_stop`, are checked again while it runs.
"""

from __future__ import annotations

import enum
import heapq
from collections import deque
from collections.abc import Callable, Hashable, Sequence

import msgspec

from ..errors import InvalidInput, SchedulerStateError, SimulationStopped
from ..limits import (
    MAX_BLOCK_EVENTS,
    MAX_BLOCK_SIZE,
    MAX_NUM_SEQS,
    MAX_SIMULATED_STEPS,
)
from ..units import cdiv
from .blockpool import BlockPool
from .workload import Planned, Size, next_turn

# Steps a request can cause besides its prefill chunks and decode blocks (see step_bound).
STEPS_PER_REQUEST = 8
# The run checks its limits and asks should_stop() once per this many steps: a step costs 3 µs
# to a few ms (a large chunk in blocks of 1), a check about 0.3 µs, so checking costs ~1% and
# answers within ~0.1 s.
STOP_CHECK_INTERVAL = 16
# Within a step, and while the requests are queued, should_stop() is asked once per this many
# requests handled: a step that admits, advances or finishes tens of thousands of requests takes
# up to ~0.4 s (100,000 arriving at once), an admission up to ~40 µs, so checks are ~10 ms apart.
STOP_CHECK_REQUESTS = 256
POLICIES = ("fcfs", "priority")


class SimConfig(msgspec.Struct, frozen=True, kw_only=True):
    """The pool and the scheduler's limits. No defaults here: the engine profile owns vLLM's
    (the service resolves them as budget does)."""

    num_blocks: int
    block_size: int
    max_num_seqs: int
    max_num_batched_tokens: int
    policy: str = "fcfs"
    prefix_caching: bool = True
    # Admit a waiting request only when blocks for its whole sequence fit, not just its first
    # chunk (vLLM 0.33's scheduler_reserve_full_isl). The service sets it from the engine profile.
    admit_full_sequence: bool = False


class TableEntry(msgspec.Struct, frozen=True):
    """One running request's block table: logical block i is physical block blocks[i]."""

    request: int
    state: str
    tokens: int
    blocks: tuple[int, ...]


class Snapshot(msgspec.Struct, frozen=True, kw_only=True):
    """The pool after a step: block tables, ref_cnt of referenced blocks, and the free queue from
    head (allocated next) to tail (evicted last), with which free blocks still hold a hash."""

    step: int
    tables: tuple[TableEntry, ...]
    ref_cnt: dict[int, int]
    free_queue: tuple[int, ...]
    cached: tuple[int, ...]
    waiting: tuple[int, ...]
    finished: tuple[int, ...]


# -- request states -----------------------------------------------------------------------------
class State(enum.Enum):
    """vLLM's RequestStatus (vllm/v1/request.py), with RUNNING split by what the step does."""

    PENDING = "pending"  # not arrived yet
    WAITING = "waiting"  # in the waiting queue, never scheduled
    PREFILLING = "prefilling"  # running: computing its prompt (and recomputing after preemption)
    DECODING = "decoding"  # running: sampling one token a step
    PREEMPTED = "preempted"  # blocks freed, at the front of the waiting queue, to be recomputed
    FINISHED = "finished"

    # Members are singletons compared by identity: hash them by identity too (in C), not by name
    # (Enum's default, in Python); a run hashes states hundreds of thousands of times.
    __hash__ = object.__hash__


class Event(enum.Enum):
    ARRIVE = "arrive"
    SCHEDULE = "schedule"  # admitted: cache hits taken, blocks for the first chunk allocated
    PREFILL_DONE = "prefill_done"  # every token computed: the step samples the next one
    PREEMPT = "preempt"
    FINISH = "finish"  # sampled its last token

    __hash__ = object.__hash__  # as State's


TRANSITIONS: dict[tuple[State, Event], State] = {
    (State.PENDING, Event.ARRIVE): State.WAITING,
    (State.WAITING, Event.SCHEDULE): State.PREFILLING,
    (State.PREEMPTED, Event.SCHEDULE): State.PREFILLING,
    (State.PREFILLING, Event.PREFILL_DONE): State.DECODING,
    (State.PREFILLING, Event.PREEMPT): State.PREEMPTED,
    (State.DECODING, Event.PREEMPT): State.PREEMPTED,
    (State.DECODING, Event.FINISH): State.FINISHED,
}
QUEUED = frozenset({State.WAITING, State.PREEMPTED})
RUNNING = frozenset({State.PREFILLING, State.DECODING})


# -- bounds -------------------------------------------------------------------------------------
def check_config(cfg: SimConfig) -> None:
    if not 1 <= cfg.block_size <= MAX_BLOCK_SIZE:
        raise InvalidInput("block_size", f"must be 1..{MAX_BLOCK_SIZE:,}")
    if not 1 <= cfg.max_num_seqs <= MAX_NUM_SEQS:
        raise InvalidInput("max_num_seqs", f"must be 1..{MAX_NUM_SEQS:,}")
    if cfg.max_num_batched_tokens < cfg.max_num_seqs:
        raise InvalidInput("max_num_batched_tokens", "must be at least max_num_seqs (as vLLM requires)")
    if cfg.policy not in POLICIES:
        raise InvalidInput("scheduling_policy", "must be fcfs or priority")


def step_bound(cfg: SimConfig, s: Size) -> tuple[int, int]:
    """An upper bound on the steps the loop takes when nothing is preempted, and its prefill term.

    Every step the loop visits is one of:
    - a step that starts with a prefill in progress. It either spends the whole token budget
      (decodes and prefill chunks: max_num_batched_tokens tokens) or completes a prefill. All
      steps together schedule at most Σ prompt + Σ output tokens, so at most
      ceil((Σ prompt + Σ output) / max_num_batched_tokens) spend it; completions are one a request;
    - a step that tries to admit: it admits (once a request) or finds the pool full, which it
      tries again only after an arrival or a release (two a request);
    - an arrival (one a request) or a running request's event: a block boundary while decoding
      (ceil(output / block_size) a request) or its last token (one a request).
    With the first step, steps ≤ ceil((Σ prompt + Σ output) / max_num_batched_tokens)
    + Σ ceil(output / block_size) + 6·requests + 2, which STEPS_PER_REQUEST·requests + 1 covers
    (the worst measured is 2.3 a request). Prompts include each turn's history.

    A preemption adds its recomputed tokens to the first term and a few steps (a completion, an
    admission, a release, a stale event). No useful bound on preemptions exists before the run
    (with prefix caching off, each block an old request takes can throw away a young one's whole
    prefill), so the run itself stops at the same limits (`Scheduler.run`)."""
    prefill = cdiv(s.prompt_tokens + s.output_tokens, cfg.max_num_batched_tokens)
    return prefill + s.decode_blocks + STEPS_PER_REQUEST * s.requests + 1, prefill


# -- the scheduler ------------------------------------------------------------------------------
class _Request:
    __slots__ = (
        "arrival",
        "blocks",
        "computed",
        "done_step",
        "gen0",
        "generated",
        "hashed",
        "id",
        "output",
        "planned",
        "prefix_id",
        "priority",
        "prompt",
        "s0",
        "seq",
        "shared_len",
        "state",
        "version",
    )

    def __init__(self, rid: int, p: Planned) -> None:
        r = p.request
        self.id = rid
        self.planned = p
        self.arrival = r.arrival_step
        self.prompt = r.prompt_tokens
        self.output = r.output_tokens
        self.prefix_id = p.prefix_id
        self.shared_len = p.shared_tokens
        self.priority = r.priority
        self.blocks: list[int] = []
        self.computed = 0
        self.generated = 0
        self.hashed = 0
        self.seq = 0
        self.version = 0
        self.state = State.PENDING
        self.s0 = 0
        self.gen0 = 0
        self.done_step = -1


Observer = Callable[[int, int, int, int, int], None]


class Scheduler:
    def __init__(
        self, cfg: SimConfig, planned: Sequence[Planned], should_stop: Callable[[], bool] | None = None
    ) -> None:
        """A scheduler over a fresh block pool of cfg.num_blocks blocks, with every planned request queued
        to arrive at its step and the run's statistics at zero. should_stop() is asked while the
        requests are queued and while the run goes (see run)."""
        self.cfg = cfg
        self.bs = cfg.block_size
        self.pool = BlockPool(cfg.num_blocks)
        self.should_stop = should_stop
        self.reqs: list[_Request] = []
        self.arrivals: list[tuple[int, int]] = []  # heap of (step, request id)
        for i, p in enumerate(planned):
            if i % STOP_CHECK_REQUESTS == 0 and should_stop is not None and should_stop():
                raise SimulationStopped(f"stopped while queueing the requests, {i:,} of {len(planned):,}")
            self._add(p)
        self.waiting: deque[_Request] = deque()
        self.waiting_heap: list[tuple[int, int, int]] = []  # priority policy: (priority, arrival order, id)
        self.running: dict[int, _Request] = {}  # admission order
        self.prefilling: dict[int, _Request] = {}
        self.events: list[tuple[int, int, int, int]] = []  # (step, seq, version, id)
        self.seq = 0
        self.t = 0
        self.visited = 0  # steps the loop has run, of the self.t + 1 simulated
        self.blocked = False
        # statistics
        self.preemptions = self.recomputed = self.prompt_tokens = 0
        self.hit_tokens = self.hit_blocks = self.lookup_blocks = 0
        self.peak_used = self.peak_running = 0
        self.used_area = self.running_area = 0
        self.completed = 0
        self.finish_order: list[int] = []
        self.tail_waste_total = 0
        self.preempted_now = False
        self.finish_now: list[_Request] = []

    def _add(self, p: Planned) -> _Request:
        q = _Request(len(self.reqs), p)
        self.reqs.append(q)
        heapq.heappush(self.arrivals, (q.arrival, q.id))
        return q

    def key(self, q: _Request, j: int) -> Hashable:
        if q.prefix_id is not None and (j + 1) * self.bs <= q.shared_len:
            return (q.prefix_id, j)
        return q.id, j

    # states -------------------------------------------------------------------------------
    def process_event(self, request_id: int, event: Event) -> State:
        """Request `request_id` takes `event`: its new state, its queue following. An event its
        state does not take raises SchedulerStateError and changes nothing. The steps send every
        event themselves, with the blocks it implies; from outside this is the state machine alone
        (an accepted event moves the request, not its blocks)."""
        q = self.reqs[request_id]
        self._transition(q, event)
        return q.state

    def _transition(self, q: _Request, event: Event) -> None:
        """The one place a request changes state, and the queues follow: the waiting queue holds
        WAITING (at the back) and PREEMPTED (at the front) requests, `running` the running ones
        in admission order, `prefilling` those of them still computing their prompt."""
        old = q.state
        new = TRANSITIONS.get((old, event))
        if new is None:
            problem = f"request {q.id}: no transition from {old.value} on {event.value}"
            raise SchedulerStateError(problem)
        if old in QUEUED:
            self._pop_waiting(q)
        elif old is State.PREFILLING:
            del self.prefilling[q.id]
        if old in RUNNING and new not in RUNNING:
            del self.running[q.id]
        elif new in RUNNING and old not in RUNNING:
            self.running[q.id] = q
        if new is State.PREFILLING:
            self.prefilling[q.id] = q
        elif new in QUEUED:
            self._enqueue(q, front=new is State.PREEMPTED)
        q.state = new

    # waiting queue ------------------------------------------------------------------------
    def _enqueue(self, q: _Request, front: bool) -> None:
        if self.cfg.policy == "priority":
            heapq.heappush(self.waiting_heap, (q.priority, q.arrival, q.id))
        elif front:
            self.waiting.appendleft(q)
        else:
            self.waiting.append(q)

    def _peek_waiting(self) -> _Request | None:
        if self.cfg.policy == "priority":
            return self.reqs[self.waiting_heap[0][2]] if self.waiting_heap else None
        return self.waiting[0] if self.waiting else None

    def _pop_waiting(self, q: _Request) -> None:
        """Admission takes the head of the waiting queue, and only the head."""
        if self._peek_waiting() is not q:
            raise SchedulerStateError(f"request {q.id} admitted from behind the queue's head")
        if self.cfg.policy == "priority":
            heapq.heappop(self.waiting_heap)
        else:
            self.waiting.popleft()

    @property
    def n_waiting(self) -> int:
        return len(self.waiting_heap) if self.cfg.policy == "priority" else len(self.waiting)

    # blocks -------------------------------------------------------------------------------
    def _cache_full(self, q: _Request, computed: int) -> None:
        full = min(computed // self.bs, len(q.blocks))
        for j in range(q.hashed, full):
            self.pool.cache(q.blocks[j], self.key(q, j))
        q.hashed = max(q.hashed, full)

    def _decode_tokens(self, q: _Request, t: int) -> int:
        """Tokens of a decoding request at step t, before the step samples."""
        return q.prompt + q.gen0 + (t - q.s0)

    def _schedule_next(self, q: _Request, t: int) -> None:
        """The next step at which a decoding request needs a block, or finishes."""
        capacity = len(q.blocks) * self.bs
        need = q.s0 + (capacity + 1 - q.prompt - q.gen0)  # tokens exceed the blocks
        done = q.s0 + (q.output - 1 - q.gen0)  # samples its last token
        step = max(t, min(need, done))
        heapq.heappush(self.events, (step, q.seq, q.version, q.id))

    def _release(self, q: _Request, computed: int) -> None:
        self._cache_full(q, computed)
        self.pool.free(q.blocks)
        q.blocks = []
        q.version += 1
        self.blocked = False

    def _preempt_one(self, t: int) -> _Request:
        if self.cfg.policy == "priority":
            victim = max(self.running.values(), key=lambda r: (r.priority, r.seq))
        else:
            victim = self.running[next(reversed(self.running))]
        if victim.state is State.DECODING:
            victim.generated = victim.gen0 + (t - victim.s0)
            computed = victim.prompt + victim.generated - 1
        else:
            computed = victim.computed
        self.recomputed += computed
        self.preemptions += 1
        self._release(victim, computed)
        victim.computed = 0
        victim.hashed = 0
        self._transition(victim, Event.PREEMPT)
        return victim

    def _alloc(self, q: _Request, n: int, t: int) -> bool:
        """Allocate n blocks for q, preempting from the end of the running list when the pool is
        empty. False when q itself was preempted."""
        while self.pool.num_free < n:
            victim = self._preempt_one(t)
            self.preempted_now = True
            if victim is q:
                return False
        q.blocks += self.pool.allocate(n)
        return True

    # one step -----------------------------------------------------------------------------
    def _start_decoding(self, q: _Request, t: int) -> None:
        """Prefill done at step t: the step samples the first (or next) output token."""
        self._transition(q, Event.PREFILL_DONE)
        q.generated += 1
        q.s0, q.gen0 = t + 1, q.generated
        if q.generated >= q.output:
            self.finish_now.append(q)
        else:
            self._schedule_next(q, t + 1)

    def _prefill_chunk(self, q: _Request, budget: int, t: int) -> int:
        total = q.prompt + q.generated
        chunk = min(total - q.computed, budget)
        if chunk <= 0:
            return 0
        need = cdiv(q.computed + chunk, self.bs) - len(q.blocks)
        if need > 0 and not self._alloc(q, need, t):
            return 0
        q.computed += chunk
        self._cache_full(q, q.computed)
        if q.computed == total:
            self._start_decoding(q, t)
        return chunk

    def _admit(self, q: _Request, budget: int, t: int) -> int:
        """Admit the head of the waiting queue if its first chunk fits; the tokens it used, or 0."""
        total = q.prompt + q.generated
        hits: list[int] = []
        if self.cfg.prefix_caching:
            limit = (total - 1) // self.bs
            for j in range(limit):
                b = self.pool.lookup(self.key(q, j))
                if b is None:
                    break
                hits.append(b)
        hit_tokens = len(hits) * self.bs
        chunk = min(total - hit_tokens, budget)
        if chunk <= 0:
            return 0
        need = cdiv(hit_tokens + chunk, self.bs) - len(hits)
        evictable = sum(1 for b in hits if self.pool.ref[b] == 0)
        # vllm/v1/core/kv_cache_manager.py allocate_slots(full_sequence_must_fit=...): the gate
        # counts the blocks of the whole sequence beyond the prefix hits.
        gate = cdiv(total, self.bs) - len(hits) if self.cfg.admit_full_sequence else need
        if gate + evictable > self.pool.num_free:
            self.blocked = True
            return 0
        self._transition(q, Event.SCHEDULE)
        self.pool.touch(hits)
        q.blocks = hits + self.pool.allocate(need)
        q.hashed = len(hits)
        q.computed = hit_tokens + chunk
        self._cache_full(q, q.computed)
        self.prompt_tokens += total
        self.hit_tokens += hit_tokens
        self.hit_blocks += len(hits)
        self.lookup_blocks += total // self.bs
        self.seq += 1
        q.seq = self.seq
        q.version += 1
        if q.computed == total:
            self._start_decoding(q, t)
        return chunk

    def step(self, t: int) -> None:
        """Run one engine step t as vLLM's V1 scheduler does: arrivals join the queue; running requests in
        admission order get their decode slot or prefill chunk within the token budget (a block short
        preempts from the back); then, unless this step preempted, waiting requests are admitted from
        the head while budget and max_num_seqs allow; requests that sampled their last token finish at
        the step's end."""
        self.preempted_now = False
        self.finish_now = []
        # Requests handled this step, counted in a local (the hot loop): should_stop() is asked
        # every STOP_CHECK_REQUESTS of them, so a step of 100,000 arrivals stays interruptible.
        n, every = 0, STOP_CHECK_REQUESTS
        while self.arrivals and self.arrivals[0][0] <= t:
            n += 1
            if n % every == 0:
                self._stop_if_asked()
            _, rid = heapq.heappop(self.arrivals)
            self._transition(self.reqs[rid], Event.ARRIVE)
            self.blocked = False
        # Running requests with work this step, in running order: block needs and prefill chunks.
        due: list[_Request] = []
        while self.events and self.events[0][0] <= t:
            _, _, version, rid = heapq.heappop(self.events)
            q = self.reqs[rid]
            if q.version != version or q.state is not State.DECODING:
                continue
            due.append(q)
        work = sorted([*due, *self.prefilling.values()], key=lambda r: r.seq)
        n_decoding = len(self.running) - len(self.prefilling)
        budget = self.cfg.max_num_batched_tokens - n_decoding
        for q in work:
            n += 1
            if n % every == 0:
                self._stop_if_asked()
            if q.state not in RUNNING:
                continue  # preempted earlier this step
            if q.state is State.PREFILLING:
                if budget > 0:
                    budget -= self._prefill_chunk(q, budget, t)
                continue
            tokens = self._decode_tokens(q, t)
            if cdiv(tokens, self.bs) > len(q.blocks) and not self._alloc(q, 1, t):
                continue
            if q.s0 + (q.output - 1 - q.gen0) == t:
                self.finish_now.append(q)
            else:
                self._schedule_next(q, t + 1)
        # Admissions, unless this step preempted.
        if not self.preempted_now:
            while budget > 0 and len(self.running) < self.cfg.max_num_seqs:
                n += 1
                if n % every == 0:
                    self._stop_if_asked()
                head = self._peek_waiting()
                if head is None:
                    break
                used = self._admit(head, budget, t)
                if used == 0:
                    break
                budget -= used
        # End of step: requests that sampled their last token finish.
        for q in self.finish_now:
            n += 1
            if n % every == 0:
                self._stop_if_asked()
            if q.state is State.DECODING:
                self._finish(q, t)
        self.finish_now = []
        used = self.pool.in_use
        self.peak_used = max(self.peak_used, used)
        self.peak_running = max(self.peak_running, len(self.running))

    def _stop_if_asked(self) -> None:
        if self.should_stop is not None and self.should_stop():
            raise SimulationStopped(
                f"stopped at simulated step {self.t:,}, {self.completed:,} of {len(self.reqs):,} "
                "requests done",
            )

    def _finish(self, q: _Request, t: int) -> None:
        computed = q.prompt + q.output - 1
        self.tail_waste_total += len(q.blocks) * self.bs - computed
        self._release(q, computed)
        self._transition(q, Event.FINISH)
        q.done_step = t
        self.completed += 1
        self.finish_order.append(q.id)
        follow_up = q.planned.follow_up
        if follow_up is not None:
            self._add(next_turn(q.planned, follow_up, t))

    def next_step(self) -> int | None:
        """The next step where anything but plain decoding happens."""
        if self.prefilling:
            return self.t + 1
        if self.n_waiting and not self.blocked and len(self.running) < self.cfg.max_num_seqs:
            return self.t + 1
        cands = []
        if self.events:
            cands.append(self.events[0][0])
        if self.arrivals:
            cands.append(self.arrivals[0][0])
        if not cands:
            return None
        return max(self.t + 1, min(cands))

    def snapshot(self, step: int) -> Snapshot:
        pool = self.pool
        tables = []
        for q in self.running.values():
            tokens = self._decode_tokens(q, step + 1) if q.state is State.DECODING else q.computed
            tables.append(TableEntry(q.id, q.state.value, tokens, tuple(q.blocks)))
        queue = tuple(pool.free_queue())
        waiting = (
            [q.id for q in self.waiting]
            if self.cfg.policy == "fcfs"
            else [e[2] for e in sorted(self.waiting_heap)]
        )
        return Snapshot(
            step=step,
            tables=tuple(tables),
            ref_cnt=dict(pool.referenced()),
            free_queue=queue,
            cached=tuple(b for b in queue if pool.is_cached(b)),
            waiting=tuple(waiting),
            finished=tuple(q.id for q in self.reqs if q.state is State.FINISHED),
        )

    def run(
        self,
        snapshot_steps: Sequence[int] = (),
        observe: Observer | None = None,
    ) -> list[Snapshot]:
        """Run to the last completion; observe(step, blocks in use, cached free blocks, running,
        waiting) after every step the loop visits. Stops with InvalidInput when preemptions push
        the run past the limits step_bound enforces up front, and with SimulationStopped when
        the should_stop() it was built with says so."""
        pending = sorted(set(snapshot_steps))
        snapshots: list[Snapshot] = []
        if self.arrivals:
            self.t = self.arrivals[0][0]
        while True:
            self.step(self.t)
            self.visited += 1
            if observe is not None:
                observe(self.t, self.pool.in_use, self.pool.cached_free, len(self.running), self.n_waiting)
            nxt = self.next_step()
            if nxt is None:
                if self.running or self.n_waiting:
                    # Every request fits the pool alone, so an idle pool admits the queue's head.
                    raise SchedulerStateError("the simulation stopped making progress")
                snapshots += [self.snapshot(s) for s in pending if s >= self.t]
                return snapshots
            while pending and pending[0] < nxt:
                s = pending.pop(0)
                if s >= self.t:
                    snapshots.append(self.snapshot(s))
            if self.visited % STOP_CHECK_INTERVAL == 0:
                self._check_limits()
            span = nxt - self.t
            self.used_area += self.pool.in_use * span
            self.running_area += len(self.running) * span
            self.t = nxt

    def _check_limits(self) -> None:
        if self.visited > MAX_SIMULATED_STEPS or self.pool.allocated > MAX_BLOCK_EVENTS:
            raise InvalidInput(
                "workload",
                f"{self.preemptions:,} preemptions threw away {self.recomputed:,} tokens, and "
                f"recomputing them took the simulation past its limits ({MAX_SIMULATED_STEPS:,} "
                f"steps, {MAX_BLOCK_EVENTS:,} blocks handed out) at step {self.t:,}: give the pool "
                "more blocks or simulate fewer requests",
            )
        self._stop_if_asked()
