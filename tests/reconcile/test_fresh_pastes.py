"""Real start-up logs kvplan was never tuned on (tests/reconcile/data/real/NN-<source>.log, each
copied as posted from the public thread its .url names), pasted into /v1/reconcile as an on-call
engineer would: the text alone, no overrides, on a machine that cannot reach the Hub.

tests/reconcile/data/real/expected.json holds what a person reads from each paste by hand (the
figures, the failure, the engine, the layout, the model) and, under `gaps`, what kvplan gets wrong
today: each gap is an xfail(strict=True) here, so the test fails (and the gap is to be struck from
the file) the day it is fixed."""

from __future__ import annotations

import json
import logging
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from litestar.testing import TestClient

from kvplan.api.app import create_app
from kvplan.api.settings import Settings
from kvplan.core.engine.profiles import V0_PROFILE_ID
from kvplan.hub import reset_default_hub
from kvplan.presets import load_registry
from tests.hub.fakehub import isolate_hf_client

DATA = Path(__file__).parent / "data" / "real"
CASES: list[dict[str, Any]] = json.loads((DATA / "expected.json").read_text())
BY_ID = {c["id"]: c for c in CASES}
TEXT = {"content-type": "text/plain"}


def cases(aspect: str, where: Any = lambda c: True) -> list[Any]:
    """The pastes `where` selects, each marked xfail (strict) where expected.json records a gap in
    this aspect."""
    out = []
    for c in CASES:
        if not where(c):
            continue
        reason = c.get("gaps", {}).get(aspect)
        marks = [pytest.mark.xfail(strict=True, reason=reason)] if reason else []
        out.append(pytest.param(c["id"], id=c["id"], marks=marks))
    return out


@pytest.fixture(scope="module")
def answers() -> Iterator[dict[str, tuple[int, Any]]]:
    """Every paste posted once, air-gapped (HF_HUB_OFFLINE with an empty cache: a Hub id is
    matched to a preset by name or not at all)."""
    logging.getLogger("httpx").setLevel(logging.WARNING)
    mp = pytest.MonkeyPatch()
    with tempfile.TemporaryDirectory() as tmp:
        try:
            isolate_hf_client(mp, Path(tmp) / "hub")
            mp.setenv("HF_HOME", tmp)
            mp.setenv("HF_HUB_CACHE", str(Path(tmp) / "hub"))
            mp.setenv("HF_HUB_OFFLINE", "1")
            reset_default_hub()
            app = create_app(Settings(), registry=load_registry(extra_dir=""))
            with TestClient(app) as client:
                out = {}
                for c in CASES:
                    paste = (DATA / f"{c['id']}.log").read_bytes()
                    r = client.post("/v1/reconcile", content=paste, headers=TEXT)
                    out[c["id"]] = (r.status_code, r.json())
                yield out
        finally:
            reset_default_hub()
            mp.undo()


def body(answers: dict[str, tuple[int, Any]], case_id: str) -> dict[str, Any]:
    status, b = answers[case_id]
    assert status == 200, b
    return b  # type: ignore[no-any-return]


def inputs(b: dict[str, Any]) -> dict[str, Any]:
    return {u["name"]: u["value"] for u in b["inputs"]}


def same(read: Any, expected: Any) -> bool:
    if isinstance(expected, str):
        return str(read) == expected
    try:
        return abs(float(read) - float(expected)) <= 1e-9 * max(1.0, abs(float(expected)))
    except (TypeError, ValueError):
        return False


@pytest.mark.parametrize("case_id", cases("status"))
def test_each_fresh_paste_answers_200(answers, case_id):
    assert answers[case_id][0] == 200, answers[case_id][1]


@pytest.mark.parametrize("case_id", cases("figures", lambda c: c["figures"]))
def test_every_figure_read_by_hand_is_among_the_figures_read(answers, case_id):
    figures = body(answers, case_id)["figures"]
    missed = [
        (name, value)
        for name, value in BY_ID[case_id]["figures"]
        if not any(f["name"] == name and same(f["value"], value) for f in figures)
    ]
    assert missed == []


@pytest.mark.parametrize("case_id", cases("failure"))
def test_a_failed_start_up_is_recognised_and_a_started_one_is_not(answers, case_id):
    failure = body(answers, case_id)["failure"]
    expected = BY_ID[case_id]["failure"]
    if expected is None:
        assert failure is None
    elif expected == "any":
        assert failure is not None
    else:
        assert failure is not None and failure["kind"] == expected


@pytest.mark.parametrize("case_id", cases("engine", lambda c: c["engine"] is not None))
def test_the_engine_is_told_from_the_lines(answers, case_id):
    b = body(answers, case_id)
    if BY_ID[case_id]["engine"] == "V0":
        assert b["engine"] == V0_PROFILE_ID, b["engine_source"]
    else:
        assert b["engine"] != V0_PROFILE_ID, b["engine_source"]


@pytest.mark.parametrize("case_id", cases("version", lambda c: "version" in c))
def test_the_printed_version_is_the_one_the_log_is_judged_by(answers, case_id):
    assert BY_ID[case_id]["version"] in body(answers, case_id)["engine_source"]


def _layout_cases(c: dict[str, Any]) -> bool:
    keys = ("tensor_parallel_size", "tensor_parallel_size_at_least", "pipeline_parallel_size")
    keys += ("world_at_least",)
    return any(k in c for k in keys)


@pytest.mark.parametrize("case_id", cases("tp", _layout_cases))
def test_the_parallel_layout_is_inferred_from_the_ranks(answers, case_id):
    c, got = BY_ID[case_id], inputs(body(answers, case_id))
    tp, pp = got.get("tensor_parallel_size", 1), got.get("pipeline_parallel_size", 1)
    if "tensor_parallel_size" in c:
        assert tp == c["tensor_parallel_size"]
    if "tensor_parallel_size_at_least" in c:
        assert tp >= c["tensor_parallel_size_at_least"]
    if c.get("tensor_parallel_power_of_two"):
        assert tp & (tp - 1) == 0, tp
    if "pipeline_parallel_size" in c:
        assert pp == c["pipeline_parallel_size"]
    if "world_at_least" in c:
        assert tp * pp >= c["world_at_least"], (tp, pp)


@pytest.mark.parametrize("case_id", cases("model", lambda c: "model" in c))
def test_the_model_is_matched_to_its_preset(answers, case_id):
    assert inputs(body(answers, case_id)).get("model") == BY_ID[case_id]["model"]


@pytest.mark.parametrize("case_id", cases("quantization", lambda c: "quantization" in c))
def test_the_quantization_a_name_states_is_inferred(answers, case_id):
    got = inputs(body(answers, case_id)).get("quantization")
    expected = BY_ID[case_id]["quantization"]
    assert got is not None and (expected == "any" or got == expected)


@pytest.mark.parametrize("case_id", cases("enforce_eager", lambda c: c.get("enforce_eager_not")))
def test_advice_in_a_message_is_not_read_as_a_setting(answers, case_id):
    assert inputs(body(answers, case_id)).get("enforce_eager") is not True


@pytest.mark.parametrize("case_id", cases("not_planned"))
def test_a_paste_left_unplanned_says_which_input_is_missing(answers, case_id):
    b = body(answers, case_id)
    if b["plan"] is None and b["plan_from_log_memory"] is None:
        assert b["not_planned"]


@pytest.mark.parametrize("case_id", cases("checks", lambda c: c.get("checks")))
def test_figures_printed_together_are_checked_against_each_other(answers, case_id):
    checked = {c["name"] for c in body(answers, case_id)["checks"]}
    assert set(BY_ID[case_id]["checks"]) <= checked
