"""A step-level simulation of vLLM's scheduler on its block pool (vllm/v1/core/sched/scheduler.py,
vllm/v1/core/kv_cache_manager.py, VLLM_FACTS §7).

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
"""

from __future__ import annotations

import heapq
import math
import random
from collections import deque
from collections.abc import Hashable, Sequence

import msgspec

from . import warnings as w
from .blockpool import BlockPool
from .errors import InvalidInput
from .units import cdiv

MAX_REQUESTS = 100_000
MAX_TOKENS_PER_REQUEST = 1 << 24
MAX_TOTAL_TOKENS = 200_000_000
# Work scales with block boundaries crossed: bound tokens ÷ block size (the benchmark's 10,000
# requests of ~1,200 tokens in blocks of 16 are 750,000).
MAX_BLOCK_EVENTS = 3_000_000
MAX_SERIES = 500
MAX_STEPS = 1 << 40


class SimRequest(msgspec.Struct, frozen=True, kw_only=True):
    arrival_step: int = 0
    prompt_tokens: int
    output_tokens: int
    prefix_id: str | None = None
    prefix_tokens: int = 0
    priority: int = 0


class Length(msgspec.Struct, frozen=True, kw_only=True):
    """A length distribution: fixed (value), uniform (low..high) or lognormal (mean, sigma)."""

    kind: str = "fixed"
    value: int | None = None
    low: int | None = None
    high: int | None = None
    mean: float | None = None
    sigma: float | None = None


class Conversations(msgspec.Struct, frozen=True, kw_only=True):
    """A share of requests open multi-turn conversations: each next turn arrives think_steps
    after the previous one finishes, its prompt the whole history plus user_tokens new tokens."""

    share: float
    turns: int
    user_tokens: int
    think_steps: int = 0


class Generator(msgspec.Struct, frozen=True, kw_only=True):
    count: int
    arrival_rate: float
    prompt: Length
    output: Length
    system_prompt_share: float = 0.0
    system_prompt_tokens: int = 0
    conversations: Conversations | None = None
    seed: int = 0


class SimConfig(msgspec.Struct, frozen=True, kw_only=True):
    num_blocks: int
    block_size: int
    max_num_seqs: int = 256
    max_num_batched_tokens: int = 8192
    policy: str = "fcfs"
    prefix_caching: bool = True


class SeriesPoint(msgspec.Struct, frozen=True, array_like=False):
    step: int
    blocks_used: int
    cached_free_blocks: int
    running: int
    waiting: int


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


MAX_SNAPSHOTS = 10
MAX_SNAPSHOT_BLOCKS = 4096


class SimResult(msgspec.Struct, frozen=True, kw_only=True):
    steps: int
    requests: int
    completed: int
    preemptions: int
    recomputed_tokens: int
    prompt_tokens: int
    cache_hit_tokens: int
    cache_hit_rate_tokens: float
    cache_hit_blocks: int
    cache_lookup_blocks: int
    cache_hit_rate_blocks: float
    usable_blocks: int
    block_size: int
    peak_blocks_in_use: int
    mean_blocks_in_use: float
    peak_running: int
    mean_running: float
    formula_concurrency: int
    tail_waste_tokens_mean: float
    series: tuple[SeriesPoint, ...]
    warnings: tuple[w.Warning, ...]
    snapshots: tuple[Snapshot, ...] = ()


# -- workloads -------------------------------------------------------------------------------
def _draw(rng: random.Random, d: Length, field: str) -> int:
    if d.kind == "fixed":
        if d.value is None or d.value < 1:
            raise InvalidInput(f"{field}.value", "a fixed length needs value ≥ 1")
        return d.value
    if d.kind == "uniform":
        if d.low is None or d.high is None or not 1 <= d.low <= d.high:
            raise InvalidInput(f"{field}.low", "uniform needs 1 ≤ low ≤ high")
        return rng.randint(d.low, d.high)
    if d.kind == "lognormal":
        if d.mean is None or d.sigma is None or not (d.mean >= 1 and 0 <= d.sigma <= 5):
            raise InvalidInput(f"{field}.mean", "lognormal needs mean ≥ 1 and 0 ≤ sigma ≤ 5")
        mu = math.log(d.mean) - d.sigma**2 / 2  # so that the mean length is `mean`
        return max(1, min(MAX_TOKENS_PER_REQUEST, round(rng.lognormvariate(mu, d.sigma))))
    raise InvalidInput(f"{field}.kind", "must be fixed, uniform or lognormal")


class _Req:
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
        "prefix_id",
        "priority",
        "prompt",
        "s0",
        "seq",
        "shared_len",
        "state",
        "turn",
        "version",
    )

    def __init__(self, rid: int, r: SimRequest, shared_len: int) -> None:
        self.id = rid
        self.arrival = r.arrival_step
        self.prompt = r.prompt_tokens
        self.output = r.output_tokens
        self.prefix_id = r.prefix_id
        self.shared_len = shared_len
        self.priority = r.priority
        self.blocks: list[int] = []
        self.computed = 0
        self.generated = 0
        self.hashed = 0
        self.seq = 0
        self.version = 0
        self.state = "new"
        self.s0 = 0
        self.gen0 = 0
        self.done_step = -1
        self.turn: tuple[int, int, int] | None = None  # (turns left, user tokens, think steps)


def generate(g: Generator) -> list[SimRequest]:
    """A seeded workload: the same seed always gives the same requests."""
    if not 1 <= g.count <= MAX_REQUESTS:
        raise InvalidInput("workload.generator.count", f"must be 1..{MAX_REQUESTS}")
    if not (math.isfinite(g.arrival_rate) and g.arrival_rate > 0):
        raise InvalidInput("workload.generator.arrival_rate", "must be a positive number of requests a step")
    if not 0 <= g.system_prompt_share <= 1:
        raise InvalidInput("workload.generator.system_prompt_share", "must be in [0, 1]")
    rng = random.Random(g.seed)
    out = []
    t = 0.0
    for _ in range(g.count):
        t += rng.expovariate(g.arrival_rate)
        prompt = _draw(rng, g.prompt, "workload.generator.prompt")
        output = _draw(rng, g.output, "workload.generator.output")
        if g.system_prompt_tokens and rng.random() < g.system_prompt_share:
            out.append(
                SimRequest(
                    arrival_step=int(t),
                    prompt_tokens=g.system_prompt_tokens + prompt,
                    output_tokens=output,
                    prefix_id="system",
                    prefix_tokens=g.system_prompt_tokens,
                )
            )
        else:
            out.append(SimRequest(arrival_step=int(t), prompt_tokens=prompt, output_tokens=output))
    return out


# -- the simulation ----------------------------------------------------------------------------
class _Sim:
    def __init__(
        self,
        cfg: SimConfig,
        requests: Sequence[SimRequest],
        conversations: Conversations | None,
        conv_rng: random.Random | None,
    ) -> None:
        self.cfg = cfg
        self.bs = cfg.block_size
        self.pool = BlockPool(cfg.num_blocks)
        self.reqs: list[_Req] = []
        self.arrivals: list[tuple[int, int]] = []  # heap of (step, request id)
        for r in requests:
            self._add(r)
        if conversations is not None and conv_rng is not None:
            for q in self.reqs:
                if conv_rng.random() < conversations.share and conversations.turns > 1:
                    q.prefix_id = f"conv{q.id}"
                    q.shared_len = q.prompt + q.output  # the whole turn is the conversation's history
                    q.turn = (conversations.turns - 1, conversations.user_tokens, conversations.think_steps)
        self.waiting: deque[_Req] = deque()
        self.waiting_heap: list[tuple[int, int, int]] = []  # priority policy: (priority, arrival order, id)
        self.running: dict[int, _Req] = {}  # admission order
        self.prefilling: dict[int, _Req] = {}
        self.events: list[tuple[int, int, int, int]] = []  # (step, seq, version, id)
        self.seq = 0
        self.t = 0
        self.blocked = False
        # statistics
        self.preemptions = self.recomputed = self.prompt_tokens = 0
        self.hit_tokens = self.hit_blocks = self.lookup_blocks = 0
        self.peak_used = self.peak_running = 0
        self.used_area = self.running_area = 0
        self.completed = 0
        self.tail_waste_total = 0
        self.records: list[tuple[int, int, int, int, int]] = []
        self.preempted_now = False
        self.finish_now: list[_Req] = []

    def _add(self, r: SimRequest) -> _Req:
        q = _Req(len(self.reqs), r, r.prefix_tokens if r.prefix_id is not None else 0)
        self.reqs.append(q)
        heapq.heappush(self.arrivals, (r.arrival_step, q.id))
        return q

    def key(self, q: _Req, j: int) -> Hashable:
        if q.prefix_id is not None and (j + 1) * self.bs <= q.shared_len:
            return (q.prefix_id, j)
        return q.id, j

    # waiting queue ------------------------------------------------------------------------
    def _enqueue(self, q: _Req, front: bool) -> None:
        q.state = "waiting"
        if self.cfg.policy == "priority":
            heapq.heappush(self.waiting_heap, (q.priority, q.arrival, q.id))
        elif front:
            self.waiting.appendleft(q)
        else:
            self.waiting.append(q)

    def _peek_waiting(self) -> _Req | None:
        if self.cfg.policy == "priority":
            return self.reqs[self.waiting_heap[0][2]] if self.waiting_heap else None
        return self.waiting[0] if self.waiting else None

    def _pop_waiting(self) -> None:
        if self.cfg.policy == "priority":
            heapq.heappop(self.waiting_heap)
        else:
            self.waiting.popleft()

    @property
    def n_waiting(self) -> int:
        return len(self.waiting_heap) if self.cfg.policy == "priority" else len(self.waiting)

    # blocks -------------------------------------------------------------------------------
    def _cache_full(self, q: _Req, computed: int) -> None:
        full = min(computed // self.bs, len(q.blocks))
        for j in range(q.hashed, full):
            self.pool.cache(q.blocks[j], self.key(q, j))
        q.hashed = max(q.hashed, full)

    def _decode_tokens(self, q: _Req, t: int) -> int:
        """Tokens of a decoding request at step t, before the step samples."""
        return q.prompt + q.gen0 + (t - q.s0)

    def _schedule_next(self, q: _Req, t: int) -> None:
        """The next step at which a decoding request needs a block, or finishes."""
        capacity = len(q.blocks) * self.bs
        need = q.s0 + (capacity + 1 - q.prompt - q.gen0)  # tokens exceed the blocks
        done = q.s0 + (q.output - 1 - q.gen0)  # samples its last token
        step = max(t, min(need, done))
        heapq.heappush(self.events, (step, q.seq, q.version, q.id))

    def _release(self, q: _Req, computed: int) -> None:
        self._cache_full(q, computed)
        self.pool.free(q.blocks)
        q.blocks = []
        self.running.pop(q.id, None)
        self.prefilling.pop(q.id, None)
        q.version += 1
        self.blocked = False

    def _preempt_one(self, t: int) -> _Req:
        if self.cfg.policy == "priority":
            victim = max(self.running.values(), key=lambda r: (r.priority, r.seq))
        else:
            victim = self.running[next(reversed(self.running))]
        if victim.state == "decoding":
            victim.generated = victim.gen0 + (t - victim.s0)
            computed = victim.prompt + victim.generated - 1
        else:
            computed = victim.computed
        self.recomputed += computed
        self.preemptions += 1
        self._release(victim, computed)
        victim.computed = 0
        victim.hashed = 0
        self._enqueue(victim, front=True)
        return victim

    def _alloc(self, q: _Req, n: int, t: int) -> bool:
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
    def _start_decoding(self, q: _Req, t: int) -> None:
        """Prefill done at step t: the step samples the first (or next) output token."""
        q.state = "decoding"
        q.generated += 1
        q.s0, q.gen0 = t + 1, q.generated
        if q.generated >= q.output:
            self.finish_now.append(q)
        else:
            self._schedule_next(q, t + 1)

    def _prefill_chunk(self, q: _Req, budget: int, t: int) -> int:
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
            self.prefilling.pop(q.id, None)
            self._start_decoding(q, t)
        return chunk

    def _admit(self, q: _Req, budget: int, t: int) -> int:
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
        if need + evictable > self.pool.num_free:
            self.blocked = True
            return 0
        self._pop_waiting()
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
        self.running[q.id] = q
        if q.computed == total:
            self._start_decoding(q, t)
        else:
            q.state = "prefilling"
            self.prefilling[q.id] = q
        return chunk

    def step(self, t: int) -> None:
        self.preempted_now = False
        self.finish_now = []
        while self.arrivals and self.arrivals[0][0] <= t:
            _, rid = heapq.heappop(self.arrivals)
            self._enqueue(self.reqs[rid], front=False)
            self.blocked = False
        # Running requests with work this step, in running order: block needs and prefill chunks.
        due: list[_Req] = []
        while self.events and self.events[0][0] <= t:
            _, _, version, rid = heapq.heappop(self.events)
            q = self.reqs[rid]
            if q.version != version or q.state != "decoding":
                continue
            due.append(q)
        work = sorted([*due, *self.prefilling.values()], key=lambda r: r.seq)
        n_decoding = len(self.running) - len(self.prefilling)
        budget = self.cfg.max_num_batched_tokens - n_decoding
        for q in work:
            if q.id not in self.running:
                continue  # preempted earlier this step
            if q.state == "prefilling":
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
                head = self._peek_waiting()
                if head is None:
                    break
                used = self._admit(head, budget, t)
                if used == 0:
                    break
                budget -= used
        # End of step: requests that sampled their last token finish.
        for q in self.finish_now:
            if q.id in self.running:
                self._finish(q, t)
        self.finish_now = []
        used = self.pool.in_use
        self.peak_used = max(self.peak_used, used)
        self.peak_running = max(self.peak_running, len(self.running))

    def _finish(self, q: _Req, t: int) -> None:
        computed = q.prompt + q.output - 1
        self.tail_waste_total += len(q.blocks) * self.bs - computed
        self._release(q, computed)
        q.state = "done"
        q.done_step = t
        self.completed += 1
        if q.turn is not None and q.turn[0] > 0:
            left, user, think = q.turn
            history = q.prompt + q.output
            nxt = self._add(
                SimRequest(
                    arrival_step=t + 1 + think,
                    prompt_tokens=history + user,
                    output_tokens=q.output,
                    prefix_id=q.prefix_id,
                    prefix_tokens=history,
                )
            )
            nxt.shared_len = history + user + q.output
            nxt.turn = (left - 1, user, think) if left > 1 else None
            self._check(nxt)

    def _check(self, q: _Req) -> None:
        worst = cdiv(q.prompt + q.output - 1, self.bs)
        if worst > self.pool.usable:
            raise InvalidInput(
                f"workload.requests[{q.id}]",
                f"needs {worst:,} blocks of {self.bs} tokens and the pool has {self.pool.usable:,} "
                "usable: it can never run",
            )

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
            tokens = self._decode_tokens(q, step + 1) if q.state == "decoding" else q.computed
            tables.append(TableEntry(q.id, q.state, tokens, tuple(q.blocks)))
        queue = tuple(pool.free_queue())
        waiting = (
            [q.id for q in self.waiting]
            if self.cfg.policy == "fcfs"
            else [e[2] for e in sorted(self.waiting_heap)]
        )
        return Snapshot(
            step=step,
            tables=tuple(tables),
            ref_cnt={b: pool.ref[b] for b in range(1, pool.num_blocks) if pool.ref[b]},
            free_queue=queue,
            cached=tuple(b for b in queue if pool.hash_of[b] is not None),
            waiting=tuple(waiting),
            finished=tuple(q.id for q in self.reqs if q.state == "done"),
        )

    def record(self) -> None:
        self.records.append(
            (self.t, self.pool.in_use, self.pool.cached_free, len(self.running), self.n_waiting)
        )

    def run(self, snapshot_steps: Sequence[int] = ()) -> None:
        pending = sorted(set(snapshot_steps))
        self.snapshots: list[Snapshot] = []
        for q in self.reqs:
            self._check(q)
        if self.arrivals:
            self.t = self.arrivals[0][0]
        idle = 0
        while True:
            self.step(self.t)
            self.record()
            nxt = self.next_step()
            if nxt is None:
                if not (self.running or self.n_waiting):
                    self.snapshots += [self.snapshot(s) for s in pending if s >= self.t]
                    break
                nxt = self.t + 1
            while pending and pending[0] < nxt:
                s = pending.pop(0)
                if s >= self.t:
                    self.snapshots.append(self.snapshot(s))
            idle = idle + 1 if not self.running and not self.prefilling else 0
            if idle > 1000:  # cannot happen when every request fits alone; never loop forever
                raise InvalidInput("workload", "the simulation stopped making progress")
            if nxt > MAX_STEPS:
                raise InvalidInput("workload", "the simulation would run past its step limit")
            span = nxt - self.t
            self.used_area += self.pool.in_use * span
            self.running_area += len(self.running) * span
            self.t = nxt


def _series(records: list[tuple[int, int, int, int, int]]) -> tuple[SeriesPoint, ...]:
    if len(records) <= MAX_SERIES:
        return tuple(SeriesPoint(*r) for r in records)
    first, last = records[0][0], records[-1][0]
    width = (last - first + 1) / MAX_SERIES
    bins: dict[int, tuple[int, int, int, int, int]] = {}
    for r in records:  # per bin, the busiest moment
        k = min(MAX_SERIES - 1, int((r[0] - first) / width))
        if k not in bins or r[1] > bins[k][1]:
            bins[k] = r
    return tuple(SeriesPoint(*bins[k]) for k in sorted(bins))


def simulate(
    cfg: SimConfig,
    requests: Sequence[SimRequest] | None = None,
    generator: Generator | None = None,
    snapshot_steps: Sequence[int] = (),
) -> SimResult:
    if (requests is None) == (generator is None):
        raise InvalidInput("workload", "give exactly one of requests or generator")
    if cfg.block_size < 1:
        raise InvalidInput("block_size", "must be at least 1")
    if cfg.max_num_seqs < 1:
        raise InvalidInput("max_num_seqs", "must be at least 1")
    if cfg.max_num_batched_tokens < cfg.max_num_seqs:
        raise InvalidInput("max_num_batched_tokens", "must be at least max_num_seqs (as vLLM requires)")
    if cfg.policy not in ("fcfs", "priority"):
        raise InvalidInput("scheduling_policy", "must be fcfs or priority")
    conv_rng = None
    if generator is not None:
        requests = generate(generator)
        if generator.conversations is not None:
            c = generator.conversations
            if not (0 <= c.share <= 1 and 1 <= c.turns <= 64 and c.user_tokens >= 1 and c.think_steps >= 0):
                raise InvalidInput(
                    "workload.generator.conversations",
                    "share in [0, 1], 1 ≤ turns ≤ 64, user_tokens ≥ 1, think_steps ≥ 0",
                )
            conv_rng = random.Random(generator.seed + 1)
    assert requests is not None
    if not 0 < len(requests) <= MAX_REQUESTS:
        raise InvalidInput("workload.requests", f"give 1 to {MAX_REQUESTS:,} requests")
    total = 0
    for i, r in enumerate(requests):
        f = f"workload.requests[{i}]"
        if r.arrival_step < 0:
            raise InvalidInput(f"{f}.arrival_step", "must not be negative")
        if not 1 <= r.prompt_tokens <= MAX_TOKENS_PER_REQUEST:
            raise InvalidInput(f"{f}.prompt_tokens", f"must be 1..{MAX_TOKENS_PER_REQUEST:,}")
        if not 1 <= r.output_tokens <= MAX_TOKENS_PER_REQUEST:
            raise InvalidInput(f"{f}.output_tokens", f"must be 1..{MAX_TOKENS_PER_REQUEST:,}")
        if not 0 <= r.prefix_tokens <= r.prompt_tokens:
            raise InvalidInput(f"{f}.prefix_tokens", "must be between 0 and prompt_tokens")
        total += r.prompt_tokens + r.output_tokens
    turns = generator.conversations.turns if generator and generator.conversations else 1
    if total * turns > MAX_TOTAL_TOKENS or total * turns // cfg.block_size > MAX_BLOCK_EVENTS:
        raise InvalidInput(
            "workload",
            f"too large to simulate here: at most {MAX_TOTAL_TOKENS:,} tokens and {MAX_BLOCK_EVENTS:,} "
            "blocks' worth in all; simulate a sample or a larger block size",
        )
    if snapshot_steps and (len(snapshot_steps) > MAX_SNAPSHOTS or cfg.num_blocks > MAX_SNAPSHOT_BLOCKS):
        raise InvalidInput(
            "snapshot_steps",
            f"at most {MAX_SNAPSHOTS} snapshots, of pools of at most {MAX_SNAPSHOT_BLOCKS:,} blocks",
        )
    if any(s < 0 for s in snapshot_steps):
        raise InvalidInput("snapshot_steps", "steps are counted from 0")
    sim = _Sim(cfg, requests, generator.conversations if generator else None, conv_rng)
    sim.run(snapshot_steps)
    steps = sim.t + 1
    longest = max(q.prompt + q.output for q in sim.reqs)
    formula = sim.pool.usable // cdiv(longest, sim.bs)
    warns = []
    if sim.preemptions:
        warns.append(
            w.Warning(
                w.PREEMPTION,
                f"{sim.preemptions:,} preemptions threw away {sim.recomputed:,} computed tokens to be "
                f"recomputed. To avoid them: more KV memory (the pool peaked at {sim.peak_used:,} of "
                f"{sim.pool.usable:,} usable blocks), a shorter context (the longest request was "
                f"{longest:,} tokens), or fewer sequences (max_num_seqs below the {sim.peak_running:,} "
                "that ran at once).",
            )
        )
    return SimResult(
        steps=steps,
        requests=len(sim.reqs),
        completed=sim.completed,
        preemptions=sim.preemptions,
        recomputed_tokens=sim.recomputed,
        prompt_tokens=sim.prompt_tokens,
        cache_hit_tokens=sim.hit_tokens,
        cache_hit_rate_tokens=sim.hit_tokens / sim.prompt_tokens if sim.prompt_tokens else 0.0,
        cache_hit_blocks=sim.hit_blocks,
        cache_lookup_blocks=sim.lookup_blocks,
        cache_hit_rate_blocks=sim.hit_blocks / sim.lookup_blocks if sim.lookup_blocks else 0.0,
        usable_blocks=sim.pool.usable,
        block_size=sim.bs,
        peak_blocks_in_use=sim.peak_used,
        mean_blocks_in_use=sim.used_area / steps,
        peak_running=sim.peak_running,
        mean_running=sim.running_area / steps,
        formula_concurrency=formula,
        tail_waste_tokens_mean=sim.tail_waste_total / sim.completed if sim.completed else 0.0,
        series=_series(sim.records),
        warnings=tuple(warns),
        snapshots=tuple(sim.snapshots),
    )
