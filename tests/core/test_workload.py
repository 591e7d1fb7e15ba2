"""The workload: length distributions as a tagged union, the seeded generator, conversations."""

from __future__ import annotations

import math
import os
import random

import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kvplan.core.errors import InvalidInput
from kvplan.core.sim.workload import (
    MAX_ARRIVAL_STEP,
    Conversations,
    Fixed,
    Generator,
    Length,
    Lognormal,
    Planned,
    SimRequest,
    Uniform,
    generate,
    next_turn,
    plan,
    size,
)

EXAMPLES = int(os.environ.get("KVPLAN_PROPERTY_EXAMPLES", "60"))


def gen(**kw) -> Generator:
    return Generator(
        **{"count": 20, "arrival_rate": 1.0, "prompt": Fixed(value=10), "output": Fixed(value=5), **kw}
    )


def test_lengths_decode_by_their_kind_tag():
    decode = msgspec.json.Decoder(Length).decode
    assert decode(b'{"kind": "fixed", "value": 5}') == Fixed(value=5)
    assert decode(b'{"kind": "uniform", "low": 2, "high": 9}') == Uniform(low=2, high=9)
    assert decode(b'{"kind": "lognormal", "mean": 100, "sigma": 0.5}') == Lognormal(mean=100, sigma=0.5)
    assert msgspec.json.encode(Fixed(value=5)) == b'{"kind":"fixed","value":5}'


@pytest.mark.parametrize(
    ("body", "named"),
    [
        (b'{"kind": "fixed", "value": 0}', "`$.value`"),
        (b'{"kind": "fixed", "value": 16777217}', "`$.value`"),
        (b'{"kind": "uniform", "low": 0, "high": 9}', "`$.low`"),
        (b'{"kind": "lognormal", "mean": 0.5, "sigma": 1}', "`$.mean`"),
        (b'{"kind": "lognormal", "mean": 100, "sigma": 6}', "`$.sigma`"),
        (b'{"kind": "fixed", "value": 5, "low": 1}', "unknown field `low`"),  # another kind's
        (b'{"kind": "gamma", "value": 5}', "`$.kind`"),
    ],
)
def test_decoding_a_length_is_validating_it(body, named):
    with pytest.raises(msgspec.ValidationError) as e:
        msgspec.json.decode(body, type=Length)
    assert named in str(e.value)


def test_uniform_low_above_high_is_refused_in_one_place_naming_high():
    with pytest.raises(InvalidInput) as built:
        Uniform(low=9, high=3)
    assert built.value.field == "high" and "low (9)" in built.value.reason
    with pytest.raises(msgspec.ValidationError) as decoded:
        msgspec.json.decode(b'{"kind": "uniform", "low": 9, "high": 3}', type=Length)
    assert "high: must be at least low (9)" in str(decoded.value)


def test_a_generator_built_in_python_is_validated_as_decoding_would_naming_the_field():
    for bad, field in [
        (gen(count=0), "workload.generator.count"),
        (gen(arrival_rate=-1.0), "workload.generator.arrival_rate"),
        (gen(arrival_rate=math.nan), "workload.generator.arrival_rate"),
        (gen(prompt=Fixed(value=0)), "workload.generator.prompt.value"),
        (gen(system_prompt_share=1.5), "workload.generator.system_prompt_share"),
        (
            gen(conversations=Conversations(share=1, turns=65, user_tokens=1)),
            "workload.generator.conversations.turns",
        ),
    ]:
        with pytest.raises(InvalidInput) as e:
            generate(bad)
        assert e.value.field == field


def test_the_same_seed_gives_the_same_requests_and_another_seed_others():
    g = gen(prompt=Uniform(low=5, high=500), output=Lognormal(mean=50, sigma=1), seed=4)
    assert generate(g) == generate(g)
    assert generate(g) != generate(msgspec.structs.replace(g, seed=5))


@settings(max_examples=EXAMPLES, deadline=None, derandomize=bool(os.environ.get("CI")))
@given(
    st.floats(min_value=5e-324, max_value=1e6, allow_subnormal=True),
    st.integers(1, 50),
    st.integers(0, 1 << 62),
)
def test_any_arrival_rate_gives_arrivals_within_the_limit_or_a_400_never_an_overflow(rate, count, seed):
    try:
        requests = generate(gen(count=count, arrival_rate=rate, seed=seed))
    except InvalidInput as e:
        assert e.field == "workload.generator.arrival_rate"
        assert f"{MAX_ARRIVAL_STEP:,}" in e.reason
        return
    steps = [r.arrival_step for r in requests]
    assert steps == sorted(steps) and 0 <= steps[-1] <= MAX_ARRIVAL_STEP


@pytest.mark.parametrize("rate", [5e-324, 1e-300, 1e-20, 2.2250738585072014e-308])
def test_denormal_and_tiny_arrival_rates_are_refused_naming_the_rate(rate):
    with pytest.raises(InvalidInput) as e:
        generate(gen(arrival_rate=rate))
    assert e.value.field == "workload.generator.arrival_rate" and "raise arrival_rate" in e.value.reason


def test_an_unlucky_gap_past_the_last_arrival_step_is_refused_even_when_the_mean_fits():
    # One request expected at step 0.99 × MAX_ARRIVAL_STEP: about a third of the seeds draw a
    # gap past the limit.
    rate = 1 / (0.99 * MAX_ARRIVAL_STEP)
    outcomes = []
    for seed in range(30):
        try:
            outcomes.append(generate(gen(count=1, arrival_rate=rate, seed=seed))[0].arrival_step)
        except InvalidInput as e:
            assert e.field == "workload.generator.arrival_rate" and "request 0" in e.reason
            outcomes.append(None)
    assert None in outcomes
    assert all(s is None or s <= MAX_ARRIVAL_STEP for s in outcomes)


def test_a_tiny_arrival_rate_within_the_limit_spreads_arrivals_far_apart():
    requests = generate(gen(count=2, arrival_rate=1e-9, seed=1))
    assert 10**7 < requests[-1].arrival_step <= MAX_ARRIVAL_STEP


def test_a_huge_arrival_rate_lands_every_request_on_step_zero():
    assert {r.arrival_step for r in generate(gen(count=50, arrival_rate=1e6))} == {0}


def turns_one_by_one(p: Planned) -> list[SimRequest]:
    out, step = [p.request], 0
    while p.follow_up is not None:
        step += 1000
        p = next_turn(p, p.follow_up, step)
        out.append(p.request)
    return out


@settings(max_examples=EXAMPLES, deadline=None, derandomize=bool(os.environ.get("CI")))
@given(
    st.integers(1, 30),
    st.floats(0, 1),
    st.integers(1, 12),
    st.integers(1, 300),
    st.integers(1, 200),
    st.integers(1, 100),
    st.sampled_from([1, 16, 64]),
    st.integers(0, 1000),
)
def test_the_workload_size_counts_every_turn_with_its_history(
    count, share, turns, prompt, output, user, bs, seed
):
    g = gen(
        count=count,
        prompt=Fixed(value=prompt),
        output=Fixed(value=output),
        conversations=Conversations(share=share, turns=turns, user_tokens=user),
        seed=seed,
    )
    planned = plan(None, g)
    every = [r for p in planned for r in turns_one_by_one(p)]
    s = size(planned, bs)
    assert s.requests == len(every)
    assert s.prompt_tokens == sum(r.prompt_tokens for r in every)
    assert s.output_tokens == sum(r.output_tokens for r in every)
    assert s.decode_blocks == sum(-(-r.output_tokens // bs) for r in every)


def test_a_conversation_turn_resends_the_history_and_shares_all_of_it():
    first = plan(
        None, gen(count=1, conversations=Conversations(share=1, turns=3, user_tokens=7, think_steps=4))
    )[0]
    assert first.prefix_id == "conv0" and first.shared_tokens == 15 and first.follow_up.turns_left == 2
    second = next_turn(first, first.follow_up, 30)
    assert second.request == SimRequest(
        arrival_step=35, prompt_tokens=15 + 7, output_tokens=5, prefix_id="conv0", prefix_tokens=15
    )
    assert second.shared_tokens == 22 + 5 and second.follow_up.turns_left == 1
    assert next_turn(second, second.follow_up, 60).follow_up is None


def test_which_requests_open_conversations_is_drawn_from_its_own_stream():
    base = gen(count=200, seed=9)
    with_conversations = msgspec.structs.replace(
        base, conversations=Conversations(share=0.3, turns=2, user_tokens=1)
    )
    planned = plan(None, with_conversations)
    assert [p.request for p in planned] == generate(base)  # the requests themselves do not change
    rng = random.Random(9 + 1)
    assert [p.follow_up is not None for p in planned] == [rng.random() < 0.3 for _ in range(200)]


def test_give_exactly_one_of_requests_or_generator():
    for requests, generator in [(None, None), ([SimRequest(prompt_tokens=1, output_tokens=1)], gen())]:
        with pytest.raises(InvalidInput) as e:
            plan(requests, generator)
        assert e.value.field == "workload"
