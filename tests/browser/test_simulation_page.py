"""The page's simulation in time, in headless Chromium: a generator's run (a rate, a closed loop)
and a trace sent as the body show the latency table and chart, the pool over time, throughput and
goodput, and the note saying which figures are exact and how far the step-time model was off;
a refusal names the control (or the trace's line) to change."""

from __future__ import annotations

import itertools
import json

import httpx
import pytest

from tests.browser import test_planner_page as planner
from tests.sim.traces import azure_csv, mooncake_jsonl

# The planner page's fixtures (one Chromium a module, a fresh page a test) and helpers.
browser, page = planner.browser, planner.page
open_page, settle, shot = planner.open_page, planner.settle, planner.shot
phone_page, assert_no_horizontal_scroll = planner.phone_page, planner.assert_no_horizontal_scroll

pytestmark = pytest.mark.server
METRICS = ["queue_ms", "ttft_ms", "tpot_ms", "itl_ms", "e2e_ms"]


def choose_pool(page, gpu: str = "h100-sxm-80gb") -> None:
    page.select_option("#model", "llama-3.1-8b")
    page.select_option("#gpu", gpu)
    settle(page)


def simulate(page, shown: str = "#sim-result") -> dict[str, object]:
    """Press Simulate; wait for `shown`. The request the page sent: its URL, headers and body."""
    with page.expect_request(
        lambda r: "/v1/simulate" in r.url and r.method == "POST" and "snapshot" not in (r.post_data or "")
    ) as sent:
        page.click("#sim-go")
    page.wait_for_selector(f"{shown}:not([hidden])", timeout=20_000)
    r = sent.value
    return {"url": r.url, "headers": r.headers, "body": r.post_data_buffer}


def fmt_ms(page, ms: float) -> str:
    return page.evaluate("(v) => fmtMs(v)", ms)


def labels_apart(page, selector: str) -> None:
    """No two texts of the chart overlap, and none runs out of it."""
    texts = page.locator(f"{selector} text")
    boxes = [(texts.nth(i).text_content(), texts.nth(i).bounding_box()) for i in range(texts.count())]
    for (ta, a), (tb, b) in itertools.combinations(boxes, 2):
        assert a and b
        apart = (a["x"] + a["width"] <= b["x"] or b["x"] + b["width"] <= a["x"]
                 or a["y"] + a["height"] <= b["y"] or b["y"] + b["height"] <= a["y"])  # fmt: skip
        assert apart, f"{ta!r} overlaps {tb!r} in {selector}"
    chart = page.locator(selector).bounding_box()
    assert chart and all(chart["x"] <= b["x"] and b["x"] + b["width"] <= chart["x"] + chart["width"] + 0.5
                         for _, b in boxes if b), f"a label runs out of {selector}"  # fmt: skip


def test_a_timed_generator_run_shows_latency_throughput_goodput_and_the_pool_over_time(page, server):
    open_page(page, server)
    choose_pool(page)
    page.select_option("#sim-source", "rate")
    assert (
        page.is_visible("#sim-rate")
        and page.is_hidden("#sim-concurrency")
        and page.is_hidden("#sim-trace-text")
    )
    page.fill("#sim-rate", "12")
    page.fill("#sim-count", "150")
    page.fill("#sim-slo-ttft", "150")
    page.fill("#sim-tokenize", "2.3")
    sent = simulate(page)
    body = json.loads(sent["body"])
    assert body["workload"]["generator"]["arrival_rate_per_s"] == 12 and body["goodput"] == {"ttft_ms": 150}
    assert body["tokenize_us_per_token"] == 2.3
    assert body["model"] == "llama-3.1-8b" and body["gpu"] == "h100-sxm-80gb" and "context_tokens" not in body
    answer = httpx.post(f"{server.url}/v1/simulate", json=body, timeout=60).json()  # what the page drew
    # The latency table: a row a latency, mean/p50/p90/p99 as the answer states them.
    rows = page.locator("#sim-latency-table tbody tr")
    assert [rows.nth(i).get_attribute("data-metric") for i in range(rows.count())] == METRICS
    for key in METRICS:
        cells = page.locator(f"#sim-latency-table tr[data-metric='{key}'] td").all_text_contents()
        d = answer["latency"][key]
        assert cells == [fmt_ms(page, d[p]) for p in ("mean", "p50", "p90", "p99")], key
    # The chart: a box and whisker a latency.
    assert page.locator("#sim-latency-chart g.whisker").count() == len(METRICS)
    # Beside the latency: the model's validation error, and what is exact and what modelled.
    note = page.locator(".sim-latency #sim-timing")
    assert answer["timing"]["validation"] in note.text_content()
    assert page.text_content("#sim-validation").startswith("The model's error: on ")
    assert page.text_content("#sim-exact").startswith("Exact as vLLM 0.33 runs it")
    assert page.text_content("#sim-modelled").startswith("Modelled: each step's duration")
    # Throughput and goodput.
    t = answer["throughput"]
    assert page.text_content("#sim-out-rps") == f"{t['requests_per_s']:.2f}"
    assert page.text_content("#sim-out-otps") == f"{round(t['output_tokens_per_s']):,}"
    g = answer["goodput"]
    assert page.is_visible("#sim-row-goodput")
    assert f"{g['requests_met']} of 150" in page.text_content("#sim-out-goodput-x")
    assert "TTFT ≤ 150.0 ms" in page.text_content("#sim-out-goodput-x")
    # The pool over time: time on x, blocks in use, running and waiting requests, each point.
    series = answer["series"]
    assert series and all("time_s" in p for p in series)
    for key in ("blocks_used", "running", "waiting"):
        line = page.locator(f"#sim-time-chart polyline[data-series='{key}']")
        assert len((line.get_attribute("points") or "").split()) == len(series)
    assert "seconds from the start of the run" in page.text_content("#sim-time-chart")
    assert page.locator("#sim-series-table tbody tr").count() == len(series)
    labels_apart(page, "#sim-latency-chart")
    labels_apart(page, "#sim-time-chart")
    shot(page, "simulation-rate", "#simulation")
    assert page.errors == []  # type: ignore[attr-defined]


def test_a_closed_loop_keeps_the_requests_in_flight_it_was_given_and_a_copied_url_keeps_it(
    page, server, browser
):
    open_page(page, server)
    choose_pool(page)
    page.select_option("#sim-source", "concurrency")
    page.fill("#sim-concurrency", "16")
    page.fill("#sim-count", "96")
    sent = simulate(page)
    generator = json.loads(sent["body"])["workload"]["generator"]
    assert generator["concurrency"] == 16 and "arrival_rate_per_s" not in generator
    assert "at most 16 in flight" in page.text_content("#sim-out-completed-x")
    assert page.text_content("#sim-out-completed") == "96 of 96"
    assert page.is_hidden("#sim-row-goodput")  # no targets, no goodput
    assert (
        "sim=concurrency" in page.url and "n=96" in page.url and "rate=" not in page.url
    )  # defaults left out
    fresh = planner.new_page(browser, viewport={"width": 1280, "height": 800})
    try:
        open_page(fresh, server, "?" + page.url.split("?", 1)[1])
        assert fresh.input_value("#sim-source") == "concurrency" and fresh.is_visible("#sim-concurrency")
        assert (fresh.input_value("#sim-concurrency"), fresh.input_value("#sim-count")) == ("16", "96")
        simulate(fresh)
        assert fresh.text_content("#sim-out-completed") == "96 of 96"
    finally:
        fresh.context.close()


def test_an_uploaded_azure_trace_runs_with_the_pool_in_the_query(page, server):
    rows = azure_csv().splitlines(keepends=True)[:301]  # the header and 300 requests
    open_page(page, server)
    choose_pool(page)
    page.select_option("#sim-source", "trace")
    assert page.is_visible("#sim-trace-file") and page.is_hidden("#sim-count")
    page.set_input_files(
        "#sim-trace-file", files=[{"name": "azure.csv", "mimeType": "text/csv", "buffer": b"".join(rows)}]
    )
    page.fill("#sim-time-scale", "0.5")
    page.fill("#sim-tokenize", "4")
    sent = simulate(page)
    assert sent["headers"]["content-type"] == "text/csv"
    for param in ("model=llama-3.1-8b", "gpu=h100-sxm-80gb", "time_scale=0.5", "tokenize_us_per_token=4"):
        assert param in sent["url"]
    assert "300 requests completed" in page.text_content("#sim-status")
    assert page.locator("#sim-latency-table tbody tr").count() == len(METRICS)
    assert page.locator("#sim-time-chart polyline[data-series='blocks_used']").count() == 1
    shot(page, "simulation-trace", "#simulation")
    assert page.errors == []  # type: ignore[attr-defined]


def test_a_pasted_mooncake_trace_runs_and_a_bad_row_is_named_by_its_line(page, server):
    lines = mooncake_jsonl().splitlines()[:200]
    open_page(page, server)
    choose_pool(page)
    page.select_option("#sim-source", "trace")
    page.fill("#sim-trace-text", b"\n".join(lines).decode())
    sent = simulate(page)
    assert sent["headers"]["content-type"] == "application/x-ndjson"
    assert "200 requests completed" in page.text_content("#sim-status")
    # A row that goes back in time: refused, the line and column named, the result gone.
    bad = (
        "TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:15:46.68,374,44\n2023-11-16 18:15:45.68,1,1\n"
    )
    page.fill("#sim-trace-text", bad)
    simulate(page, shown="#sim-error")
    text = page.text_content("#sim-error")
    assert text.startswith("The trace, line 3, column TIMESTAMP: goes back in time"), text
    assert page.is_hidden("#sim-result")
    assert page.get_attribute("#sim-trace-text", "aria-invalid") == "true"


def test_a_gpu_without_specs_is_refused_naming_the_gpu(page, server):
    open_page(page, server)
    choose_pool(page, gpu="mi300x-192gb")
    simulate(page, shown="#sim-error")
    text = page.text_content("#sim-error")
    assert text.startswith("“GPU”: GPU 'mi300x-192gb' has no specs for the step-time model"), text
    assert "h100-sxm-80gb" in text  # where timed simulations do run
    assert page.get_attribute("#sim-error", "data-field") == "gpu"
    assert page.is_hidden("#sim-result")
    shot(page, "simulation-refused", "#simulation")


def test_the_simulation_is_usable_at_a_phone_width(browser, server):
    with phone_page(browser, server) as pg:
        choose_pool(pg)
        pg.fill("#sim-count", "60")
        pg.click("#sim-go")
        pg.wait_for_selector("#sim-result:not([hidden])", timeout=20_000)
        assert_no_horizontal_scroll(pg)
        table, room = (pg.locator(s).bounding_box() for s in ("#sim-latency-table", "#simulation"))
        assert table and room and table["x"] + table["width"] <= room["x"] + room["width"] + 0.5, (
            "the latency table is cut"
        )
        labels_apart(pg, "#sim-latency-chart")
        labels_apart(pg, "#sim-time-chart")
        shot(pg, "simulation-phone", "#simulation")
        shot(pg, "simulation-phone-latency", ".sim-latency")
