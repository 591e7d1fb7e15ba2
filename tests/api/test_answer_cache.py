"""The answer cache is bounded in bytes and keyed on the decoded scenario, so padding, key order
and spelling cannot grow it, and a flood of distinct scenarios cannot take it past its budget."""

from __future__ import annotations

import json

from hypothesis import given
from hypothesis import strategies as st

from kvplan.api.routes import calc
from kvplan.presets.registry import BUILTIN_DIR
from kvplan.services.cache import DOORKEEPER_KEYS, ENTRY_OVERHEAD, ByteBoundedCache


@given(st.lists(st.tuples(st.binary(min_size=1, max_size=64), st.integers(0, 5000)), max_size=200))
def test_the_cache_never_holds_more_bytes_than_its_budget(entries):
    cache: ByteBoundedCache[int] = ByteBoundedCache(max_bytes=20_000, max_key_bytes=32)
    for key, size in entries:
        cache.put(key, size, size)
        assert cache.size_bytes <= 20_000
    held = sum(len(k) + v + ENTRY_OVERHEAD for k, (v, _) in cache._entries.items())
    assert held == cache.size_bytes


def test_the_cache_keeps_the_most_recently_used_and_skips_oversized_keys():
    cache: ByteBoundedCache[str] = ByteBoundedCache(max_bytes=3 * (ENTRY_OVERHEAD + 11), max_key_bytes=8)
    for k in (b"a", b"b", b"c"):
        cache.put(k, "v", 10)
    assert cache.get(b"a") == "v"  # a is now the most recent
    cache.put(b"d", "v", 10)
    assert cache.get(b"b") is None and cache.get(b"a") == "v" and cache.get(b"d") == "v"
    cache.put(b"a-key-longer-than-8", "v", 1)
    assert cache.get(b"a-key-longer-than-8") is None


def test_an_offered_answer_is_kept_on_its_keys_second_sight_only():
    cache: ByteBoundedCache[str] = ByteBoundedCache(max_bytes=10 * (ENTRY_OVERHEAD + 11), max_key_bytes=8)
    cache.put(b"kept", "v", 10)
    for i in range(DOORKEEPER_KEYS + 5):  # a scan of distinct keys, more than the doorkeeper holds
        cache.offer(b"%d" % i, "x", 10)
    assert len(cache) == 1 and cache.get(b"kept") == "v"  # the scan evicted nothing
    cache.offer(b"again", "v", 10)
    assert cache.get(b"again") is None
    cache.offer(b"again", "v", 10)
    assert cache.get(b"again") == "v"


def test_padded_and_reordered_bodies_of_one_scenario_make_one_entry(client):
    calc._cache.answers.clear()
    scenario = {"model": "llama-3-8b", "gpu": "h100-sxm-80gb", "context_tokens": 12345}
    bodies = [
        json.dumps(scenario),
        " " * 5000 + json.dumps(scenario),
        json.dumps(dict(reversed(scenario.items()))),
    ]
    answers = [
        client.post("/v1/budget", content=b, headers={"Content-Type": "application/json"}) for b in bodies
    ]
    assert {r.status_code for r in answers} == {200}
    assert len({r.content for r in answers}) == 1
    assert len(calc._cache.answers) == 1


def test_distinct_scenarios_past_the_budget_evict_instead_of_growing(client, monkeypatch):
    small: ByteBoundedCache[tuple[bytes, tuple[str, ...]]] = ByteBoundedCache(50_000, 4096)
    monkeypatch.setattr(calc._cache, "answers", small)
    for t in range(1, 200):
        r = client.post(
            "/v1/budget", json={"model": "llama-3-8b", "gpu": "h100-sxm-80gb", "context_tokens": t}
        )
        assert r.status_code == 200
        assert small.size_bytes <= 50_000
    assert 0 < len(small) < 199


def test_large_inline_configs_are_answered_but_not_kept(client):
    calc._cache.answers.clear()
    config = json.loads((BUILTIN_DIR / "models" / "llama-3-8b.json").read_text())["config"]
    config["architectures_note"] = "x" * 5000  # real configs carry long fields (chat templates, maps)
    r = client.post(
        "/v1/budget", json={"model": {"hf_config": config}, "gpu": "h100-sxm-80gb", "weights_bytes": 1}
    )
    assert r.status_code == 200, r.text
    assert len(calc._cache.answers) == 0
