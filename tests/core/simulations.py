"""Workloads for the simulator's property tests: (arrival, prompt, output, shares a 16-token
prefix) tuples become requests, every third priority level cycling."""

from __future__ import annotations

from kvplan.core.simulate import SimRequest


def requests_from_spec(spec: list[tuple[int, int, int, bool]]) -> list[SimRequest]:
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
