"""The deployments file is read again when it changes (and on SIGHUP), without a restart: a good
edit changes the series within one reload interval; a broken file keeps the last good plans and
says why; one broken deployment hides none of the others."""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from litestar.testing import TestClient

from kvplan.api.app import create_app
from kvplan.api.settings import Settings
from kvplan.presets import Registry
from tests.autoscale.test_deployments_api import series
from tests.live import start_server

INTERVAL = 0.2

LLAMA = """
[[deployment]]
namespace = "serving"
name = "llama"
model = "llama-3.1-8b"
gpu = "h100-sxm-80gb"
context_tokens = 8192
gpu_memory_utilization = {util}
max_replicas = 8
"""
QWEN = """
[[deployment]]
namespace = "serving"
name = "qwen"
model = "qwen3-8b"
gpu = "l40s-48gb"
context_tokens = 4096
max_replicas = {max_replicas}
"""


@pytest.fixture
def fleet(
    tmp_path: Path, registry: Registry, request: pytest.FixtureRequest
) -> Iterator[tuple[Path, TestClient]]:
    """The two deployments, watched every INTERVAL (or the interval the test gives as its param)."""
    interval = getattr(request, "param", INTERVAL)
    path = tmp_path / "deployments.toml"
    path.write_text(LLAMA.format(util=0.9) + QWEN.format(max_replicas=4))
    app = create_app(Settings(deployments=str(path), deployments_reload_seconds=interval), registry=registry)
    with TestClient(app) as client:
        yield path, client


def rewrite(path: Path, text: str) -> None:
    """Replace the watched file at once, as a ConfigMap update (a symlink swap) or an editor's
    save-and-rename does: written in place, the watcher could read it empty or half written."""
    part = path.with_suffix(".part")
    part.write_text(text)
    os.replace(part, path)


def published(client: TestClient) -> dict[tuple[str, str, str], float]:
    return series(client.get("/metrics").text)


def within(seconds: float, check: Callable[[], Any]) -> float:
    """How long until check() holds, failing past `seconds`."""
    t0 = time.monotonic()
    while not check():
        if time.monotonic() - t0 > seconds:
            raise AssertionError(f"not within {seconds} s")
        time.sleep(0.02)
    return time.monotonic() - t0


def reload_ok(client: TestClient) -> float:
    text = client.get("/metrics").text
    return 1.0 if "kvplan_deployments_last_reload_successful 1.0" in text else 0.0


def test_an_edit_changes_the_series_within_one_reload_interval(fleet):
    path, client = fleet
    before = published(client)["num_gpu_blocks", "serving", "llama"]
    rewrite(path, LLAMA.format(util=0.8) + QWEN.format(max_replicas=4))
    took = within(INTERVAL * 5, lambda: published(client)["num_gpu_blocks", "serving", "llama"] != before)
    assert took < INTERVAL * 5
    asked = {
        "model": "llama-3.1-8b",
        "gpu": "h100-sxm-80gb",
        "context_tokens": 8192,
        "gpu_memory_utilization": 0.8,
    }
    after = client.post("/v1/budget", json=asked).json()
    assert published(client)["num_gpu_blocks", "serving", "llama"] == after["num_blocks"] < before


def test_a_broken_file_keeps_the_last_good_plans_and_says_why(fleet):
    path, client = fleet
    good = published(client)
    rewrite(path, LLAMA.format(util=0.8) + "[[deployment]\nname = ")
    within(INTERVAL * 5, lambda: reload_ok(client) == 0.0)
    kept = published(client)
    assert {k: v for k, v in kept.items() if k[0] != "plan_current"} == {
        k: v for k, v in good.items() if k[0] != "plan_current"
    }
    # Kept, but no longer planned from the file as it is.
    assert {v for k, v in kept.items() if k[0] == "plan_current"} == {0.0}
    listing = client.get("/v1/deployments").json()
    assert listing["last_reload"]["successful"] is False
    (failure,) = listing["failures"]
    assert failure["field"] == "KVPLAN_DEPLOYMENTS" and "not TOML" in failure["reason"]
    # Mended: planned again.
    rewrite(path, LLAMA.format(util=0.8) + QWEN.format(max_replicas=4))
    within(INTERVAL * 5, lambda: reload_ok(client) == 1.0)
    assert (
        published(client)["num_gpu_blocks", "serving", "llama"] < good["num_gpu_blocks", "serving", "llama"]
    )


def test_a_typo_names_the_field_and_the_deployment_and_hides_no_other(fleet):
    path, client = fleet
    good = published(client)
    rewrite(
        path, LLAMA.format(util=0.8).replace("context_tokens", "contxt_tokens") + QWEN.format(max_replicas=6)
    )
    within(INTERVAL * 5, lambda: published(client)["max_replicas", "serving", "qwen"] == 6)
    assert reload_ok(client) == 0.0
    # The broken one keeps its last good plan, marked so.
    assert (
        published(client)["num_gpu_blocks", "serving", "llama"] == good["num_gpu_blocks", "serving", "llama"]
    )
    assert published(client)["plan_current", "serving", "llama"] == 0.0
    (failure,) = client.get("/v1/deployments").json()["failures"]
    assert failure["deployment"] == "serving/llama" and failure["field"] == "contxt_tokens"
    assert "did you mean context_tokens" in failure["reason"]
    text = client.get("/v1/deployments/serving/llama?format=text").text
    assert "the last good plan" in text and "contxt_tokens" in text


def test_a_deployment_that_cannot_be_planned_is_reported_by_name(fleet):
    path, client = fleet
    huge = QWEN.format(max_replicas=2).replace('"qwen3-8b"', '"llama-3.1-405b"').replace("qwen", "big")
    rewrite(path, LLAMA.format(util=0.9) + QWEN.format(max_replicas=4) + huge)
    within(INTERVAL * 5, lambda: reload_ok(client) == 0.0)
    (failure,) = client.get("/v1/deployments").json()["failures"]
    assert failure["deployment"] == "serving/big" and "vLLM would not start" in failure["reason"]
    assert ("num_gpu_blocks", "serving", "big") not in published(client)
    assert ("num_gpu_blocks", "serving", "qwen") in published(client)


SLOW = 1.0  # a reload interval the test's steps between two readings fit in, on a busy machine


@pytest.mark.parametrize("fleet", [SLOW], indirect=True)
def test_a_file_read_empty_keeps_its_plans_until_a_second_reading_finds_it_empty_still(fleet):
    """Written in place, a file reads empty for a moment; emptied on purpose, it stays so."""
    path, client = fleet
    good = published(client)
    path.write_text("")  # the moment an editor truncates it
    deployments = client.app.state.deployments
    within(SLOW * 5, lambda: deployments._empty_seen)
    assert published(client) == good  # one empty reading drops nothing
    rewrite(path, LLAMA.format(util=0.9) + QWEN.format(max_replicas=4))  # the write completes
    within(SLOW * 5, lambda: not deployments._empty_seen)
    assert (
        published(client)["num_gpu_blocks", "serving", "llama"] == good["num_gpu_blocks", "serving", "llama"]
    )
    rewrite(path, "\n")  # emptied on purpose: gone after a second reading
    within(SLOW * 10, lambda: ("num_gpu_blocks", "serving", "llama") not in published(client))
    assert reload_ok(client) == 1.0 and client.get("/v1/deployments").json()["deployments"] == []


def test_a_file_of_only_a_comment_plans_no_deployments(fleet):
    path, client = fleet
    rewrite(path, "# every deployment moved to another cluster\n")
    within(INTERVAL * 5, lambda: ("num_gpu_blocks", "serving", "llama") not in published(client))
    assert reload_ok(client) == 1.0
    assert client.get("/v1/deployments").json()["deployments"] == []


def test_a_deployment_removed_from_the_file_loses_its_series(fleet):
    path, client = fleet
    rewrite(path, QWEN.format(max_replicas=4))
    within(INTERVAL * 5, lambda: ("num_gpu_blocks", "serving", "llama") not in published(client))
    assert client.get("/v1/deployments/serving/llama").status_code == 404


@pytest.mark.parametrize(
    ("text", "field", "words"),
    [
        ("[[deployments]]\nname = 'x'\n", "deployments", "did you mean [[deployment]]?"),
        (
            "[autoscaling]\nmatch_on = 'pod'\n",
            "autoscaling.match_on",
            'valid: "model_name", "namespace,deployment"',
        ),
        ("deployment = 3\n", "deployment", "array of tables"),
        ("extra = " + "[" * 1000 + "]" * 1000 + "\n", "KVPLAN_DEPLOYMENTS", "nested too deeply"),
        ("#" + "x" * (8 << 20) + "\n", "KVPLAN_DEPLOYMENTS", "a deployments file is at most 8,388,608"),
    ],
)
def test_a_file_of_the_wrong_shape_is_refused_whole(fleet, text, field, words):
    path, client = fleet
    rewrite(path, text)
    within(INTERVAL * 5, lambda: reload_ok(client) == 0.0)
    (failure,) = client.get("/v1/deployments").json()["failures"]
    assert failure["field"] == field and words in failure["reason"], failure
    assert ("num_gpu_blocks", "serving", "llama") in published(client)


def test_sighup_reads_the_file_again_at_once(tmp_path):
    path = tmp_path / "deployments.toml"
    rewrite(path, LLAMA.format(util=0.9))
    server = start_server(env={"KVPLAN_DEPLOYMENTS": str(path), "KVPLAN_DEPLOYMENTS_RELOAD_SECONDS": "3600"})
    try:

        def blocks() -> float:
            return series(httpx.get(f"{server.url}/metrics").text)["num_gpu_blocks", "serving", "llama"]

        before = blocks()
        rewrite(path, LLAMA.format(util=0.8))
        time.sleep(0.3)
        assert blocks() == before  # an hour's interval: only the signal reads it now
        os.kill(server.proc.pid, signal.SIGHUP)
        within(5, lambda: blocks() < before)
    finally:
        server.stop()


def test_every_worker_reports_the_same_plans(tmp_path):
    path = tmp_path / "deployments.toml"
    rewrite(path, LLAMA.format(util=0.9) + QWEN.format(max_replicas=4))
    server = start_server(workers=2, env={"KVPLAN_DEPLOYMENTS": str(path)})
    try:
        scrapes = []
        with httpx.Client() as c:
            for _ in range(8):  # new connections, spread over the workers
                scrapes.append(series(c.get(f"{server.url}/metrics", headers={"Connection": "close"}).text))
        assert all(s == scrapes[0] for s in scrapes) and len(scrapes[0]) > 20
    finally:
        server.stop()


SAME_NAME_TWICE = LLAMA.format(util=0.9) + LLAMA.format(util=0.8)


def test_a_name_used_twice_plans_neither_entry_and_names_both(fleet):
    path, client = fleet
    good = published(client)
    rewrite(path, SAME_NAME_TWICE + QWEN.format(max_replicas=5))
    within(INTERVAL * 5, lambda: published(client)["max_replicas", "serving", "qwen"] == 5)
    (failure,) = client.get("/v1/deployments").json()["failures"]
    assert failure["deployment"] == "serving/llama" and "deployment[0], deployment[1]" in failure["reason"]
    assert published(client)["plan_current", "serving", "llama"] == 0.0
    assert (
        published(client)["num_gpu_blocks", "serving", "llama"] == good["num_gpu_blocks", "serving", "llama"]
    )


MODEL_NAME_MATCH = '[autoscaling]\nmatch_on = "model_name"\n'


def test_two_deployments_of_one_model_name_are_refused_so_the_rule_holds_for_the_others(fleet):
    """The rules join vLLM's series on model_name in this mode: two plans of one label would make
    Prometheus drop the count of every deployment, so neither is published."""
    path, client = fleet
    twin = LLAMA.format(util=0.8).replace('name = "llama"', 'name = "llama-b"')
    rewrite(path, MODEL_NAME_MATCH + LLAMA.format(util=0.9) + twin + QWEN.format(max_replicas=4))
    within(
        INTERVAL * 5,
        lambda: ("num_gpu_blocks", "serving", "llama-b") in published(client) or reload_ok(client) == 0.0,
    )
    within(INTERVAL * 5, lambda: reload_ok(client) == 0.0)
    failures = client.get("/v1/deployments").json()["failures"]
    assert sorted(f["deployment"] for f in failures) == ["serving/llama", "serving/llama-b"]
    assert all(f["field"] == "served_model_name" for f in failures)
    labels = [k for k in published(client) if k[0] == "num_gpu_blocks"]
    assert ("num_gpu_blocks", "serving", "llama-b") not in labels and (
        "num_gpu_blocks",
        "serving",
        "qwen",
    ) in labels
    names = [d["model_name"] for d in client.get("/v1/deployments").json()["deployments"]]
    assert len(names) == len(set(names))


def test_a_missing_required_field_is_named(fleet):
    path, client = fleet
    rewrite(path, LLAMA.format(util=0.9).replace("max_replicas = 8\n", ""))
    within(INTERVAL * 5, lambda: reload_ok(client) == 0.0)
    (failure,) = client.get("/v1/deployments").json()["failures"]
    assert (failure["deployment"], failure["field"], failure["reason"]) == (
        "serving/llama",
        "max_replicas",
        "is required",
    )


def test_a_misspelt_preset_carries_its_suggestions(fleet):
    path, client = fleet
    rewrite(path, LLAMA.format(util=0.9).replace("llama-3.1-8b", "llama-3.1-8"))
    within(INTERVAL * 5, lambda: reload_ok(client) == 0.0)
    (failure,) = client.get("/v1/deployments").json()["failures"]
    assert failure["field"] == "model" and "llama-3.1-8b" in failure["suggestions"]


def test_a_defect_in_a_reading_is_reported_not_swallowed(fleet, monkeypatch):
    from kvplan.api import deployments

    path, client = fleet

    def broken(*args):
        raise RuntimeError("a defect")

    monkeypatch.setattr(deployments, "plan_all", broken)
    rewrite(path, LLAMA.format(util=0.8))
    within(INTERVAL * 5, lambda: reload_ok(client) == 0.0)
    (failure,) = client.get("/v1/deployments").json()["failures"]
    assert failure["reason"] == "internal error: see the log"


def test_a_pod_started_on_a_broken_file_is_not_ready_until_it_is_mended(tmp_path, registry):
    path = tmp_path / "deployments.toml"
    rewrite(path, "[[deployment]\n")
    app = create_app(Settings(deployments=str(path), deployments_reload_seconds=INTERVAL), registry=registry)
    with TestClient(app) as client:
        assert client.get("/readyz").status_code == 503
        assert client.get("/v1/budget?model=llama-3.1-8b&gpu=h100-sxm-80gb").status_code == 200
        rewrite(path, LLAMA.format(util=0.9))
        within(INTERVAL * 5, lambda: client.get("/readyz").status_code == 200)


def test_the_deployments_answer_503_while_their_first_reading_runs(tmp_path, registry, monkeypatch):
    import threading

    from kvplan.api import deployments

    gate = threading.Event()
    plan_all = deployments.plan_all

    def slow(*args):
        gate.wait(10)
        return plan_all(*args)

    monkeypatch.setattr(deployments, "plan_all", slow)
    monkeypatch.setattr(deployments, "FIRST_LOAD_WAIT_SECONDS", 0.05)
    path = tmp_path / "deployments.toml"
    rewrite(path, LLAMA.format(util=0.9))
    app = create_app(Settings(deployments=str(path), deployments_reload_seconds=INTERVAL), registry=registry)
    with TestClient(app) as client:
        r = client.get("/v1/deployments/serving/llama")
        assert r.status_code == 503 and r.headers["retry-after"] == "2"
        assert client.get("/readyz").status_code == 503
        gate.set()
        within(5, lambda: client.get("/v1/deployments/serving/llama").status_code == 200)


def test_a_deployment_name_of_253_characters_is_served_and_a_miss_among_long_names_is_quick(fleet):
    """Kubernetes names run to 253 characters; "did you mean" compares the asked path with at most
    MAX_SUGGESTION_NAMES names of everyday length (difflib over 1,000 long names took seconds)."""
    path, client = fleet
    long_name = "a" * 251 + "-b"
    many = "".join(
        LLAMA.format(util=0.9).replace('name = "llama"', f'name = "{"ab" * 60}{i}"') for i in range(300)
    )
    rewrite(path, LLAMA.format(util=0.9).replace('name = "llama"', f'name = "{long_name}"') + many)
    within(INTERVAL * 50, lambda: client.get(f"/v1/deployments/serving/{long_name}").status_code == 200)
    miss = client.get("/v1/deployments/serving/" + "ab" * 60 + "x")
    assert miss.status_code == 404
    near = client.get("/v1/deployments/serving/" + "ab" * 60 + "7x")
    assert near.status_code == 404 and f"serving/{'ab' * 60}7" in near.json()["detail"]
