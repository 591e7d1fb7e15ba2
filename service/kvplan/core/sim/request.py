"""A request as the scheduler holds it (scheduler.py): what it has computed, allocated and
sampled, its place on the decode wheel, and, timed, when it saw what."""

from __future__ import annotations

from .states import State
from .workload import Planned

# The empty block table or key list shared by every request that has none. A list, as the compiled
# simulator (kvplan.compiled) checks the declared type; Scheduler.run checks it is still empty
# however it ends, since a request adding to it would add to all. Tables are lists of their own
# once allocated.
NO_BLOCKS: list[int] = []


def by_seq(q: Request) -> int:
    """Admission order: the order a step serves running requests in."""
    return q.seq


class Request:
    __slots__ = (
        "arrival",
        "blocks",
        "chain",
        "chain_block",
        "computed",
        "done_step",
        "gen0",
        "generated",
        "hashed",
        "id",
        "keys",
        "output",
        "own_from",
        "phase",
        "planned",
        "prefix_id",
        "priority",
        "prompt",
        "s0",
        "seq",
        "shared_len",
        "state",
        "t_arrive",
        "t_done",
        "t_first",
        "t_last",
        "t_sched",
        "version",
    )

    def __init__(self, rid: int, p: Planned) -> None:
        """Request `rid` as planned, pending, with nothing computed, allocated or timed yet."""
        r = p.request
        self.id = rid
        self.planned = p
        # A step, or seconds in a timed simulation (every request then has an arrival_time).
        self.arrival = float(r.arrival_step) if r.arrival_time is None else r.arrival_time
        self.chain = p.chain
        self.chain_block = p.chain_block
        self.prompt = r.prompt_tokens
        self.output = r.output_tokens
        self.prefix_id = p.prefix_id
        self.shared_len = p.shared_tokens
        self.priority = r.priority
        # Its block table and its blocks' cache keys (as far as computed, Scheduler._key_list): none
        # until it is admitted or keyed, as NO_BLOCKS, which no one may append to (most of a long
        # simulation's requests wait or are done: two lists each would be millions for the GC).
        self.blocks: list[int] = NO_BLOCKS
        self.keys: list[int] = NO_BLOCKS
        self.computed = 0
        self.generated = 0
        self.hashed = 0
        self.seq = 0
        self.version = 0
        self.state = State.PENDING
        self.s0 = 0
        self.gen0 = 0
        self.done_step = -1
        # Blocks from this index on hold its own content, keyed by its id: no other request looks
        # them up, and it does so only once preempted, so until then they are not keyed.
        self.own_from = 0
        self.phase = -1  # decoding: the step mod block_size at which it crosses a block boundary
        # Timed runs: when it was sent, first scheduled, sampled its first and latest token, finished.
        self.t_arrive = self.t_sched = self.t_first = self.t_last = self.t_done = -1.0
