"""The page's traffic view, in headless Chromium: one replica's sustainable rate under latency
targets (the rate, what binds first in words, the latency–rate curve against the targets), a fleet
sized by a request rate (replicas per layout and the cheapest mix), and targets no rate meets
(the reason said, not an error)."""

from __future__ import annotations

import json

import httpx
import pytest

from tests.browser import test_planner_page as planner
from tests.browser.test_simulation_page import choose_pool, labels_apart

browser, page = planner.browser, planner.page
open_page, shot = planner.open_page, planner.shot

pytestmark = pytest.mark.server


def run(page, shown: str, path: str) -> dict[str, object]:
    """Press the traffic view's button; wait for `shown`. The body the page sent to `path`."""
    with page.expect_request(lambda r: path in r.url and r.method == "POST") as sent:
        page.click("#traffic-go")
    page.wait_for_selector(f"{shown}:not([hidden])", timeout=60_000)
    return json.loads(sent.value.post_data or "{}")


def per_s(page, x: float) -> str:
    return page.evaluate("(v) => fmtPerS(v)", x)


def test_one_replica_shows_its_sustainable_rate_what_binds_and_the_curve(page, server):
    open_page(page, server)
    choose_pool(page)
    page.fill("#traffic-count", "200")
    page.fill("#traffic-ttft-p90", "500")
    page.fill("#traffic-tpot-p99", "40")
    body = run(page, "#traffic-result", "/v1/capacity")
    assert body["model"] == "llama-3.1-8b" and body["gpu"] == "h100-sxm-80gb" and "context_tokens" not in body
    assert body["slo"] == {"ttft_p90_ms": 500, "tpot_p99_ms": 40}
    assert body["workload"]["count"] == 200 and body["workload"]["prompt"] == {
        "kind": "lognormal",
        "mean": 1000,
        "sigma": 0.6,
    }
    answer = httpx.post(f"{server.url}/v1/capacity", json=body, timeout=120).json()  # what the page drew
    rate = answer["max_rate_per_s"]
    assert rate > 0
    assert page.text_content("#traffic-out-rate") == f"{per_s(page, rate)} requests/s"
    assert "every target met" in page.text_content("#traffic-out-rate-x")
    # What binds first, in words: the constraint named, and why, with the targets as people say them.
    binding = answer["binding"]
    assert page.get_attribute("#traffic-out-binding", "data-constraint") == binding["constraint"]
    why = page.text_content("#traffic-out-binding-x")
    assert "_ms" not in why and ("TPOT p99" in why or "TTFT p90" in why), why
    # The targets at the rate and just above it.
    rows = page.locator("#traffic-checks-table tbody tr")
    assert [rows.nth(i).get_attribute("data-target") for i in range(rows.count())] == [
        "ttft_p90_ms",
        "tpot_p99_ms",
    ]
    assert "missed" in page.text_content("#traffic-checks-table tbody")  # above the rate, one target is
    # The curve: a line and a point a simulated rate for each target, the targets dashed, the rate marked.
    curve = answer["curve"]
    for target in ("ttft_p90_ms", "tpot_p99_ms"):
        assert page.locator(f"#traffic-chart g.rate-series[data-target='{target}'] circle").count() == len(
            curve
        )
        assert page.locator(f"#traffic-chart line.slo-line[data-target='{target}']").count() == 1
    met = sum(p["meets"] for p in curve)
    assert page.locator("#traffic-chart g.rate-series circle.met").count() == 2 * met
    assert page.locator("#traffic-chart g.rate-series circle.missed").count() == 2 * (len(curve) - met)
    assert (
        float(page.locator("#traffic-chart line.capacity[data-rate]").get_attribute("data-rate") or "nan")
        == rate
    )
    assert page.locator("#traffic-curve-table tbody tr").count() == len(curve)
    labels_apart(page, "#traffic-chart")
    assert page.is_hidden("#traffic-reason") and page.is_hidden("#traffic-fleet-result")
    assert "tttft=500" not in page.url and "ttpot=40" in page.url  # the inputs in the URL, defaults left out
    shot(page, "traffic-replica", "#traffic")
    assert page.errors == []  # type: ignore[attr-defined]


def test_a_fleet_by_traffic_shows_replicas_per_layout_and_the_cheapest_mix(page, server):
    open_page(page, server)
    choose_pool(page)
    page.select_option("#traffic-mode", "fleet")
    assert page.is_visible("#traffic-rate") and page.text_content("#traffic-go") == "Size the fleet"
    page.fill("#traffic-count", "150")
    page.fill("#traffic-rate", "40")
    body = run(page, "#traffic-fleet-result", "/v1/fleet")
    assert body["target_rate"] == 40 and "target_concurrency" not in body
    assert [g["gpu"] for g in body["fleet"]] == ["h100-sxm-80gb"]  # the GPU chosen above
    assert body["traffic"]["count"] == 150 and body["slo"] == {"ttft_p90_ms": 500, "tpot_p99_ms": 50}
    answer = httpx.post(f"{server.url}/v1/fleet", json=body, timeout=120).json()["traffic"]
    rows = page.locator("#traffic-layouts-table tbody tr")
    assert rows.count() == len(answer["layouts"]) > 0
    for i, layout in enumerate(answer["layouts"]):
        cells = rows.nth(i).locator("td").all_text_contents()
        assert cells[:2] == [layout["gpu"], layout["layout"]]
        if layout.get("replicas_needed") is not None:
            assert cells[2] == per_s(page, layout["max_rate_per_s"])
            assert cells[3] == f"{layout['replicas_needed']:,}"
    mix = answer["cheapest_mix"]
    assert mix and page.is_visible("#traffic-mix-box")
    parts = page.locator("#traffic-mix-table tbody tr")
    assert parts.count() == len(mix["parts"])
    assert parts.nth(0).locator("td").all_text_contents()[:3] == [
        mix["parts"][0]["gpu"],
        mix["parts"][0]["layout"],
        str(mix["parts"][0]["replicas"]),
    ]
    assert page.text_content("#traffic-mix-rate") == per_s(page, mix["rate_per_s"])
    assert page.is_hidden("#traffic-result")
    shot(page, "traffic-fleet", "#traffic")
    assert page.errors == []  # type: ignore[attr-defined]


def test_targets_no_rate_meets_show_the_reason_not_an_error(page, server):
    open_page(page, server)
    choose_pool(page)
    page.fill("#traffic-count", "50")
    page.fill("#traffic-ttft-p90", "1")
    run(page, "#traffic-result", "/v1/capacity")
    assert page.text_content("#traffic-out-rate") == "none"
    reason = page.text_content("#traffic-reason")
    assert page.is_visible("#traffic-reason") and reason.startswith("No rate meets every target"), reason
    assert "TTFT p90" in reason and "_ms" not in reason
    assert page.is_hidden("#traffic-error")
    assert page.locator("#traffic-chart g.rate-series circle.missed").count() >= 1


def test_no_targets_or_a_spread_out_of_bounds_is_refused_naming_the_control(page, server):
    open_page(page, server)
    choose_pool(page)
    page.fill("#traffic-ttft-p90", "")
    page.fill("#traffic-tpot-p99", "")
    run(page, "#traffic-error", "/v1/capacity")
    text = page.text_content("#traffic-error")
    assert text.startswith("“Latency targets”: give at least one target, e.g. TTFT p90 or TPOT p99"), text
    assert page.is_hidden("#traffic-result")
    page.fill("#traffic-output-sigma", "9")
    page.fill("#traffic-tpot-p99", "50")
    run(page, "#traffic-error", "/v1/capacity")
    assert page.text_content("#traffic-error").startswith("“output spread, σ of the log”:")
    assert page.get_attribute("#traffic-output-sigma", "aria-invalid") == "true"


def test_the_traffic_view_is_usable_at_a_phone_width(browser, server):
    with planner.phone_page(browser, server) as pg:
        choose_pool(pg)
        pg.fill("#traffic-count", "60")
        pg.click("#traffic-go")
        pg.wait_for_selector("#traffic-result:not([hidden])", timeout=60_000)
        planner.assert_no_horizontal_scroll(pg)
        table, room = (pg.locator(s).bounding_box() for s in ("#traffic-checks-table", "#traffic"))
        assert table and room and table["x"] + table["width"] <= room["x"] + room["width"] + 0.5, (
            "the targets table is cut"
        )
        labels_apart(pg, "#traffic-chart")
        shot(pg, "traffic-phone", "#traffic")
