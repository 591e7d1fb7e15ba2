"""The simulated workload: which requests arrive, when, and how long they are.

A workload is a list of requests or a seeded generator: Poisson arrivals, prompt and output
lengths drawn from a distribution (a tagged union on `kind`: fixed, uniform or lognormal), an
optional shared system prompt on a share of the requests, and optional multi-turn
conversations, whose every next turn re-sends the whole history.

These Structs are also the wire types of /v1/simulate: decoding a body is validating it (the
`Meta` constraints, and `__post_init__` for what spans two fields). Values built in Python are
validated the same way by `plan`, which is the one door into the simulator: it checks the
requests, runs the generator, draws which requests open conversations, and returns each
request with what it shares and the turns that follow it.
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable, Sequence
from typing import Annotated, NamedTuple, TypeAlias, TypeVar

import msgspec
from msgspec import Meta

from ..errors import InvalidDistribution, InvalidInput, SimulationStopped
from ..limits import (
    MAX_ARRIVAL_RATE,
    MAX_ARRIVAL_RATE_PER_S,
    MAX_ARRIVAL_STEP,
    MAX_ARRIVAL_TIME,
    MAX_IN_FLIGHT,
    MAX_NAME_LENGTH,
    MAX_PRIORITY,
    MAX_REQUESTS,
    MAX_SEED,
    MAX_SIGMA,
    MAX_SYSTEM_PROMPT_TOKENS,
    MAX_THINK_STEPS,
    MAX_THINK_TIME,
    MAX_TOKENS_PER_REQUEST,
    MAX_TURNS,
    MAX_USER_TOKENS,
)

# Generating and planning ask the caller's should_stop() once per this many requests (~10 ms).
STOP_CHECK_REQUESTS = 4096
ShouldStop = Callable[[], bool] | None

Tokens = Annotated[int, Meta(ge=1, le=MAX_TOKENS_PER_REQUEST)]
Share = Annotated[float, Meta(ge=0, le=1)]


class WorkloadStruct(msgspec.Struct, frozen=True, forbid_unknown_fields=True, kw_only=True):
    """Options every workload type shares: immutable, strict about unknown fields. (Subclasses
    repeat frozen for the type checker, and kw_only because msgspec applies it per class.)"""


# -- length distributions -----------------------------------------------------------------------
class _LengthBase(WorkloadStruct, frozen=True, tag_field="kind"):
    def draw(self, rng: random.Random) -> int:
        raise NotImplementedError


class Fixed(_LengthBase, frozen=True, tag="fixed"):
    """Every request has `value` tokens."""

    value: Tokens

    def draw(self, rng: random.Random) -> int:
        return self.value


class Uniform(_LengthBase, frozen=True, tag="uniform"):
    """Lengths uniform over low..high, both included."""

    low: Tokens
    high: Tokens

    def __post_init__(self) -> None:
        if self.low > self.high:
            raise InvalidDistribution("high", f"must be at least low ({self.low:,}); it is {self.high:,}")

    def draw(self, rng: random.Random) -> int:
        return rng.randint(self.low, self.high)


class Lognormal(_LengthBase, frozen=True, tag="lognormal"):
    """Lognormal lengths whose mean is `mean`; rounded, and clipped to 1..MAX_TOKENS_PER_REQUEST."""

    mean: Annotated[float, Meta(ge=1, le=MAX_TOKENS_PER_REQUEST)]
    sigma: Annotated[float, Meta(ge=0, le=MAX_SIGMA)]

    def draw(self, rng: random.Random) -> int:
        mu = math.log(self.mean) - self.sigma**2 / 2  # so that the mean length is `mean`
        return max(1, min(MAX_TOKENS_PER_REQUEST, round(rng.lognormvariate(mu, self.sigma))))


Length: TypeAlias = Annotated[
    Fixed | Uniform | Lognormal,
    Meta(
        description='{"kind": "fixed", "value"}, {"kind": "uniform", "low", "high"} or '
        '{"kind": "lognormal", "mean", "sigma"}; a body without "kind" is fixed'
    ),
]


# -- requests, conversations, the generator -----------------------------------------------------
class SimRequest(WorkloadStruct, frozen=True, kw_only=True):
    """One request: requests with the same prefix_id share their first prefix_tokens tokens. It
    arrives at a step, or at a time in seconds (a timed simulation: every request then does)."""

    arrival_step: Annotated[int, Meta(ge=0, le=MAX_ARRIVAL_STEP)] = 0
    arrival_time: (
        Annotated[float, Meta(ge=0, le=MAX_ARRIVAL_TIME, description="seconds; makes the simulation timed")]
        | None
    ) = None
    prompt_tokens: Tokens
    output_tokens: Tokens
    prefix_id: Annotated[str, Meta(max_length=MAX_NAME_LENGTH)] | None = None
    prefix_tokens: Annotated[int, Meta(ge=0, le=MAX_TOKENS_PER_REQUEST)] = 0
    priority: Annotated[int, Meta(ge=-MAX_PRIORITY, le=MAX_PRIORITY)] = 0


class Conversations(WorkloadStruct, frozen=True, kw_only=True):
    """A share of requests open multi-turn conversations: each next turn arrives think_steps
    (think_time_s in a timed simulation) after the previous one finishes, its prompt the whole
    history plus user_tokens new tokens."""

    share: Share
    turns: Annotated[int, Meta(ge=1, le=MAX_TURNS)]
    user_tokens: Annotated[int, Meta(ge=1, le=MAX_USER_TOKENS)]
    think_steps: Annotated[int, Meta(ge=0, le=MAX_THINK_STEPS)] = 0
    think_time_s: Annotated[float, Meta(ge=0, le=MAX_THINK_TIME)] = 0.0


class Generator(WorkloadStruct, frozen=True, kw_only=True):
    """A seeded workload: Poisson arrivals, length distributions, an optional shared system prompt
    on a share of the requests, and optional multi-turn conversations. Arrivals are counted in
    steps (arrival_rate), or in seconds (arrival_rate_per_s, concurrency: a timed simulation)."""

    count: Annotated[int, Meta(ge=1, le=MAX_REQUESTS)]
    arrival_rate: Annotated[float, Meta(gt=0, le=MAX_ARRIVAL_RATE, description="requests a step")] | None = (
        None
    )
    arrival_rate_per_s: (
        Annotated[float, Meta(gt=0, le=MAX_ARRIVAL_RATE_PER_S, description="requests a second (Poisson)")]
        | None
    ) = None
    concurrency: (
        Annotated[
            int,
            Meta(
                ge=1,
                le=MAX_IN_FLIGHT,
                description="requests in flight at most, as vllm bench serve --max-concurrency: "
                "alone, a closed loop (each request sent when one finishes)",
            ),
        ]
        | None
    ) = None
    prompt: Length
    output: Length
    system_prompt_share: Share = 0.0
    system_prompt_tokens: Annotated[int, Meta(ge=0, le=MAX_SYSTEM_PROMPT_TOKENS)] = 0
    conversations: Conversations | None = None
    seed: Annotated[int, Meta(ge=0, le=MAX_SEED)] = 0

    def __post_init__(self) -> None:
        timed = self.arrival_rate_per_s is not None or self.concurrency is not None
        if timed == (self.arrival_rate is not None):
            raise InvalidDistribution(
                "arrival_rate",
                "give arrival_rate (requests a step), or arrival_rate_per_s and/or concurrency "
                "(a timed simulation)",
            )
        if self.concurrency is not None and self.conversations is not None:
            raise InvalidDistribution(
                "concurrency", "a closed loop sends independent requests: give no conversations with it"
            )

    @property
    def timed(self) -> bool:
        return self.arrival_rate is None


# -- what the scheduler receives ----------------------------------------------------------------
class FollowUp(NamedTuple):
    """The turns still to come in a conversation after a request finishes."""

    turns_left: int
    user_tokens: int
    think_steps: int
    think_time_s: float = 0.0


class Planned(NamedTuple):
    """A request as the scheduler takes it: its first shared_tokens tokens are cached under
    prefix_id (the request's own otherwise), and follow_up is its conversation's next turns.
    A trace's request may instead name its prompt's content by a hash chain (Mooncake's
    hash_ids): chain[h] identifies tokens [h·chain_block, (h + 1)·chain_block) with all before
    them, so two requests share the prompt blocks their chains agree on (traces.py)."""

    request: SimRequest
    prefix_id: str | None
    shared_tokens: int
    follow_up: FollowUp | None
    chain: tuple[int, ...] = ()
    chain_block: int = 0


def next_turn(done: Planned, f: FollowUp, finish_step: int, finish_time: float | None = None) -> Planned:
    """The conversation's next turn after `done` (whose follow_up is f) finished at finish_step
    (at finish_time seconds, timed): the whole history (prompt and output) plus the user's new
    tokens, all of it shared by the conversation."""
    r = done.request
    history = r.prompt_tokens + r.output_tokens
    request = SimRequest(
        arrival_step=finish_step + 1 + f.think_steps,
        arrival_time=None if finish_time is None else finish_time + f.think_time_s,
        prompt_tokens=history + f.user_tokens,
        output_tokens=r.output_tokens,
        prefix_id=done.prefix_id,
        prefix_tokens=history,
    )
    follow_up = f._replace(turns_left=f.turns_left - 1) if f.turns_left > 1 else None
    return Planned(request, done.prefix_id, history + f.user_tokens + r.output_tokens, follow_up)


class Size(NamedTuple):
    """A planned workload's size, every conversation turn included, known before it runs."""

    requests: int
    prompt_tokens: int  # each turn's prompt: its history and the user's new tokens
    output_tokens: int
    decode_blocks: int  # Σ over turns of ceil(output / block_size): blocks taken while decoding


def last_turn_tokens(p: Planned) -> int:
    """Prompt and output tokens of the last turn of p's conversation (of p when it has none)."""
    r, f = p.request, p.follow_up
    if f is None:
        return r.prompt_tokens + r.output_tokens
    return r.prompt_tokens + f.turns_left * (r.output_tokens + f.user_tokens) + r.output_tokens


def size(planned: Sequence[Planned], block_size: int) -> Size:
    """Closed forms per conversation, so that sizing costs O(requests), not O(turns). Turn k of a
    conversation opened by a request of prompt P and output O, with U user tokens a turn, has
    prompt P + (k − 1)(O + U) and output O: K turns sum to K·P + (O + U)·K(K − 1)/2 prompt tokens."""
    requests = prompt = output = decode = 0
    for p in planned:
        r, f = p.request, p.follow_up
        turns = 1 + (f.turns_left if f else 0)
        grow = r.output_tokens + f.user_tokens if f else 0
        requests += turns
        prompt += turns * r.prompt_tokens + grow * turns * (turns - 1) // 2
        output += turns * r.output_tokens
        decode += turns * -(-r.output_tokens // block_size)
    return Size(requests, prompt, output, decode)


# -- validation and generation ------------------------------------------------------------------
T = TypeVar("T", bound=msgspec.Struct)


def validated(value: T, field: str) -> T:
    """Check a Struct built in Python as decoding would: its Meta constraints and __post_init__.
    A violation is an InvalidInput naming the field's path under `field`."""
    try:
        return msgspec.convert(msgspec.to_builtins(value), type(value))
    except msgspec.ValidationError as e:
        message, _, path = str(e).rpartition(" - at `$")
        path = path.rstrip("`")
        if not message:
            message, path = str(e), ""
        raise InvalidInput(field + path, message) from None


def check_requests(requests: Sequence[SimRequest]) -> None:
    """Every request in range, named by its index. Requests from a decoded body already are;
    requests built in Python and generated ones (a system prompt lengthens the prompt) are
    checked here."""
    if not 0 < len(requests) <= MAX_REQUESTS:
        raise InvalidInput("workload.requests", f"give 1 to {MAX_REQUESTS:,} requests")
    timed = requests[0].arrival_time is not None
    for i, r in enumerate(requests):
        f = f"workload.requests[{i}]"
        if not 0 <= r.arrival_step <= MAX_ARRIVAL_STEP:
            raise InvalidInput(f"{f}.arrival_step", f"must be 0..{MAX_ARRIVAL_STEP:,}")
        if (r.arrival_time is not None) != timed:
            raise InvalidInput(
                f"{f}.arrival_time",
                "give every request an arrival_time (a timed simulation) or none (arrivals in steps)",
            )
        if r.arrival_time is not None:
            if not 0 <= r.arrival_time <= MAX_ARRIVAL_TIME:
                raise InvalidInput(f"{f}.arrival_time", f"must be 0..{MAX_ARRIVAL_TIME:g} seconds")
            if r.arrival_step:
                raise InvalidInput(f"{f}.arrival_step", "give arrival_time or arrival_step, not both")
        if not 1 <= r.prompt_tokens <= MAX_TOKENS_PER_REQUEST:
            raise InvalidInput(f"{f}.prompt_tokens", f"must be 1..{MAX_TOKENS_PER_REQUEST:,}")
        if not 1 <= r.output_tokens <= MAX_TOKENS_PER_REQUEST:
            raise InvalidInput(f"{f}.output_tokens", f"must be 1..{MAX_TOKENS_PER_REQUEST:,}")
        if not 0 <= r.prefix_tokens <= r.prompt_tokens:
            raise InvalidInput(f"{f}.prefix_tokens", "must be between 0 and prompt_tokens")
        if not -MAX_PRIORITY <= r.priority <= MAX_PRIORITY:
            raise InvalidInput(f"{f}.priority", f"must be within ±{MAX_PRIORITY:,}")


def _stop_if_asked(should_stop: ShouldStop, done: int, what: str) -> None:
    if should_stop is not None and should_stop():
        raise SimulationStopped(f"stopped while {what} the workload, {done:,} requests in")


def generate(g: Generator, should_stop: ShouldStop = None) -> list[SimRequest]:
    """A seeded workload: the same seed always gives the same requests. Arrivals are the running
    sum of exponential gaps (Poisson arrivals), floored to steps, or in seconds when timed. A timed
    generator draws every gap at rate 1 and scales it, so that its lengths are the same at every
    rate (and in a closed loop, whose requests are all ready at time 0)."""
    g = validated(g, "workload.generator")
    rate = g.arrival_rate if g.arrival_rate is not None else g.arrival_rate_per_s
    name, unit, latest, where = (
        ("arrival_rate_per_s", "second", MAX_ARRIVAL_TIME, "time")
        if g.timed
        else ("arrival_rate", "step", MAX_ARRIVAL_STEP, "step")
    )
    field = "workload.generator." + name
    if rate is not None and g.count > rate * latest:
        span = g.count / rate
        about = f"about {span:,.3g} {unit}s" if math.isfinite(span) else f"more {unit}s than a float counts"
        raise InvalidInput(
            field,
            f"{g.count:,} requests at {rate:g} a {unit} would take {about} to arrive; the "
            f"simulator takes arrivals up to {where} {latest:,}: raise {name}",
        )
    rng = random.Random(g.seed)
    out = []
    t = 0.0
    for i in range(g.count):
        if i % STOP_CHECK_REQUESTS == 0:
            _stop_if_asked(should_stop, i, "generating")
        if not g.timed:
            t += rng.expovariate(g.arrival_rate or 1.0)
        else:
            gap = rng.expovariate(1.0)
            t += gap / rate if rate is not None else 0.0
        if not t <= latest:  # an unlucky run of long gaps, near the limit above
            raise InvalidInput(
                field,
                f"request {i} would arrive after {where} {latest:,}, the latest the "
                f"simulator takes, at {rate:g} requests a {unit}: raise {name}",
            )
        step, time = (0, t) if g.timed else (int(t), None)
        prompt = g.prompt.draw(rng)
        output = g.output.draw(rng)
        if g.system_prompt_tokens and rng.random() < g.system_prompt_share:
            out.append(
                SimRequest(
                    arrival_step=step,
                    arrival_time=time,
                    prompt_tokens=g.system_prompt_tokens + prompt,
                    output_tokens=output,
                    prefix_id="system",
                    prefix_tokens=g.system_prompt_tokens,
                )
            )
        else:
            out.append(
                SimRequest(arrival_step=step, arrival_time=time, prompt_tokens=prompt, output_tokens=output)
            )
    return out


def plan(
    requests: Sequence[SimRequest] | None,
    generator: Generator | None,
    should_stop: ShouldStop = None,
    chains: Sequence[tuple[int, ...]] | None = None,
    chain_block: int = 0,
) -> list[Planned]:
    """The workload as the scheduler takes it, validated. A generated request opens a
    conversation with probability `share` (drawn from its own stream, seed + 1, so that adding
    conversations leaves the requests themselves unchanged); the whole of each turn is then
    shared under the conversation's prefix id. A trace's requests may come with hash chains
    (one a request, in blocks of chain_block tokens: traces.py)."""
    if generator is not None and requests is None:
        requests = generate(generator, should_stop)  # validates the generator
    elif requests is None or generator is not None:
        raise InvalidInput("workload", "give exactly one of requests or generator")
    check_requests(requests)
    _stop_if_asked(should_stop, len(requests), "checking")
    if chains is not None:
        # A chain may name fewer blocks than the prompt has (Qwen-Bailian's follow-up turns): the
        # tokens past its last block are the request's own.
        return [
            Planned(r, None, min(r.prompt_tokens, len(chain) * chain_block), None, chain, chain_block)
            for r, chain in zip(requests, chains, strict=True)
        ]
    planned = [
        Planned(r, r.prefix_id, r.prefix_tokens if r.prefix_id is not None else 0, None) for r in requests
    ]
    c = generator.conversations if generator is not None else None
    if generator is None or c is None:
        return planned
    conversation_rng = random.Random(generator.seed + 1)
    for i, p in enumerate(planned):
        if i % STOP_CHECK_REQUESTS == 0:
            _stop_if_asked(should_stop, i, "planning")
        if conversation_rng.random() < c.share and c.turns > 1:
            r = p.request
            conversation = f"conv{i}"
            follow_up = FollowUp(c.turns - 1, c.user_tokens, c.think_steps, c.think_time_s)
            planned[i] = Planned(r, conversation, r.prompt_tokens + r.output_tokens, follow_up)
    return planned


def is_timed(planned: Sequence[Planned]) -> bool:
    """Arrivals in seconds (every request's, checked by check_requests), not in steps."""
    return bool(planned) and planned[0].request.arrival_time is not None
