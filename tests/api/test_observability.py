"""Metrics, request ids and access logs."""

from __future__ import annotations

import json

from kvplan import __version__
from tests.metrics import sample, unasked
from tests.seed import C


def test_metrics_label_route_templates_and_skip_metrics_itself(client):
    client.get("/v1/models/llama-3-8b")
    client.get("/metrics")
    text = client.get("/metrics").text
    assert 'path="/v1/models/{model_id}"' in text
    assert 'path="/v1/models/llama-3-8b"' not in text
    assert 'path="/metrics"' not in text


def test_domain_metrics_count_calculations_warnings_and_core_time(client, registry):
    # The labelled series exist from import, at 0: what is checked is that these requests move them.
    def counts() -> dict[str, float]:
        text = client.get("/metrics").text
        return {
            "ok": sample(text, "kvplan_calculations_total", endpoint="budget", outcome="ok"),
            "invalid": sample(text, "kvplan_calculations_total", endpoint="budget", outcome="invalid"),
            "warned": sample(text, "kvplan_warnings_total", code="budget_insufficient"),
            "core": sample(text, "kvplan_core_compute_seconds_count", endpoint="budget"),
        }

    before = counts()
    assert client.post("/v1/budget", json=unasked(C)).status_code == 200  # group C: a warning
    assert client.post("/v1/budget", json={**C, "tensor_parallel_size": 3}).status_code == 400
    after = counts()
    assert {k: after[k] - before[k] for k in after} == {"ok": 1, "invalid": 1, "warned": 1, "core": 1}
    text = client.get("/metrics").text
    assert sample(text, "kvplan_build_info", version=__version__) == 1
    assert sample(text, "kvplan_registry_info", version=registry.version) == 1


def test_request_id_is_accepted_and_echoed(client):
    r = client.get("/healthz", headers={"X-Request-ID": "incident-42"})
    assert r.headers["x-request-id"] == "incident-42"
    generated = client.get("/healthz").headers["x-request-id"]
    assert len(generated) == 32
    bad = client.get("/healthz", headers={"X-Request-ID": "x" * 500}).headers["x-request-id"]
    assert bad != "x" * 500


def test_problem_bodies_carry_the_request_id(client):
    r = client.post("/v1/budget", json={**C, "model": "nope"}, headers={"X-Request-ID": "rid-7"})
    assert r.json()["request_id"] == "rid-7"


def test_one_log_line_per_request_without_the_body(client, capsys):
    capsys.readouterr()
    client.post(
        "/v1/budget",
        json={**C, "model": {"hf_config": {"secret_marker": 1}}},
        headers={"X-Request-ID": "log-me"},
    )
    lines = [json.loads(x) for x in capsys.readouterr().out.splitlines() if '"log-me"' in x]
    assert len(lines) == 1
    line = lines[0]
    assert {line["method"], line["route"], line["status"]} == {"POST", "/v1/budget", 400}
    assert line["duration_ms"] >= 0
    assert "secret_marker" not in json.dumps(line)


def test_a_500_is_logged_with_its_trace_counted_and_never_shown(client, capsys, monkeypatch):
    from kvplan.services import catalog  # where the model-detail answer is built

    def broken(*args, **kwargs):
        raise RuntimeError("secret internal detail")

    monkeypatch.setattr(catalog, "valid_tensor_sizes", broken)
    before = client.get("/metrics").text
    capsys.readouterr()
    r = client.get("/v1/models/llama-3-8b", headers={"X-Request-ID": "boom-1"})
    assert r.status_code == 500
    assert r.headers["content-type"].startswith("application/problem+json")
    assert "secret internal detail" not in r.text and "Traceback" not in r.text
    assert r.json()["request_id"] == "boom-1"
    logged = [json.loads(x) for x in capsys.readouterr().out.splitlines() if "unhandled_error" in x]
    assert logged and logged[0]["request_id"] == "boom-1"
    assert "secret internal detail" in logged[0]["exception"]  # the trace is in the log
    after = client.get("/metrics").text

    def count(text: str) -> float:
        line = next((x for x in text.splitlines() if x.startswith("kvplan_unhandled_errors_total ")), "x 0")
        return float(line.split()[-1])

    assert count(after) == count(before) + 1


def test_a_log_line_msgspec_cannot_write_is_still_written_as_json():
    from kvplan.api.logs import _json_line

    line = _json_line({"event": "request", "route": "/v1/\ud800", "obj": object()})
    parsed = json.loads(line)
    assert parsed["event"] == "request"
    assert parsed["obj"].startswith("<object object")
