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

The loop is event-driven: between arrivals, completions, admissions and prefill chunks every
running request just decodes one token a step, and the only change to the pool is a decoding
request taking its next block when its tokens cross a block boundary. Those steps are advanced
together (runs.py), not replayed: a decoding request crosses a boundary every block_size steps,
so the requests sit on a wheel of block_size buckets by the step (mod block_size) of their
crossings, in admission order within a bucket, which is the order the step would serve them. A run
of steps takes its blocks from the pool at once, in that order, while the free blocks cover them;
the step whose crossings they do not cover is run as a whole step (it preempts).

A request's state changes in one place, `_transition`, by the table TRANSITIONS; the queue a
request sits in (waiting, running, prefilling) follows from its state there and nowhere else. An
event its state does not take is refused (SchedulerStateError) before any state or queue changes;
`process_event` is that door from outside, as h11's ConnectionState.process_event is.

How many steps a run can take is known before it starts (config.py `step_bound`, `visit_bound`);
the limits, and the caller's `should_stop`, are checked again while it runs.
"""

from __future__ import annotations

import bisect
import heapq
import math
from collections import deque
from collections.abc import Callable, Sequence

from ..errors import InvalidInput, SchedulerStateError, SimulationStopped
from ..limits import (
    MAX_BLOCK_EVENTS,
    MAX_SIMULATED_STEPS,
)
from ..units import cdiv
from . import runs
from .anonpool import ANON, AnonymousPool
from .blockpool import BlockPool
from .clock import Batch, Clock
from .config import SimConfig
from .frontend import Frontend
from .keys import key_list
from .latency import GapHistogram
from .request import NO_BLOCKS, Request, by_seq
from .runs import RunObserver
from .snapshot import Snapshot, snapshot
from .states import QUEUED, RUNNING, TRANSITIONS, Event, State
from .workload import Planned, next_turn

# The run checks its limits and asks should_stop() once per this many steps: a step costs 3 µs
# to a few ms (a large chunk in blocks of 1), a check about 0.3 µs, so checking costs ~1% and
# answers within ~0.1 s.
STOP_CHECK_INTERVAL = 16
# Within a step, and while the requests are queued, should_stop() is asked once per this many
# requests handled: a step that admits, advances or finishes tens of thousands of requests takes
# up to ~0.4 s (100,000 arriving at once), an admission up to ~40 µs, so checks are ~10 ms apart.
STOP_CHECK_REQUESTS = 256
EVERY_BLOCK = 1 << 62  # Request.own_from once every block is keyed


# -- the scheduler ------------------------------------------------------------------------------
Observer = Callable[..., None]  # (step, blocks used, cached free, running, waiting[, seconds])


def _one_by_one(observe: Observer) -> RunObserver:
    def each(run: runs.Crossings) -> None:
        for p in run.records(range(run.count)):
            observe(*p)

    return each


class Scheduler:
    def __init__(
        self,
        cfg: SimConfig,
        planned: Sequence[Planned],
        should_stop: Callable[[], bool] | None = None,
        clock: Clock | None = None,
        concurrency: int | None = None,
        block_ids: bool = True,
    ) -> None:
        """A scheduler over a fresh block pool of cfg.num_blocks blocks, with every planned request queued
        to arrive at its step and the run's statistics at zero. should_stop() is asked while the
        requests are queued and while the run goes (see run). With a clock the run is timed:
        arrivals are in seconds, and at most `concurrency` requests are in flight when given
        (vllm bench serve --max-concurrency: the next is sent when one finishes). Without
        block_ids the pool names only the blocks a lookup can find (anonpool.py): the same
        figures, faster, and no snapshots."""
        self.cfg = cfg
        self.bs = cfg.block_size
        self.pool: BlockPool | AnonymousPool = (BlockPool if block_ids else AnonymousPool)(cfg.num_blocks)
        self.should_stop = should_stop
        self.clock = clock
        self.concurrency = concurrency
        self.backlog: deque[Request] = deque()  # closed loop: requests not sent yet, in order
        self.in_flight = 0
        self.itl = GapHistogram()
        self.step_end = 0.0  # timed: when the step being run ends
        self.wait_reason = ""  # timed: why requests wait after the step's admissions (_wait_reason)
        self.waited: dict[str, float] = {}  # timed: seconds requests waited, by that reason
        self.prefix_numbers: dict[str, int] = {}
        self.reqs: list[Request] = []
        self.arrivals: list[tuple[float, int]] = []  # heap of (step or seconds, request id)
        # Timed, with a server (clock.server): the requests sent and not through it yet; whether
        # steps are scheduled one ahead; and the time before which a request must reach the engine
        # to join the next step (None: that step's start).
        server = None if clock is None else clock.server
        self.front = None if server is None else Frontend(server)
        self.ahead = server is not None and server.scheduled_ahead
        self.visible: float | None = None
        if concurrency is not None:
            planned = sorted(planned, key=lambda p: p.request.arrival_time or 0.0)
        for i, p in enumerate(planned):
            if i % STOP_CHECK_REQUESTS == 0 and should_stop is not None and should_stop():
                raise SimulationStopped(f"stopped while queueing the requests, {i:,} of {len(planned):,}")
            self._add(p)
        self.waiting: deque[Request] = deque()
        self.waiting_heap: list[tuple[int, float, int]] = []  # priority policy: (priority, arrival order, id)
        self.running: dict[int, Request] = {}  # admission order
        self.prefilling: dict[int, Request] = {}
        # Decoding requests: the wheel (bucket j: those crossing a block boundary at steps ≡ j mod
        # block_size, in admission order), and a heap of the steps at which they sample their last
        # token, (step, seq, version, id), stale once the request's version moves on.
        self.wheel: list[list[Request]] = [[] for _ in range(cfg.block_size)]
        self.events: list[tuple[int, int, int, int]] = []
        self.seq = 0
        self.t = 0
        self.visited = 0  # steps the loop has run one by one, of the self.t + 1 simulated
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
        self.finish_now: list[Request] = []
        self.first_now: list[Request] = []  # timed: prefills completed this step
        # Requests decoding: how many, and Σ (prompt + gen0 − s0), so that Σ of their KV lengths
        # at step t is dec_base + n_dec·t (_decode_tokens); this step's decode batch.
        self.n_dec = self.dec_base = 0
        self.step_dn = self.step_dctx = 0
        self.step_pn = self.step_ptok = self.step_pctx = 0

    def _add(self, p: Planned) -> Request:
        q = Request(len(self.reqs), p)
        q.own_from = q.shared_len // self.bs if q.prefix_id is not None or q.chain else 0
        self.reqs.append(q)
        if self.concurrency is None:
            q.t_arrive = q.arrival
            self._push(q.arrival, q)
        elif self.in_flight < self.concurrency and not self.backlog:
            self._send(q, q.arrival)
        else:
            self.backlog.append(q)
        return q

    def _send(self, q: Request, at: float) -> None:
        """Closed loop: the client sends q at `at` seconds, a slot being free."""
        q.t_arrive = at
        self.in_flight += 1
        self._push(at, q)

    def _push(self, at: float, q: Request) -> None:
        if self.front is None:
            heapq.heappush(self.arrivals, (at, q.id))
        else:
            self.front.send(at, q.id, q.prompt)

    def _next_arrival(self) -> float | None:
        """Timed: when the next request reaches the engine (through the server, if any)."""
        arrival = self.arrivals[0][0] if self.arrivals else None
        through = None if self.front is None else self.front.next_through()
        if through is not None:
            arrival = through if arrival is None else min(arrival, through)
        return arrival

    def _key_list(self, q: Request, n: int) -> list[int]:
        return key_list(q, n, self.bs, self.prefix_numbers)

    def process_event(self, request_id: int, event: Event) -> State:
        """Request `request_id` takes `event`: its new state, its queue following. An event its
        state does not take raises SchedulerStateError and changes nothing. The steps send every
        event themselves, with the blocks it implies; from outside this is the state machine alone
        (an accepted event moves the request, not its blocks)."""
        q = self.reqs[request_id]
        self._transition(q, event)
        return q.state

    @property
    def block_ids(self) -> bool:
        """Whether the pool names every block. Without ids a decoding request's table is written
        when it is read (_catch_up), not at each boundary a run crosses: its length follows from
        its tokens."""
        return isinstance(self.pool, BlockPool)

    def _transition(self, q: Request, event: Event) -> None:
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
    def _enqueue(self, q: Request, front: bool) -> None:
        if self.cfg.policy == "priority":
            heapq.heappush(self.waiting_heap, (q.priority, q.arrival, q.id))
        elif front:
            self.waiting.appendleft(q)
        else:
            self.waiting.append(q)

    def _peek_waiting(self) -> Request | None:
        if self.cfg.policy == "priority":
            return self.reqs[self.waiting_heap[0][2]] if self.waiting_heap else None
        return self.waiting[0] if self.waiting else None

    def _pop_waiting(self, q: Request) -> None:
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
    def _cache_full(self, q: Request, computed: int) -> None:
        full = min(computed // self.bs, len(q.blocks), q.own_from)
        if full > q.hashed:
            self.pool.cache_run(q.blocks, self._key_list(q, full), q.hashed, full)
            q.hashed = full

    def _decode_tokens(self, q: Request, t: int) -> int:
        """Tokens of a decoding request at step t, before the step samples."""
        return q.prompt + q.gen0 + (t - q.s0)

    def _release(self, q: Request, computed: int, finished: bool = False) -> None:
        if not finished:  # preempted: it will look its own blocks up when it comes back
            q.own_from = EVERY_BLOCK
        self._cache_full(q, computed)
        full = min(computed // self.bs, len(q.blocks))
        if full > q.hashed:  # finished: its own full blocks are hashed, and never looked up
            self.pool.seal(q.blocks, q.hashed, full)
        self.pool.free(q.blocks)
        q.blocks = NO_BLOCKS
        q.version += 1
        self.blocked = False

    def _preempt_one(self, t: int, current: Request) -> Request:
        """Preempt the last running request (the lowest priority's youngest under priority), as
        vLLM does when `current` finds no free block at step t: it frees every block and goes to
        the front of the queue, its computed tokens to be recomputed. Returns the victim."""
        if self.cfg.policy == "priority":
            victim = max(self.running.values(), key=lambda r: (r.priority, r.seq))
        else:
            victim = self.running[next(reversed(self.running))]
        if victim.state is State.DECODING:
            if not self.block_ids:  # its blocks to the last step run (this one, if served in it)
                self._catch_up(victim, self._decode_tokens(victim, t) - 1)
            self._keep_pending_visit(victim, t, current)
            victim.generated = victim.gen0 + (t - victim.s0)
            computed = victim.prompt + victim.generated - 1
            self._stop_decoding(victim)
            # It loses this step's slot before decoding in it (vLLM preempts from the tail).
            self.step_dn -= 1
            self.step_dctx -= self._decode_tokens(victim, t)
            if self.clock is not None:
                victim.t_last = self.clock.now
        else:
            computed = victim.computed
        self.recomputed += computed
        self.preemptions += 1
        self._release(victim, computed)
        victim.computed = 0
        victim.hashed = 0
        self._transition(victim, Event.PREEMPT)
        return victim

    def _alloc(self, q: Request, n: int, t: int) -> bool:
        """Allocate n blocks for q, preempting from the end of the running list when the pool is
        empty. False when q itself was preempted."""
        while self.pool.num_free < n:
            victim = self._preempt_one(t, q)
            self.preempted_now = True
            if victim is q:
                return False
        q.blocks += self.pool.allocate(n)
        return True

    def _cross_at_once(self, crossing: list[Request], t: int) -> None:
        """The requests crossing a block boundary this step take their blocks at once when
        nothing between them in running order takes any (no prefill older than the youngest) and
        the pool covers them all: the same blocks, in the same order, as one at a time. (A prefill
        is always the youngest running request, as the oldest takes the budget first; the check
        keeps the shortcut exact should that change.)"""
        if crossing and self.pool.num_free >= len(crossing):
            first_prefill = next(iter(self.prefilling.values()), None)
            if first_prefill is None or crossing[-1].seq < first_prefill.seq:
                pool = self.pool
                if isinstance(pool, AnonymousPool):
                    pool.take(len(crossing))
                    for q in crossing:
                        self._catch_up(q, self._decode_tokens(q, t))
                    return
                for q, block in zip(crossing, pool.allocate(len(crossing)), strict=True):
                    q.blocks.append(block)

    def _catch_up(self, q: Request, tokens: int) -> None:
        """Without block ids: a decoding request's table as long as `tokens` need, the blocks that
        runs handed it (runs.cross counts them in the pool, not in its table) written at once."""
        missing = cdiv(tokens, self.bs) - len(q.blocks)
        if missing > 0:
            q.blocks += [ANON] * missing

    def _keep_pending_visit(self, victim: Request, t: int, current: Request) -> None:
        """The series samples the steps the loop visits, and the loop has always visited the
        step of a preempted request's next event (its next block boundary or last token), as
        though it still ran: that step stays a visit (version −1), so answers stay the same."""
        done = victim.s0 + (victim.output - 1 - victim.gen0)
        due = victim.phase == t % self.bs or done == t
        if due and (victim.seq >= current.seq or done == t):
            return  # taken into this step's work, and not yet given its next event
        boundary = t + ((victim.phase - t) % self.bs or self.bs)
        heapq.heappush(self.events, (min(boundary, done), victim.seq, -1, victim.id))

    def _next_event(self) -> int | None:
        """The next step a decoding request samples its last token, or a kept visit."""
        events, reqs = self.events, self.reqs
        while events:
            step, _, version, rid = events[0]
            if version < 0 or reqs[rid].version == version:
                return step
            heapq.heappop(events)
        return None

    # one step -----------------------------------------------------------------------------
    def _stop_decoding(self, q: Request) -> None:
        self.n_dec -= 1
        self.dec_base -= q.prompt + q.gen0 - q.s0
        if q.phase >= 0:
            self.wheel[q.phase].remove(q)
            q.phase = -1

    def _start_decoding(self, q: Request, t: int) -> None:
        """Prefill done at step t: the step samples the first (or next) output token."""
        self._transition(q, Event.PREFILL_DONE)
        q.generated += 1
        q.s0, q.gen0 = t + 1, q.generated
        self.n_dec += 1
        self.dec_base += q.prompt + q.gen0 - q.s0
        if self.clock is not None:
            self.first_now.append(q)
        if q.generated >= q.output:
            self.finish_now.append(q)
            return
        # Its KV holds prompt + gen0 − 1 tokens in full blocks' worth: it crosses into a new block
        # at the steps where that count is a multiple of block_size, the first in s0..s0 + bs − 1.
        q.phase = (q.s0 + 1 - q.prompt - q.gen0) % self.bs
        bisect.insort(self.wheel[q.phase], q, key=by_seq)
        done = q.s0 + (q.output - 1 - q.gen0)  # the step that samples its last token
        heapq.heappush(self.events, (done, q.seq, q.version, q.id))

    def _prefill_chunk(self, q: Request, budget: int, t: int) -> int:
        total = q.prompt + q.generated
        chunk = min(total - q.computed, budget)
        if chunk <= 0:
            return 0
        need = cdiv(q.computed + chunk, self.bs) - len(q.blocks)
        if need > 0 and not self._alloc(q, need, t):
            return 0
        self.step_pn += 1
        self.step_ptok += chunk
        self.step_pctx += chunk * (q.computed + chunk)
        q.computed += chunk
        self._cache_full(q, q.computed)
        if q.computed == total:
            self._start_decoding(q, t)
        return chunk

    def _admit(self, q: Request, budget: int, t: int) -> int:
        """Admit the head of the waiting queue if its first chunk fits; the tokens it used, or 0."""
        total = q.prompt + q.generated
        hits: list[int] = []
        limit = min((total - 1) // self.bs, q.own_from)  # its own blocks are not keyed yet
        if self.cfg.prefix_caching and limit > 0:
            hits = self.pool.longest_hit(self._key_list(q, limit), limit)
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
        if self.clock is not None and q.t_sched < 0:
            q.t_sched = self.clock.now
        self.step_pn += 1
        self.step_ptok += chunk
        self.step_pctx += chunk * (hit_tokens + chunk)
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
        self.step_pn = self.step_ptok = self.step_pctx = 0
        if self.clock is None:
            horizon = float(t)  # a float from the start: the compiled build holds it as one
        else:
            if self.front is not None:
                self.front.through(self.clock.now, self.arrivals)
            # Scheduled a step ahead (async scheduling), a step sees what reached the engine
            # before its predecessor started (see _next_timed).
            horizon = self.clock.now if self.visible is None else self.visible
        # Requests handled this step, counted in a local (the hot loop): should_stop() is asked
        # every STOP_CHECK_REQUESTS of them, so a step of 100,000 arrivals stays interruptible.
        n, every = 0, STOP_CHECK_REQUESTS
        while self.arrivals and self.arrivals[0][0] <= horizon:
            n += 1
            if n % every == 0:
                self.stop_if_asked()
            _, rid = heapq.heappop(self.arrivals)
            self._transition(self.reqs[rid], Event.ARRIVE)
            self.blocked = False
        # Running requests with work this step, in running order: block boundaries crossed, last
        # tokens sampled, prefill chunks.
        phase = t % self.bs
        due = [*self.wheel[phase], *self.prefilling.values()]
        while self.events and self.events[0][0] <= t:
            _, _, version, rid = heapq.heappop(self.events)
            q = self.reqs[rid]
            if q.version == version and q.state is State.DECODING and q.phase != phase:
                due.append(q)
        work = sorted(due, key=by_seq)
        self._cross_at_once(self.wheel[phase], t)
        catch_up = not self.block_ids
        self.step_dn, self.step_dctx = self.n_dec, self.dec_base + self.n_dec * t
        n_decoding = len(self.running) - len(self.prefilling)
        budget = self.cfg.max_num_batched_tokens - n_decoding
        bs, decoding, prefilling = self.bs, State.DECODING, State.PREFILLING
        for q in work:
            n += 1
            if n % every == 0:
                self.stop_if_asked()
            state = q.state
            if state is prefilling:
                if budget > 0:
                    budget -= self._prefill_chunk(q, budget, t)
                continue
            if state is not decoding:
                continue  # preempted earlier this step
            tokens = self._decode_tokens(q, t)
            if catch_up:  # its blocks to the last step
                self._catch_up(q, tokens - 1)
            if cdiv(tokens, bs) > len(q.blocks) and not self._alloc(q, 1, t):
                continue
            if q.s0 + (q.output - 1 - q.gen0) == t:
                self.finish_now.append(q)
        # Admissions, unless this step preempted.
        if not self.preempted_now:
            while budget > 0 and len(self.running) < self.cfg.max_num_seqs:
                n += 1
                if n % every == 0:
                    self.stop_if_asked()
                head = self._peek_waiting()
                if head is None:
                    break
                used = self._admit(head, budget, t)
                if used == 0:
                    break
                budget -= used
        if self.clock is not None:
            self._time_step()
            self.wait_reason = self._wait_reason()
        # End of step: requests that sampled their last token finish.
        for q in self.finish_now:
            n += 1
            if n % every == 0:
                self.stop_if_asked()
            if q.state is State.DECODING:
                self._finish(q, t)
        self.finish_now = []
        used = self.pool.in_use
        self.peak_used = max(self.peak_used, used)
        self.peak_running = max(self.peak_running, len(self.running))

    def stop_if_asked(self) -> None:
        if self.should_stop is not None and self.should_stop():
            raise SimulationStopped(
                f"stopped at simulated step {self.t:,}, {self.completed:,} of {len(self.reqs):,} "
                "requests done",
            )

    def _wait_reason(self) -> str:
        """Why requests still wait after this step's admissions (timed runs: what binds)."""
        if not self.n_waiting:
            return ""
        if len(self.running) >= self.cfg.max_num_seqs:
            return "max_num_seqs"
        if self.preempted_now or self.blocked:
            return "kv_capacity"
        return "max_num_batched_tokens"

    def _time_step(self) -> None:
        """Timed: the step's duration from its batch; the tokens it samples get their times."""
        clock = self.clock
        assert clock is not None
        batch = Batch(self.step_dn, self.step_dctx, self.step_pn, self.step_ptok, self.step_pctx)
        d = clock.step(batch) if self.step_dn or self.step_pn else 0.0
        end = self.step_end = clock.now + d
        if d:
            self.itl.add(d, self.step_dn)
        for q in self.first_now:
            if q.t_first < 0:
                q.t_first = end
            else:  # recomputed after a preemption: one gap since its last token
                self.itl.add(end - q.t_last, 1)
        self.first_now = []

    def _finish(self, q: Request, t: int) -> None:
        computed = q.prompt + q.output - 1
        self.tail_waste_total += len(q.blocks) * self.bs - computed
        self._release(q, computed, finished=True)
        q.keys = NO_BLOCKS  # a finished request's blocks are only ever looked up by others' keys
        self._stop_decoding(q)
        self._transition(q, Event.FINISH)
        q.done_step = t
        self.completed += 1
        self.finish_order.append(q.id)
        done = None
        if self.clock is not None:
            done = q.t_done = self.step_end
            if self.concurrency is not None:
                self.in_flight -= 1
                if self.backlog:
                    nxt = self.backlog.popleft()
                    self._send(nxt, max(nxt.arrival, done))
        follow_up = q.planned.follow_up
        if follow_up is not None:
            self._add(next_turn(q.planned, follow_up, t, done))

    def next_step(self) -> int | None:
        """The next step where anything but plain decoding (and crossing block boundaries) happens."""
        if self.prefilling:
            return self.t + 1
        if self.n_waiting and not self.blocked and len(self.running) < self.cfg.max_num_seqs:
            return self.t + 1
        cands = []
        event = self._next_event()
        if event is not None:
            cands.append(event)
        if self.arrivals:
            cands.append(int(self.arrivals[0][0]))  # a step: this is the untimed loop
        if not cands:
            return None
        return max(self.t + 1, min(cands))

    def _next_timed(self, clock: Clock) -> tuple[int | None, float]:
        """Timed: the next step where anything but plain decoding happens, and when it starts. An
        arrival joins at the first step that starts at or after it, or, scheduled a step ahead
        (clock.server.scheduled_ahead: async scheduling), at the step after that, unless the engine
        idles; the decode-only steps before are summed by the clock (and their gaps go to the ITL
        histogram). Sets self.visible: what the next step sees of the arrivals."""
        t, end = self.t, self.step_end
        ahead = self.ahead
        # Back to back, the next step was scheduled when this one started (clock.now).
        self.visible = clock.now if ahead else None
        if self.front is not None:
            self.front.through(end, self.arrivals)  # later sends are sent at a later step's end
        if self.prefilling or (
            self.n_waiting and not self.blocked and len(self.running) < self.cfg.max_num_seqs
        ):
            return t + 1, end
        if not self.running and self.front is not None:
            self.front.settle(self.arrivals)
        arrival = self._next_arrival()
        if not self.running:  # idle until the next arrival, which an idle engine schedules at once
            self.visible = None
            return (None, end) if arrival is None else (t + 1, max(end, arrival))
        event = self._next_event()
        if event is None:
            event = t + 1
        elif cdiv(event - t - 1, self.bs) * self.n_dec > self.pool.num_free:  # may run out first
            event = runs.covered_until(self, t + 1, event)
        limit = event - (t + 1)  # decode-only steps before the event's (or the pool's end)
        # Scheduled ahead, a step sees what arrived before its predecessor started: the first step
        # to start at or after an arrival only decodes, and the arrival joins the step after it.
        unseen = ahead and arrival is not None and arrival > clock.now
        if limit <= 0 or (arrival is not None and arrival <= end and not unseen):
            return t + 1, end
        n = self.n_dec
        ctx = self.dec_base + n * (t + 1)
        if arrival is not None and arrival <= end:
            k, elapsed = 0, 0.0
        else:
            k, elapsed = clock.decode_run(n, ctx, limit, math.inf if arrival is None else arrival - end)
        if unseen and k < limit:
            elapsed += clock.step(Batch(n, ctx + k * n, 0, 0, 0))
            k += 1
        if k:
            a, b, until = clock.timer.decode_line(n, ctx)  # the run's first and last step's length
            first, end_ctx = a + b * ctx, ctx + (k - 1) * n
            last = a + b * end_ctx if end_ctx <= until else clock.timer.seconds(Batch(n, end_ctx, 0, 0, 0))
            self.itl.add_run(first, last, k, elapsed, n)
            if ahead:
                self.visible = end + elapsed - last  # the last summed step's start
        return t + 1 + k, end + elapsed

    def snapshot(self, step: int) -> Snapshot:
        if not self.block_ids:
            raise SchedulerStateError("a snapshot shows block ids: run with block_ids")
        return snapshot(self, step)

    def run(
        self,
        snapshot_steps: Sequence[int] = (),
        observe: Observer | None = None,
        observe_run: RunObserver | None = None,
    ) -> list[Snapshot]:
        """Run to the last completion; observe(step, blocks in use, cached free blocks, running,
        waiting) after every step the loop visits, and after each step of a decode run that
        crosses a block boundary (or observe_run(the run's runs.Crossings), which makes those
        records on demand, if given; an observer that keeps a run for later calls its observed()
        first, before the loop moves on). Stops with InvalidInput
        when preemptions push the run past the limits visit_bound enforces up front, and with
        SimulationStopped when the should_stop() it was built with says so."""
        try:
            return self._run(snapshot_steps, observe, observe_run)
        finally:
            if NO_BLOCKS:  # a request added to the table every request without one shares
                NO_BLOCKS.clear()  # (for the next simulation; this one's answer is void)
                raise SchedulerStateError("a request added to the shared empty block table")

    def _run(
        self, snapshot_steps: Sequence[int], observe: Observer | None, observe_run: RunObserver | None
    ) -> list[Snapshot]:
        """run()'s loop: visit a step, then advance the decode run to the next step that needs a
        visit; the snapshots asked for, taken as the loop passes their steps."""
        pending = sorted(set(snapshot_steps))
        snapshots: list[Snapshot] = []
        tell_run = None if observe is None else observe_run or _one_by_one(observe)
        clock = self.clock
        if self.arrivals:
            if clock is None:
                self.t = int(self.arrivals[0][0])
            else:  # steps count from the first arrival's
                clock.now = self.arrivals[0][0]
        elif clock is not None and self.front is not None and self.front.first() is not None:
            self.front.settle(self.arrivals)  # through the server
            clock.now = self.arrivals[0][0]
        checked = 0
        while True:
            self.step(self.t)
            self.visited += 1
            self.used_area += self.pool.in_use
            if observe is not None:
                point = (self.t, self.pool.in_use, self.pool.cached_free, len(self.running), self.n_waiting)
                observe(*point) if clock is None else observe(*point, clock.now)
            if clock is None:
                nxt = self.next_step()
            else:
                start = clock.now
                nxt, clock.now = self._next_timed(clock)
                if self.wait_reason:  # the reason holds until the next visited step
                    self.waited[self.wait_reason] = self.waited.get(self.wait_reason, 0.0) + clock.now - start
            if nxt is None:
                if self.running or self.n_waiting:
                    # Every request fits the pool alone, so an idle pool admits the queue's head.
                    raise SchedulerStateError("the simulation stopped making progress")
                snapshots += [self.snapshot(s) for s in pending if s >= self.t]
                return snapshots
            crossed: list[runs.Crossings] = []
            nxt = runs.advance(self, nxt, pending, snapshots, crossed)
            if crossed and tell_run is not None:
                for run in crossed:  # told while the scheduler is as the runs left it
                    tell_run(run)
            if self.visited - checked >= STOP_CHECK_INTERVAL:
                checked = self.visited
                self._check_limits()
            self.running_area += len(self.running) * (nxt - self.t)
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
        self.stop_if_asked()
