"""A batch records its scenarios' core runs in one pass (metrics.observe_all). It reads
prometheus-client's histogram internals, so it is checked against prometheus-client's own
per-call `observe` on the same values: a client upgrade that changes them fails here."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st
from prometheus_client import CollectorRegistry, Histogram

from kvplan.api.metrics import CORE_BUCKETS, observe_all
from tests.metrics import sample, unasked
from tests.seed import A


def _histogram_samples(values: list[float], bulk: bool) -> list[tuple[str, dict[str, str], float]]:
    registry = CollectorRegistry()
    h = Histogram("t_seconds", "t", ["endpoint"], buckets=CORE_BUCKETS, registry=registry)
    child = h.labels("budget")
    if bulk:
        observe_all(child, values)
    else:
        for v in values:
            child.observe(v)
    return [
        (s.name, s.labels, round(s.value, 12))
        for family in registry.collect()
        for s in family.samples
        if not s.name.endswith("_created")
    ]


seconds = st.floats(min_value=0.0, max_value=1.0, allow_nan=False) | st.sampled_from(
    [1e-6, 2.5e-6, 5e-6, 1e-5, 0.1, 0.5]  # on a bucket's bound: counted in that bucket, as observe does
)


@given(st.lists(seconds, max_size=60))
def test_bulk_observation_records_what_one_by_one_observation_records(values):
    assert _histogram_samples(values, bulk=True) == _histogram_samples(values, bulk=False)


def test_a_batch_of_distinct_scenarios_counts_one_core_run_each(client):
    def runs() -> float:
        return sample(client.get("/metrics").text, "kvplan_core_compute_seconds_count", endpoint="budget")

    before = runs()
    batch = {"scenarios": [unasked(A) for _ in range(7)]}
    assert client.post("/v1/budget/batch", json=batch).status_code == 200
    assert runs() == before + 7
