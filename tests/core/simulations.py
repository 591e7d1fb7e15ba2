"""Workloads for the simulator's property tests: (arrival, prompt, output, shares a 16-token
prefix) tuples become requests, every third priority level cycling."""

from __future__ import annotations

from hypothesis import strategies as st

from kvplan.core.sim.simulate import Generator, Lognormal, SimConfig, SimRequest

Spec = list[tuple[int, int, int, bool]]


def requests_from_spec(spec: Spec) -> list[SimRequest]:
    return [
        SimRequest(
            arrival_step=a,
            prompt_tokens=p + (16 if shared else 0),
            output_tokens=o,
            prefix_id="s" if shared else None,
            prefix_tokens=16 if shared else 0,
            priority=a % 3,
        )
        for a, p, o, shared in spec
    ]


def workload_specs(
    arrival: int, prompt: int, output: int, size: int
) -> st.SearchStrategy[list[tuple[int, int, int, bool]]]:
    """Lists of (arrival step, prompt, output, shares the prefix) within these maxima."""
    return st.lists(
        st.tuples(st.integers(0, arrival), st.integers(1, prompt), st.integers(1, output), st.booleans()),
        min_size=1,
        max_size=size,
    )


def loaded_server(count: int, block_size: int = 16) -> tuple[SimConfig, Generator]:
    """The simulation benchmark's workload (benchmarks/sim_bench.py): a pool that runs about 40
    requests of ~1,200 tokens at once, busy with some preemption, like a loaded server."""
    cfg = SimConfig(
        num_blocks=40 * 1300 // block_size,
        block_size=block_size,
        max_num_seqs=256,
        max_num_batched_tokens=8192,
    )
    gen = Generator(
        count=count,
        arrival_rate=0.2,
        prompt=Lognormal(mean=1000, sigma=0.5),
        output=Lognormal(mean=200, sigma=0.5),
        system_prompt_share=0.3,
        system_prompt_tokens=512,
        seed=11,
    )
    return cfg, gen
