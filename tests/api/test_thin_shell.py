"""A request's model is parsed once (services/models.py model_ref) into the reference that the
Hub prefetch, the resolution, the answer cache and the labels all take: a Hub id is read by the
Hub's rules once per request, whichever endpoint it reaches."""

from __future__ import annotations

import json
from collections import Counter

import pytest

from kvplan.presets.registry import BUILTIN_DIR
from kvplan.services import models
from tests.hub.repos import QWEN3_8B_BASE

QWEN = "Qwen/Qwen3-8B-Base"
PINNED = f"{QWEN}@{QWEN3_8B_BASE.sha}"
H100 = {"gpu": "h100-sxm-80gb"}
_context = iter(range(1000, 100_000, 7))  # a new scenario each time: no answer comes from the cache


@pytest.fixture
def parses(monkeypatch: pytest.MonkeyPatch) -> Counter[str]:
    """How often each model id was parsed as a Hub reference."""
    seen: Counter[str] = Counter()
    real = models.parse_hub_ref

    def counting(model: str, *args, **kwargs):  # type: ignore[no-untyped-def]
        seen[model] += 1
        return real(model, *args, **kwargs)

    monkeypatch.setattr(models, "parse_hub_ref", counting)
    return seen


def _requests(model: str) -> list[tuple[str, str, dict[str, object] | None]]:
    ctx = next(_context)
    log = f"vllm serve {model} --gpu-memory-utilization 0.9\nAvailable KV cache memory: 20.0 GiB\n"
    return [
        ("POST", "/v1/budget", {"model": model, **H100, "context_tokens": ctx}),
        ("POST", "/v1/budget?format=text", {"model": model, **H100, "context_tokens": ctx + 1}),
        ("GET", f"/v1/budget?model={model}&gpu=h100-sxm-80gb&context_tokens={ctx + 2}", None),
        ("GET", f"/v1/per-token?model={model}&context_tokens={ctx + 3}", None),
        ("POST", "/v1/per-token", {"model": model, "context_tokens": ctx + 4}),
        ("POST", "/v1/fleet", {"model": model, "workload": {"context_tokens": ctx},
                               "fleet": [{"gpu": "h100-sxm-80gb", "count": 8}]}),
        ("GET", f"/v1/sweep?model={model}&gpu=h100-sxm-80gb&vary=context_tokens&values={ctx}", None),
        ("POST", "/v1/simulate", {"model": model, **H100,
                                  "workload": {"requests": [{"prompt_tokens": 64, "output_tokens": 8}]}}),
        ("GET", f"/v1/models/{model}", None),
        ("POST", "/v1/models/resolve", model),  # type: ignore[list-item]
        ("POST", "/v1/reconcile", {"log": log, "overrides": {"gpu": "h100-sxm-80gb"}}),
    ]  # fmt: skip


@pytest.mark.parametrize("model", [QWEN, PINNED])
def test_a_hub_id_is_parsed_once_a_request_on_every_endpoint(client, hub, parses, model):
    for method, url, body in _requests(model):
        parses.clear()
        r = client.request(method, url, json=body)
        assert r.status_code == 200, (url, r.text)
        assert parses == {model: 1}, (method, url)


def test_a_batch_parses_each_model_it_names_once(client, hub, parses):
    ctx = next(_context)
    scenarios = [{"model": m, **H100, "context_tokens": ctx + i} for i, m in enumerate([QWEN, PINNED] * 3)]
    r = client.post("/v1/budget/batch", json={"scenarios": [*scenarios, {"model": "Qwen/", **H100}] * 2})
    assert r.status_code == 200, r.text
    results = r.json()["results"]
    assert all("result" in x for x in results[:6]) and results[6]["error"]["field"] == "scenarios[6].model"
    assert parses == {QWEN: 1, PINNED: 1, "Qwen/": 1}


def test_a_config_count_sent_as_a_float_is_refused_naming_it(client):
    """The one integer rule reaches config.json counts (tests/core/test_integer_rule.py)."""
    config = json.loads((BUILTIN_DIR / "models" / "llama-3-8b.json").read_text())["config"]
    r = client.post(
        "/v1/budget", json={"model": {"hf_config": {**config, "num_hidden_layers": 32.0}}, **H100}
    )
    assert r.status_code == 400, r.text
    assert r.json()["field"] == "model.hf_config.num_hidden_layers"
    assert r.json()["detail"].endswith("must be a positive integer, got 32.0")
