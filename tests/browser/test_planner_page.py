"""The planner page in headless Chromium (Debian's; Playwright never downloads a browser).
Screenshots go to artifacts/ (git-ignored)."""

from __future__ import annotations

import itertools
import os
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from kvplan.core.engine.profiles import PROFILES

pytestmark = pytest.mark.server
playwright = pytest.importorskip("playwright.sync_api")
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
ARTIFACTS = Path(__file__).resolve().parents[2] / "artifacts"
ARGS = [
    "--headless=new",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-dev-shm-usage",
]

if not os.path.exists(CHROMIUM):
    if os.environ.get("CI"):
        pytest.fail("chromium is missing: `make test` installs it (apt-get install chromium)")
    pytest.skip("chromium is not installed (make test installs it)", allow_module_level=True)


@pytest.fixture(scope="module")
def browser() -> Iterator[object]:
    with playwright.sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        yield b
        b.close()


# What the page has still to do after a change, counted in the page before its own script runs: the
# timers it set (the inputs' debounce), and the requests it sent and the answers it reads, each
# counted until a task after it settles, so that what the page does with an answer (render it, or
# ask for the next one) is done by then. settle() waits until there is nothing left.
WATCH = """(() => {
  const setTimeout_ = window.setTimeout.bind(window), clearTimeout_ = window.clearTimeout.bind(window);
  const timers = new Set();
  let reading = 0;
  const settled = () => { setTimeout_(() => { reading -= 1; }, 0); };
  const read = (promise) => { reading += 1; promise.then(settled, settled); return promise; };
  window.setTimeout = (handler, ms, ...args) => {
    if (typeof handler !== "function") return setTimeout_(handler, ms, ...args);
    const id = setTimeout_((...a) => { timers.delete(id); handler(...a); }, ms, ...args);
    timers.add(id);
    return id;
  };
  window.clearTimeout = (id) => { timers.delete(id); clearTimeout_(id); };
  const fetch_ = window.fetch.bind(window);
  window.fetch = (...args) => read(fetch_(...args));
  for (const name of ["json", "text", "arrayBuffer", "blob"]) {
    const body = Response.prototype[name];
    Response.prototype[name] = function () { return read(body.call(this)); };
  }
  window.kvplanTestIdle = () => timers.size === 0 && reading === 0;
})()"""


def new_page(browser, **options):  # type: ignore[no-untyped-def]
    """A page in a browser context of its own (`options`: its viewport and the like), watched (WATCH)."""
    ctx = browser.new_context(**options)
    ctx.add_init_script(WATCH)
    return ctx.new_page()


@pytest.fixture
def page(browser, server):
    pg = new_page(browser, viewport={"width": 1280, "height": 800})
    pg.requests = []  # type: ignore[attr-defined]
    pg.errors = []  # type: ignore[attr-defined]
    pg.on("request", lambda r: pg.requests.append(r.url))
    pg.on("pageerror", lambda e: pg.errors.append(str(e)))
    yield pg
    pg.context.close()


def open_page(page, server, query: str = "") -> None:
    page.goto(f"{server.url}/{query}")
    page.wait_for_selector("body[data-ready='1']", timeout=20_000)


def open_preset(page, server, group: str) -> None:
    """The page with one of the seed's groups (A, B or C) loaded and its answers shown."""
    open_page(page, server)
    page.click(f"#preset-{group}")
    settle(page)


def settle(page) -> None:
    """Wait for the answers to a change: its debounced update sent, and every answer the page asked
    for read and dealt with (WATCH: nothing left to do)."""
    page.wait_for_function("window.kvplanTestIdle()", timeout=20_000)


def shot(page, name: str, selector: str | None = None) -> None:
    """The whole page, or only the element `selector` names."""
    ARTIFACTS.mkdir(exist_ok=True)
    path = str(ARTIFACTS / f"{name}.png")
    if selector:
        page.locator(selector).screenshot(path=path)
    else:
        page.screenshot(path=path, full_page=True)


# Where the budget view shows the answer's warnings: notices above the figures, notes beside them
# or under them.
BUDGET_MESSAGES = "#warning [data-code], #readouts .figures [data-code], #notes [data-code]"


def test_preset_a_shows_880_blocks_and_6(page, server):
    open_preset(page, server, "A")
    assert page.text_content("#out-blocks") == "880"
    assert page.text_content("#out-concurrency") == "6"
    assert "6.8672" in page.text_content("#out-concurrency-x")
    assert page.is_hidden("#warning")
    shot(page, "preset-a")


def test_preset_b_shows_24(page, server):
    open_preset(page, server, "B")
    assert page.text_content("#out-concurrency") == "24"
    assert page.is_disabled("#Hkv")  # MLA: one latent
    shot(page, "preset-b")


def test_preset_c_shows_0_with_the_warning_visible(page, server):
    open_preset(page, server, "C")
    assert page.text_content("#out-concurrency") == "0"
    assert page.is_visible("#warning")
    assert "56,256" in page.text_content("#warning")
    shot(page, "preset-c")


def test_moving_t_to_131072_on_a_gives_cs_answer(page, server):
    open_preset(page, server, "A")
    page.fill("#T", "131072")
    settle(page)
    assert page.text_content("#out-concurrency") == "0"
    assert page.is_visible("#warning")
    assert page.text_content("#out-blocks") == "880"


def test_a_copied_url_restores_the_same_view(page, server, browser):
    open_preset(page, server, "B")
    page.click("#stage-2")
    page.click("#ledger-toggle")
    settle(page)
    url = page.url
    fresh = new_page(browser, viewport={"width": 1280, "height": 800})
    fresh.goto(url)
    fresh.wait_for_selector("body[data-ready='1']", timeout=20_000)
    settle(fresh)
    for sel in ("#L", "#D", "#T", "#mem", "#weights", "#f"):
        assert fresh.input_value(sel) == page.input_value(sel)
    assert fresh.text_content("#out-concurrency") == "24"
    assert fresh.get_attribute("#stage-2", "aria-pressed") == "true"
    assert fresh.is_visible("#ledger table")
    shot(fresh, "restored-from-url")
    fresh.context.close()


def test_the_block_table_shows_the_shared_prefix_and_the_free_queue(page, server):
    open_page(page, server)
    assert "2, 2" in page.text_content("#ref-cnt")
    page.click("#stage-1")
    assert "1, 1" in page.text_content("#ref-cnt")
    page.click("#stage-2")
    assert "0, 0" in page.text_content("#ref-cnt")
    cells = page.locator("#free-queue .blk").all_text_contents()
    assert cells[-2:] == ["2", "1"]  # the shared prefix waits at the tail, evicted last
    shot(page, "block-table")


def test_the_page_names_the_dominant_factor_and_draws_the_sweep(page, server):
    open_page(page, server)
    settle(page)
    assert page.locator(".bar.top").count() == 1
    assert "dominates" in page.text_content(".bar.top")
    assert page.locator("#chart circle").count() >= 4  # one a context length up to the model's 8,192


def test_pickers_come_from_the_api(page, server):
    open_page(page, server)
    assert page.locator("#model option[value='deepseek-v3']").count() == 1
    assert page.locator("#gpu option[value='h100-sxm-80gb']").count() == 1
    assert page.locator("#engine option").count() == len(PROFILES)
    page.select_option("#model", "llama-3.1-8b")
    page.select_option("#gpu", "h100-sxm-80gb")
    settle(page)
    assert page.input_value("#L") == "32"
    assert int(page.text_content("#out-concurrency").replace(",", "")) > 0


def test_every_control_has_a_label_and_the_page_works_by_keyboard(page, server):
    open_page(page, server)
    for control in page.locator("input, select").all():
        cid = control.get_attribute("id")
        assert cid and (
            page.locator(f"label[for='{cid}']").count() == 1 or control.get_attribute("aria-label")
        )
    page.focus("#preset-C")
    page.keyboard.press("Enter")
    settle(page)
    assert page.text_content("#out-concurrency") == "0"
    page.focus("#T")
    page.keyboard.press("Control+A")
    page.keyboard.type("8192")
    settle(page)
    assert page.text_content("#out-concurrency") == "6"


PHONE_WIDTH = 390


@contextmanager
def phone_page(browser, server) -> Iterator:
    """The page opened at a phone's width (390 CSS px, 2× pixels, touch), closed after."""
    pg = new_page(
        browser, viewport={"width": PHONE_WIDTH, "height": 844}, device_scale_factor=2, is_mobile=True
    )
    try:
        open_page(pg, server)
        yield pg
    finally:
        pg.context.close()


def assert_no_horizontal_scroll(pg) -> None:
    width = pg.evaluate("document.documentElement.scrollWidth")
    assert width <= PHONE_WIDTH + 1, f"horizontal scroll at phone width: {width}px"


def test_usable_at_a_phone_width(browser, server):
    with phone_page(browser, server) as pg:
        settle(pg)
        assert pg.text_content("#out-concurrency") == "6"
        assert_no_horizontal_scroll(pg)
        shot(pg, "phone")


def test_no_request_leaves_the_origin(page, server):
    open_page(page, server)
    page.click("#preset-B")
    page.click("#ledger-toggle")
    settle(page)
    assert page.requests and all(u.startswith(server.url) or u.startswith("data:") for u in page.requests)
    assert page.errors == []


def test_readouts_show_the_unrounded_value_beside_the_floor(page, server):
    open_preset(page, server, "A")
    assert "unrounded 880.64" in page.text_content("#out-blocks-x")
    assert "8.0× smaller than the MHA form" in page.text_content("#out-per-token-x")


def test_a_hybrid_model_lists_its_kv_groups_and_what_each_charges(page, server):
    open_page(page, server)
    assert page.is_hidden("#groups-row")
    page.select_option("#model", "command-r7b")
    page.select_option("#gpu", "h100-sxm-80gb")
    settle(page)
    groups = page.locator("#out-groups li").all_text_contents()
    assert any(g.startswith("3 × sliding attention · 24 layers") and "(the window)" in g for g in groups)
    assert any(g.startswith("1 × full attention · 8 layers") for g in groups)
    assert page.is_visible("#groups-row")


@pytest.fixture(scope="module")
def hub_server(tmp_path_factory):
    """A server reading Hub models from a Hub-compatible server on loopback."""
    from tests.hub.fakehub import NO_PROXIES, serve_hub
    from tests.hub.repos import ALL_REPOS
    from tests.live import start_server

    home = tmp_path_factory.mktemp("hf-home")
    with serve_hub(ALL_REPOS) as hub:
        env = {**NO_PROXIES, "HF_ENDPOINT": hub.url, "HF_HOME": str(home), "HF_HUB_CACHE": str(home / "hub"),
               "HF_TOKEN": "", "HF_HUB_DISABLE_IMPLICIT_TOKEN": "1", "HF_HUB_OFFLINE": "0"}  # fmt: skip
        s = start_server(env=env)
        yield s
        s.stop()


def test_a_hub_id_typed_in_resolves_and_becomes_the_model(browser, hub_server):
    from tests.hub.repos import QWEN3_8B_BASE

    page = new_page(browser, viewport={"width": 1280, "height": 800})
    try:
        open_page(page, hub_server)
        page.fill("#hub-id", "Qwen/Qwen3-8B-Base")
        page.press("#hub-id", "Enter")
        page.wait_for_function("document.querySelector('#hub-status').textContent.includes('commit')")
        assert f"commit {QWEN3_8B_BASE.sha[:12]}" in page.text_content("#hub-status")
        settle(page)
        assert page.input_value("#model") == "Qwen/Qwen3-8B-Base"
        assert page.input_value("#L") == "36"
        assert int(page.text_content("#out-concurrency").replace(",", "")) > 0
        page.fill("#hub-id", "kvplan-test/does-not-exist")
        page.press("#hub-id", "Enter")
        page.wait_for_function("document.querySelector('#hub-status').textContent.includes('no model')")
    finally:
        page.context.close()


def test_a_pasted_log_shows_the_side_by_side_as_text(page, server):
    from pathlib import Path

    log = (Path(__file__).parents[1] / "reconcile" / "data" / "engine-0.33-tp2.log").read_text()
    log = log.replace("meta-llama/Llama-3.1-70B-Instruct", "<img src=x onerror=alert(1)>")
    open_page(page, server)
    page.fill("#reconcile-log", log)
    page.fill("#reconcile-model", "llama-3.1-70b")
    page.click("#reconcile-go")
    page.wait_for_selector("#reconcile-table:not([hidden])", timeout=10_000)
    rows = page.locator("#reconcile-table tbody tr")
    figures = [rows.nth(i).locator("td").first.text_content() for i in range(rows.count())]
    assert "gpu_kv_cache_tokens" in figures
    tokens = page.locator("#reconcile-table tbody tr", has_text="gpu_kv_cache_tokens")
    assert "exact" in tokens.text_content()
    assert "memory besides weights the engine saw" in page.text_content("#reconcile-notes")
    assert "non_kv_bytes" not in page.text_content("#reconcile-notes")  # the page's words, not the API's
    assert page.locator("#incident img").count() == 0  # nothing from the log becomes HTML
    shot(page, "incident-review")
    assert not page.errors  # type: ignore[attr-defined]


def test_every_warning_the_api_returns_is_on_the_page_with_the_memory_estimate(page, server):
    open_page(page, server)
    page.select_option("#model", "deepseek-v3")
    settle(page)
    page.select_option("#gpu", "h200-141gb")
    page.select_option("#tp", "8")
    page.select_option("#nonkv", "")  # estimated, as vLLM profiles it
    page.fill("#weights", "")
    settle(page)
    body = {"model": "deepseek-v3", "gpu": "h200-141gb", "tensor_parallel_size": 8,
            "gpu_memory_utilization": float(page.input_value("#util")),
            "context_tokens": int(page.input_value("#T")), "kv_cache_dtype": page.input_value("#b"),
            "engine": page.input_value("#engine")}  # fmt: skip
    import httpx

    warnings = httpx.post(f"{server.url}/v1/budget", json=body).json()["warnings"]
    shown = {
        el.get_attribute("data-code"): el.get_attribute("data-severity")
        for el in page.locator(BUDGET_MESSAGES).all()
    }
    assert warnings and shown == {w["code"]: w["severity"] for w in warnings}
    assert "mla_replicated_under_tp" in shown and "non_kv_estimated" in shown
    # Info beside the figure it explains, never in the notices box.
    assert page.locator("#row-nonkv [data-code='non_kv_estimated']").count() == 1
    assert page.locator("#row-per-token [data-code='mla_replicated_under_tp']").count() == 1
    assert page.locator("#warning [data-severity='info']").count() == 0
    assert "estimated" in page.text_content("#out-nonkv")


@pytest.mark.parametrize(("width", "height"), [(1440, 900), (390, 844)])
def test_the_chart_has_labelled_axes_from_zero_and_labels_that_do_not_overlap(browser, server, width, height):
    pg = new_page(browser, viewport={"width": width, "height": height})
    try:
        open_page(pg, server)
        pg.click("#preset-A")
        pg.select_option("#model", "llama-3.1-8b")  # 128K of context: many points
        settle(pg)
        labels = [pg.locator("#chart .axis-label").nth(i).text_content() for i in range(2)]
        assert "context tokens" in labels[0] and "concurrent requests" in labels[1]
        ticks = pg.locator("#chart text.tick")
        assert "0" in [ticks.nth(i).text_content() for i in range(ticks.count())]  # the y axis starts at zero
        assert pg.locator("#chart .grid").count() >= 2
        assert pg.locator("#chart .now-label").text_content().startswith("T = ")
        texts = pg.locator("#chart text")
        boxes = [(texts.nth(i).text_content(), texts.nth(i).bounding_box()) for i in range(texts.count())]
        assert {"guaranteed", "vLLM would log"} <= {t for t, _ in boxes}, [t for t, _ in boxes]
        for (ta, a), (tb, b) in itertools.combinations(boxes, 2):  # ticks, axis labels, legend, T
            assert a and b
            apart = (a["x"] + a["width"] <= b["x"] or b["x"] + b["width"] <= a["x"]
                     or a["y"] + a["height"] <= b["y"] or b["y"] + b["height"] <= a["y"])  # fmt: skip
            assert apart, f"{ta!r} overlaps {tb!r} at {width} px"
        chart = pg.locator("#chart").bounding_box()
        assert chart and all(chart["x"] <= b["x"] and b["x"] + b["width"] <= chart["x"] + chart["width"] + 0.5
                             for _, b in boxes if b), "a label runs out of the chart"  # fmt: skip
        assert pg.locator("#chart-table tbody tr").count() == pg.locator("#chart circle").count()
        shot(pg, f"chart-{width}")
    finally:
        pg.context.close()


def race(page, url: str, slow: tuple[str, str], fast: tuple[str, str], shown: str) -> None:
    """Send a slow request (held back) then a fast one; let the slow one answer last. The page must
    still show the fast one's answer: `shown` is a JS condition that holds once it does."""
    held: list[object] = []

    def hold_the_first(route):  # type: ignore[no-untyped-def]
        if route.request.method == "POST" and not held:
            held.append(route)  # answered later, after the newer one
        else:
            route.continue_()

    page.route(url, hold_the_first)
    page.fill(*slow)
    page.wait_for_timeout(500)
    assert held, f"the first request to {url} was not intercepted"
    page.fill(*fast)
    page.wait_for_function(shown)
    held[0].continue_()  # type: ignore[attr-defined]
    page.wait_for_timeout(800)
    assert page.evaluate(shown)


def test_a_slow_answer_never_overwrites_a_newer_one(page, server):
    """The first request is held back until the second has answered; the page keeps the second."""
    open_preset(page, server, "A")
    race(page, "**/v1/budget", ("#T", "4096"), ("#T", "2048"),
         "document.querySelector('#out-vllm').textContent.includes('2,048 tokens per request')")  # fmt: skip


def test_the_preset_in_use_is_pressed_and_stops_being_when_an_input_changes(page, server):
    open_page(page, server)
    settle(page)
    pressed = {k: page.get_attribute(f"#preset-{k}", "aria-pressed") for k in "ABC"}
    assert pressed == {"A": "true", "B": "false", "C": "false"}
    page.click("#preset-C")
    settle(page)
    assert page.get_attribute("#preset-C", "aria-pressed") == "true"
    page.select_option("#model", "llama-3.1-8b")
    settle(page)
    assert [page.get_attribute(f"#preset-{k}", "aria-pressed") for k in "ABC"] == ["false"] * 3


def test_pipeline_parallel_and_tp_16_are_offered_and_the_slider_keeps_whole_k(page, server):
    open_page(page, server)
    settle(page)
    assert "16" in page.locator("#tp option").all_text_contents()
    page.select_option("#pp", "2")
    settle(page)
    assert page.text_content("#out-concurrency") != ""
    page.fill("#T", "32768")
    page.dispatch_event("#T", "input")
    page.focus("#Trange")
    page.keyboard.press("ArrowRight")
    settle(page)
    assert int(page.input_value("#T")) % 1024 == 0 and int(page.input_value("#T")) > 32768


def test_the_block_table_follows_the_block_size_and_the_figures_are_explained(page, server):
    open_page(page, server)
    settle(page)
    page.select_option("#bs", "32")
    settle(page)
    page.wait_for_function("document.querySelector('#story-block-size').textContent === '32'")
    assert page.locator("#blocktable .blk").count() > 0
    assert page.locator(".legend-chips li").count() == 3
    page.click("#glossary summary")
    assert "null block" in page.text_content("#glossary")


def open_llama_3_70b_on_h100(page, server) -> None:  # type: ignore[no-untyped-def]
    """Llama-3-70B on one H100 node, weights from its parameters: TP 1 does not fit."""
    open_page(page, server)
    page.select_option("#model", "llama-3-70b")
    settle(page)
    page.select_option("#gpu", "h100-sxm-80gb")
    page.fill("#weights", "")
    settle(page)
    page.wait_for_selector("#fleet-table:not([hidden])")


def test_the_fleet_view_lists_each_layout_of_a_node_with_why_not(page, server):
    open_llama_3_70b_on_h100(page, server)
    first = page.locator("#fleet-table tbody").first.get_attribute("data-gpu")
    assert first == "h100-sxm-80gb"  # the chosen GPU leads
    rows = page.locator("#fleet-table tbody[data-gpu='h100-sxm-80gb'] tr[data-layout]")
    by_layout = {rows.nth(i).locator("td").first.text_content(): rows.nth(i) for i in range(rows.count())}
    assert "no" in by_layout["TP1"].text_content() and "KV" in by_layout["TP1"].text_content()
    assert by_layout["TP8"].locator("td").nth(1).text_content() == "yes"
    assert page.locator("#fleet-table tbody[data-gpu='h100-sxm-80gb'] tr[data-best]").count() == 1
    shot(page, "fleet-view")


# The focused element's id; the chart's values summary by a name of its own.
FOCUSED_ID = """(() => {
  const el = document.activeElement;
  if (el.tagName === "SUMMARY" && el.parentElement.id === "chart-values") return "chart-values-summary";
  return el.id || "";
})()"""


def test_tab_alone_reaches_every_control_and_the_charts_values(page, server):
    """Every visible control of every view (inputs, the fleet, the ledger, the block table, the
    incident form, the chart's values) is reached by Tab alone, in one pass."""
    open_page(page, server)
    settle(page)
    page.wait_for_selector("#fleet-table:not([hidden])")
    count = page.evaluate("""(() => {
        const all = [...document.querySelectorAll('input, select, button, textarea, summary, a[href]')]
            .filter((el) => el.checkVisibility({ checkVisibilityCSS: true }) && !el.disabled);
        all.forEach((el, i) => { el.dataset.kb = String(i); });
        return all.length; })()""")
    assert count > 40
    reached: set[str] = set()
    page.focus("#preset-A")
    reached.add(page.evaluate("document.activeElement.dataset.kb"))
    for _ in range(count + 60):
        page.keyboard.press("Tab")
        kb = page.evaluate("document.activeElement.dataset.kb")
        if kb is not None:
            reached.add(kb)
        if len(reached) >= count:
            break
    missed = page.evaluate(
        "(seen) => [...document.querySelectorAll('[data-kb]')].filter((el) => !seen.includes(el.dataset.kb))"
        ".map((el) => el.id || el.outerHTML.slice(0, 60))",
        sorted(reached),
    )
    assert missed == []
    page.focus("#chart-values summary")
    page.keyboard.press("Enter")
    assert page.locator("#chart-table tbody tr").first.is_visible()


def test_preset_b_is_one_card_of_tp_8_and_flags_the_pooled_192(page, server):
    open_preset(page, server, "B")
    assert page.text_content("#out-concurrency") == "24"
    flagged = page.locator("#warning p[data-code='pooled_not_deployable']")
    assert flagged.count() == 1 and "192" in flagged.text_content()


def test_the_fleet_view_agrees_with_the_budget_for_preset_a(page, server):
    open_preset(page, server, "A")
    page.wait_for_selector("#fleet-table:not([hidden])")
    tp1 = page.locator("#fleet-table tbody[data-gpu='pool-160gib'] tr[data-layout='TP1']")
    assert tp1.locator("td").nth(3).text_content() == page.text_content("#out-concurrency") == "6"


# -- the fleet view: GPU types × layouts and the cheapest mix, every figure the API's ----------------


def fleet_request(server, page, target: int, costs: dict[str, float] | None = None) -> dict:
    """The POST /v1/fleet the page's inputs stand for, built here from them, not read off the page:
    the chosen GPU first, then every real GPU type, one node of 8 each, cost 1 unless given."""
    import httpx

    real = [g["id"] for g in httpx.get(f"{server.url}/v1/gpus").json()["gpus"] if g["vendor"] != "abstract"]
    chosen = page.input_value("#gpu")
    order = [chosen, *(g for g in real if g != chosen)] if chosen else real
    # The weights input is one GPU's share of the chosen layout: the model's are TP × PP of it.
    weights = page.input_value("#weights")
    gpus = int(page.input_value("#tp")) * int(page.input_value("#pp"))
    return {
        "model": page.input_value("#model"),
        "workload": {"context_tokens": int(page.input_value("#T"))},
        "fleet": [{"gpu": g, "count": 8, "cost_per_hour": (costs or {}).get(g, 1)} for g in order],
        "target_concurrency": target,
        "gpu_memory_utilization": float(page.input_value("#util")),
        "kv_cache_dtype": page.input_value("#b"),
        "engine": page.input_value("#engine"),
        **({"weights_bytes": round(float(weights) * 2**30) * gpus} if weights else {}),
        **({"non_kv_bytes": 0} if page.input_value("#nonkv") == "0" else {}),
    }


def shown_mix(page) -> tuple[list[list[str]], str, str]:
    rows = page.locator("#mix-table tbody tr")
    parts = [rows.nth(i).locator("td").all_text_contents() for i in range(rows.count())]
    return parts, page.text_content("#mix-concurrency"), page.text_content("#mix-cost")


def api_mix(answer: dict) -> tuple[list[list[str]], str, str]:
    m = answer["cheapest_mix"]
    parts = [[p["gpu"], p["layout"], f"{p['replicas']:,}", f"{p['gpus']:,}", f"{p['concurrency']:,}",
              f"{p['cost_per_hour']:,.2f}"] for p in m["parts"]]  # fmt: skip
    return parts, f"{m['concurrency']:,}", f"{m['cost_per_hour']:,.2f}"


def set_target(page, n: int) -> None:
    page.fill("#fleet-target", str(n))
    page.wait_for_function(f"document.querySelector('#mix-target').textContent === '{n:,}'")
    settle(page)


def test_the_cheapest_mix_shown_is_what_the_api_answers_for_the_same_inputs(page, server):
    import httpx

    open_preset(page, server, "A")
    page.click("#fleet-types summary")
    costs = {"mi325x-256gb": 9.5, "mi300x-192gb": 6.0, "b200-180gb": 7.25}
    for gpu, cost in costs.items():
        page.fill(f"#fleet-cost-{gpu}", str(cost))
    set_target(page, 2500)
    answer = httpx.post(f"{server.url}/v1/fleet", json=fleet_request(server, page, 2500, costs)).json()
    assert shown_mix(page) == api_mix(answer)
    assert len(answer["cheapest_mix"]["parts"]) >= 2  # a mix of types, not one
    assert f"{answer['total_concurrency']:,} concurrent requests" in page.text_content("#mix-how")
    codes = {w["code"] for w in answer.get("warnings", ())}
    shown = {p.get_attribute("data-code") for p in page.locator("#fleet-mix [data-code]").all()}
    assert shown == codes  # the answer's warnings, beside the mix
    assert page.errors == []  # type: ignore[attr-defined]


def test_changing_the_target_changes_the_mix_with_one_fleet_request(page, server):
    import httpx

    open_preset(page, server, "A")
    set_target(page, 100)
    small = shown_mix(page)
    before = len(page.requests)  # type: ignore[attr-defined]
    set_target(page, 3000)
    large = shown_mix(page)
    sent = [u for u in page.requests[before:] if "/v1/" in u]  # type: ignore[attr-defined]
    assert [u.split("?")[0].removeprefix(server.url) for u in sent] == ["/v1/fleet"]  # the fleet alone
    assert small != large
    answer = httpx.post(f"{server.url}/v1/fleet", json=fleet_request(server, page, 3000)).json()
    assert large == api_mix(answer)
    assert "target=3000" in page.url


def test_an_infeasible_layout_shows_the_apis_reason(page, server):
    import httpx

    open_llama_3_70b_on_h100(page, server)
    answer = httpx.post(f"{server.url}/v1/fleet", json=fleet_request(server, page, 100)).json()
    infeasible = [(t["gpu"], lay) for t in answer["gpu_types"] for lay in t["layouts"] if not lay["feasible"]]
    assert infeasible
    for gpu, lay in infeasible:
        row = page.locator(f"#fleet-table tbody[data-gpu='{gpu}'] tr[data-layout='{lay['name']}']")
        cells = row.locator("td").all_text_contents()
        assert cells[1] == "no" and cells[-1] == lay["reason"]
        assert row.get_attribute("data-reason") == lay["reason_code"]
    l4 = page.locator("#fleet-table tbody[data-gpu='l4-24gb'] tr[data-layout='TP1'] td").last
    assert "leave no KV budget" in l4.text_content()
    # A type neither chosen nor in the mix shows its line; its layouts open from it, by keyboard.
    assert page.is_visible("#fleet-table tbody[data-gpu='h100-sxm-80gb'] tr[data-layout='TP1']")
    assert not l4.is_visible()
    page.focus("#fleet-table tbody[data-gpu='l4-24gb'] button.fleet-type")
    page.keyboard.press("Enter")
    assert l4.is_visible()


def test_the_pooled_memory_trap_is_explained_where_the_api_gives_a_pooled_figure_that_differs(page, server):
    import httpx

    open_page(page, server)
    page.click("#preset-B")  # DeepSeek-V3, MLA: every GPU of TP 8 keeps the whole latent
    settle(page)
    page.wait_for_selector("#fleet-table:not([hidden])")
    answer = httpx.post(f"{server.url}/v1/fleet", json=fleet_request(server, page, 100)).json()
    layouts = [(t["gpu"], lay) for t in answer["gpu_types"] for lay in t["layouts"] if lay["feasible"]]
    pooled = {(gpu, lay["name"]): lay for gpu, lay in layouts
              if lay.get("pooled_concurrency") not in (None, lay["concurrency_per_replica"])}  # fmt: skip
    tp8 = pooled[("pool-141gib", "TP8")]
    assert (tp8["concurrency_per_replica"], tp8["pooled_concurrency"]) == (24, 192)  # the seed's group B
    marked = {(r.locator("xpath=..").get_attribute("data-gpu"), r.get_attribute("data-layout"))
              for r in page.locator("#fleet-table tr[data-pooled]").all()}  # fmt: skip
    assert marked == set(pooled)  # the note where the pooled figure differs, nowhere else
    row = page.locator("#fleet-table tbody[data-gpu='pool-141gib'] tr[data-layout='TP8'] td")
    assert row.nth(3).text_content() == "24" and "pooled: 192" in row.last.text_content()
    assert page.is_visible("#fleet-pooled-note") and "own KV cache" in page.text_content("#fleet-pooled-note")
    shown = {p.get_attribute("data-code") for p in page.locator("#fleet-warnings p").all()}
    assert (
        "pooled_not_deployable" in {w["code"] for w in answer["warnings"]}
        and "pooled_not_deployable" in shown
    )


def test_a_slow_fleet_answer_never_overwrites_a_newer_one(page, server):
    open_preset(page, server, "A")
    # 100, the default target, is already shown: 3000 is held back, 700 answers first.
    race(page, "**/v1/fleet", ("#fleet-target", "3000"), ("#fleet-target", "700"),
         "document.querySelector('#mix-target').textContent === '700'")  # fmt: skip


def test_a_copied_url_restores_the_fleet(page, server, browser):
    open_preset(page, server, "A")
    page.click("#fleet-types summary")
    page.uncheck("#fleet-use-l4-24gb")
    page.fill("#fleet-count-h200-141gb", "16")
    page.fill("#fleet-cost-h200-141gb", "3.5")
    set_target(page, 700)
    fresh = new_page(browser, viewport={"width": 1280, "height": 800})
    fresh.goto(page.url)
    fresh.wait_for_selector("body[data-ready='1']", timeout=20_000)
    settle(fresh)
    assert fresh.input_value("#fleet-target") == "700"
    assert not fresh.is_checked("#fleet-use-l4-24gb") and fresh.is_checked("#fleet-use-h200-141gb")
    h200 = (fresh.input_value("#fleet-count-h200-141gb"), fresh.input_value("#fleet-cost-h200-141gb"))
    assert h200 == ("16", "3.5")
    assert shown_mix(fresh) == shown_mix(page)
    assert fresh.locator("#fleet-table tbody[data-gpu='l4-24gb']").count() == 0
    fresh.context.close()


@pytest.mark.parametrize(("width", "height"), [(1440, 900), (390, 844)])
def test_the_fleet_view_is_legible_at_desktop_and_phone_widths(browser, server, width, height):
    pg = new_page(browser, viewport={"width": width, "height": height}, device_scale_factor=1)
    try:
        open_preset(pg, server, "B")
        pg.click("#fleet-types summary")
        pg.fill("#fleet-cost-h200-141gb", "3.5")
        set_target(pg, 5000)
        assert pg.evaluate("document.documentElement.scrollWidth") <= width + 1
        for sel in ("#fleet-mix-box", "#fleet-table", "#fleet-pooled-note", "#fleet-warnings"):
            assert pg.is_visible(sel), sel
        # Nothing cut or hidden sideways: no cell wider than its box, no table wider than the view.
        clipped = pg.evaluate("""[...document.querySelectorAll('#fleet td, #fleet th, #fleet .table-scroll')]
            .filter((el) => el.scrollWidth > el.clientWidth + 1).map((el) => el.textContent.slice(0, 40))""")
        assert clipped == []
        shot(pg, f"fleet-inputs-{width}", "#fleet .fleet-inputs")
        pg.click("#fleet-types summary")  # closed, as the page opens: the mix right under the target
        shot(pg, f"fleet-{width}", "#fleet")
        shot(pg, f"fleet-page-{width}")
    finally:
        pg.context.close()


VIEWS = {  # each view of the page, by the element that holds it
    "results": "#readouts",
    "factors": "#dominance",
    "chart": "#chart",
    "ledger": "#ledger",
    "blocks": "#blocktable",
    "incident": "#incident",
    "command": "#command-form",
}
# The command box's flag table with rows of each effect, two not modelled with their notes.
VIEW_COMMAND = (
    "vllm serve deepseek-v3 -tp 8 --max-model-len 32k --enable-lora --port 8000 "
    """--speculative-config '{"method": "deepseek_mtp", "num_speculative_tokens": 1}'"""
)


@pytest.mark.parametrize(("width", "height"), [(1440, 900), (390, 844)])
def test_every_view_at_desktop_and_phone_width_is_whole_and_shot(browser, server, width, height):
    """No view is wider than the screen and no table cell cuts its text (the ledger's source column
    was clipped); a screenshot of each view for a person to look at."""
    from pathlib import Path

    pg = new_page(browser, viewport={"width": width, "height": height}, device_scale_factor=1)
    try:
        open_preset(pg, server, "B")
        pg.fill("#command", VIEW_COMMAND)
        pg.click("#command-go")
        pg.wait_for_selector("#command-flags:not([hidden])", timeout=10_000)
        pg.click("#ledger-toggle")
        pg.wait_for_selector("#ledger table")
        log = (Path(__file__).parents[1] / "reconcile" / "data" / "engine-0.33-tp2.log").read_text()
        pg.fill("#reconcile-log", log)
        pg.fill("#reconcile-model", "llama-3.1-70b")
        pg.click("#reconcile-go")
        pg.wait_for_selector("#reconcile-table:not([hidden])", timeout=10_000)
        assert pg.evaluate("document.documentElement.scrollWidth") <= width + 1
        for name, sel in VIEWS.items():
            box = pg.locator(sel).first.bounding_box()
            assert box and box["x"] >= 0 and box["x"] + box["width"] <= width + 1, (
                f"{name} is wider than the view"
            )
            shot(pg, f"view-{name}-{width}", sel)
        scrolls = pg.evaluate("""[...document.querySelectorAll(
            '#ledger, #incident, #readouts, .table-scroll')]
            .filter((el) => el.offsetParent && el.scrollWidth > el.clientWidth + 1)
            .map((el) => (el.id || el.firstElementChild?.id) + ': ' + el.scrollWidth)""")
        assert scrolls == []  # nothing to scroll sideways to: the ledger's columns all in view
        clipped = pg.evaluate("""[...document.querySelectorAll('td, th')]
            .filter((el) => el.offsetParent && el.scrollWidth > el.clientWidth + 1)
            .map((el) => el.closest('[id]').id + ': ' + el.textContent.slice(0, 40))""")
        assert clipped == []
    finally:
        pg.context.close()


# -- issue 31: the page speaks by severity, in its own words, with the figures the plan used ---------

# The page's default question: llama-3.1-8b on an H100, weights from its parameters, vLLM's other
# memory estimated (every default answer carries the info `non_kv_estimated`).
DEFAULT_BUDGET = "?model=llama-3.1-8b&gpu=h100-sxm-80gb&nonkv=&weights=&T=8192&tp=1&pp=1&b=bfloat16&util=0.92"
ENGINE_LOG = Path(__file__).parents[1] / "reconcile" / "data" / "engine-0.33-tp2.log"

# Visible elements drawn in red (text, background, border, SVG paint): red is for errors only.
RED_ELEMENTS = """(() => {
  const red = (c) => {
    const m = /rgba?\\(([\\d.]+),\\s*([\\d.]+),\\s*([\\d.]+)(?:,\\s*([\\d.]+))?\\)/.exec(c || "");
    if (!m || (m[4] !== undefined && Number(m[4]) < 0.1)) return false;
    const [r, g, b] = [m[1], m[2], m[3]].map(Number);
    const max = Math.max(r, g, b), min = Math.min(r, g, b), d = max - min;
    if (d < 40) return false;  // a grey
    let h = max === r ? ((g - b) / d) % 6 : max === g ? (b - r) / d + 2 : (r - g) / d + 4;
    h = (h * 60 + 360) % 360;
    return (h < 15 || h > 340) && (max + min) / 510 < 0.97;
  };
  const out = [];
  for (const el of document.querySelectorAll("body *")) {
    if (!el.checkVisibility({ checkVisibilityCSS: true })) continue;
    const s = getComputedStyle(el);
    const ownText = [...el.childNodes].some((n) => n.nodeType === 3 && n.textContent.trim());
    const paint = [["background", s.backgroundColor]];
    if (ownText) paint.push(["color", s.color]);
    for (const side of ["Top", "Right", "Bottom", "Left"]) {
      if (parseFloat(s["border" + side + "Width"]) > 0) paint.push(["border", s["border" + side + "Color"]]);
    }
    if (el instanceof SVGElement) paint.push(["fill", s.fill], ["stroke", s.stroke]);
    const name = el.id || el.className.baseVal || el.className || el.tagName;
    for (const [what, c] of paint) if (red(c)) out.push(name + " " + what + " " + c);
  }
  return out;
})()"""


def test_the_default_budget_shows_no_red_and_no_alarm(browser, server):
    for width in (1440, 390):
        pg = new_page(browser, viewport={"width": width, "height": 900})
        try:
            open_page(pg, server, DEFAULT_BUDGET)
            settle(pg)
            pg.wait_for_selector("#fleet-table:not([hidden])")
            assert pg.text_content("#out-concurrency") == "54"
            assert pg.is_hidden("#error") and pg.is_hidden("#warning")  # no box above the figures
            assert [el for el in pg.locator("[role='alert']").all() if el.is_visible()] == []
            note = pg.locator("#row-nonkv [data-code='non_kv_estimated']")  # a quiet note, beside its figure
            assert note.count() == 1 and note.get_attribute("data-severity") == "info"
            assert pg.evaluate(RED_ELEMENTS) == [], f"red on the default budget at {width} px"
        finally:
            pg.context.close()


def shown_messages(page) -> list[tuple[str | None, str]]:
    """Every message the page shows: the answers' warnings (code, text), errors, the incident's
    notes and the fleet's reasons (no code)."""
    coded = page.locator("[data-code]").all()
    out = [(el.get_attribute("data-code"), el.text_content() or "") for el in coded if el.is_visible()]
    texts = ("#error", "#reconcile-error", "#reconcile-notes li",
             "#fleet-table tr[data-layout] td:last-child",
             "#fleet-status", "#reconcile-status", "#out-concurrency-x", "#out-maxctx-x")  # fmt: skip
    for sel in texts:
        out += [(None, el.text_content() or "") for el in page.locator(sel).all() if el.is_visible()]
    return out


def request_field_names(server) -> tuple[set[str], set[str]]:
    """The API's request fields: the snake_case property names of the request bodies (and what
    they refer to) and the query parameters in /schema/openapi.json; and every property name."""
    import httpx

    doc = httpx.get(f"{server.url}/schema/openapi.json").json()
    schemas = doc["components"]["schemas"]
    names: set[str] = set()
    seen: set[str] = set()

    def walk(node: object) -> None:
        if isinstance(node, dict):
            ref = node.get("$ref")
            if isinstance(ref, str) and ref.split("/")[-1] not in seen:
                seen.add(ref.split("/")[-1])
                walk(schemas[ref.split("/")[-1]])
            names.update(node.get("properties", {}))
            for v in node.values():
                walk(v)
        elif isinstance(node, list):
            for v in node:
                walk(v)

    for ops in doc["paths"].values():
        for op in ops.values():
            walk(op.get("requestBody", {}))
            names.update(p["name"] for p in op.get("parameters", []))
    return {n for n in names if "_" in n}, names


def assert_plain(messages: list[tuple[str | None, str]], server) -> None:
    import re

    snake, names = request_field_names(server)
    assert {"non_kv_bytes", "gpu_memory_bytes", "max_model_len", "kv_cache_dtype_skip_layers"} <= snake
    for code, text in messages:
        if not text.strip():
            continue
        if code:
            lead = text.lower().lstrip()
            assert not lead.startswith(code) and not lead.startswith(code.replace("_", " ")), text
        named = [n for n in snake if re.search(rf"(?<![\w-]){re.escape(n)}(?![\w-])", text)]
        dotted = [m for m in re.findall(r"\b([a-z_]+)\.[a-z_]+\b", text) if m in names]
        assert not named and not dotted, f"{text!r} names the API's {named or dotted}"


def test_no_message_shown_starts_with_its_code_or_names_an_api_field(page, server):
    open_page(page, server, DEFAULT_BUDGET)  # budget and fleet: the default, then group B
    settle(page)
    page.wait_for_selector("#fleet-table:not([hidden])")
    messages = shown_messages(page)
    page.click("#preset-B")
    settle(page)
    page.select_option("#nonkv", "")  # estimated: the memory model's notes too
    page.fill("#weights", "")
    settle(page)
    messages += shown_messages(page)
    page.click("#preset-C")  # the budget that holds no request
    settle(page)
    messages += shown_messages(page)
    assert {
        "non_kv_estimated",
        "pooled_not_deployable",
        "mla_replicated_under_tp",
        "budget_insufficient",
    } <= {c for c, _ in messages}
    # The incident box: a log without a model (read, not planned: the notice names the model box),
    # then with one (its notes and warnings).
    log = "\n".join(line for line in ENGINE_LOG.read_text().splitlines()
                    if "non-default args" not in line and "LLM engine" not in line)  # fmt: skip
    page.fill("#reconcile-log", log)
    page.click("#reconcile-go")
    page.wait_for_selector("#reconcile-warnings:not([hidden])", timeout=10_000)
    missing = page.text_content("#reconcile-warnings") or ""
    assert "does not name it" in missing and "“model, if the log names none or a local path”" in missing
    assert page.is_hidden("#reconcile-error")
    messages += shown_messages(page)
    page.fill("#reconcile-model", "llama-3.1-70b")
    page.click("#reconcile-go")
    page.wait_for_selector("#reconcile-table:not([hidden])", timeout=10_000)
    assert page.is_hidden("#reconcile-error")
    messages += shown_messages(page)
    assert any("memory besides weights the engine saw" in t for _, t in messages)
    assert_plain(messages, server)
    for el in page.locator("[data-code]").all():  # the code is kept, in a tooltip
        assert el.get_attribute("title") == el.get_attribute("data-code")


def test_every_control_the_messages_name_is_one_the_page_shows(page, server):
    open_page(page, server)
    table = page.evaluate("FIELD_WORDS")
    # A control's name as the page shows it: its label (less the control), or its column's header.
    labels = page.evaluate("""[...document.querySelectorAll('label, th')].map((l) =>
        [...l.childNodes].filter((n) => !['INPUT', 'SELECT', 'TEXTAREA'].includes(n.nodeName))
          .map((n) => n.textContent).join(''))""")
    shown = [" ".join(t.split()) for t in labels]
    snake, _ = request_field_names(server)
    for field, say in table.items():
        assert set(say) <= {"label", "words"} and len(say) == 1, field
        if "label" in say:
            label = say["label"]
            assert any(text.startswith(label) or text.endswith(label) for text in shown), label
        else:
            assert not any(n in say["words"] for n in snake), say["words"]


def style_of(page, selector: str) -> dict[str, str]:
    return page.eval_on_selector(
        selector,
        "(el) => { const s = getComputedStyle(el); return {color: s.color, background: s.backgroundColor}; }",
    )


def test_severities_are_styled_apart_and_only_errors_are_red(page, server):
    open_preset(page, server, "B")  # info (MLA replicated) beside per-token KV; the pooled trap a warning
    info = "#row-per-token [data-severity='info']"
    notice = "#warning [data-severity='warning']"
    page.wait_for_selector(info)
    page.wait_for_selector(notice)
    page.fill("#reconcile-log", "no line of this is one vLLM prints")  # refused: an error, in red
    page.click("#reconcile-go")
    page.wait_for_selector("#reconcile-error:not([hidden])", timeout=10_000)
    styles = {
        "info": style_of(page, info) | {"box": style_of(page, "#row-per-token")["background"]},
        "warning": style_of(page, "#warning") | {"text": style_of(page, notice)["color"]},
        "error": style_of(page, "#reconcile-error"),
    }
    assert styles["info"]["background"] == "rgba(0, 0, 0, 0)"  # a note in its figure's box, no box of its own
    assert styles["info"]["color"] != styles["warning"]["text"] != styles["error"]["color"]
    assert len({styles[k]["background"] for k in ("warning", "error")} | {styles["info"]["box"]}) == 3
    red = page.evaluate(RED_ELEMENTS)
    refusal = ("reconcile-error", "reconcile-model")  # the red of the refusal alone
    assert red and all(r.split()[0] in refusal for r in red), red
    for el in page.locator("[data-severity='warning']").all():  # warnings are notices, never notes
        assert "notice" in (el.get_attribute("class") or "")
    for el in page.locator("[data-severity='info']").all():
        assert (el.get_attribute("class") or "") == "note"


def test_the_gpu_row_names_both_memory_figures_and_the_input_holds_the_one_the_plan_uses(page, server):
    import httpx

    h100 = httpx.get(f"{server.url}/v1/gpus/h100-sxm-80gb").json()
    assert h100["vllm_memory_bytes"] < h100["memory_bytes"]  # vLLM sees less than nvidia-smi reports
    gib = lambda n: f"{n / 2**30:,.2f} GiB"  # noqa: E731
    open_page(page, server, DEFAULT_BUDGET)
    settle(page)
    figures = page.text_content("#gpu-figures") or ""
    assert f"nvidia-smi {gib(h100['memory_bytes'])}" in figures  # 79.65 GiB, by its name
    assert f"vLLM sees {gib(h100['vllm_memory_bytes'])}" in figures  # 79.19 GiB, by its name
    assert "the plan uses vLLM's" in figures
    selected = page.locator("#gpu option:checked").text_content() or ""
    assert f"vLLM sees {gib(h100['vllm_memory_bytes'])}" in selected
    body = {"model": "llama-3.1-8b", "gpu": "h100-sxm-80gb", "context_tokens": 8192}
    used = httpx.post(f"{server.url}/v1/budget", json=body).json()["gpu_memory_bytes"]
    assert used == h100["vllm_memory_bytes"]
    assert float(page.input_value("#mem")) == round(used / 2**30, 4)  # the input holds what the plan used
    assert page.text_content("#out-gpu") == gib(used)
    page.select_option("#nonkv", "0")  # the seed's weights-only budget uses the driver's figure
    settle(page)
    assert float(page.input_value("#mem")) == round(h100["memory_bytes"] / 2**30, 4)
    assert "the plan uses nvidia-smi's" in (page.text_content("#gpu-figures") or "")
    assert page.text_content("#out-gpu") == gib(h100["memory_bytes"])


# -- a vllm serve command: POST /v1/plan sets the controls and shows how each flag was read ----------

COMMAND = "vllm serve meta-llama/Llama-3.1-8B --max-model-len 32k -tp 2 --enable-prompt-embeds"


def command_messages(page) -> list[tuple[str | None, str]]:
    """What the command box says: its status, notes, error, and each cell of its flag table."""
    sels = ("#command-status", "#command-notes li", "#command-error", "#command-flags td")
    shown = [el for sel in sels for el in page.locator(sel).all() if el.is_visible()]
    return [(None, el.text_content() or "") for el in shown]


def plan_command(page, command: str, paste: bool = False, shown: str = "#command-flags") -> None:
    """Paste (or type and plan) a command; wait for `shown` and the answers to the controls it set."""
    page.fill("#command", command)
    if paste:  # a paste plans as it lands
        page.dispatch_event("#command", "paste")
    else:
        page.click("#command-go")
    page.wait_for_selector(f"{shown}:not([hidden])", timeout=10_000)
    settle(page)


def test_a_pasted_command_sets_the_controls_and_shows_how_each_flag_was_read(page, server):
    import httpx

    open_page(page, server)  # group A: Llama-3-70B on the seed's pool, TP 1, T 8,192, its weights typed in
    page.select_option("#gpu", "h100-sxm-80gb")
    settle(page)
    plan_command(page, COMMAND, paste=True)
    # The controls the command stands for, as /v1/plan read it on the page's GPU and engine.
    assert page.input_value("#model") == "llama-3.1-8b"  # meta-llama/Llama-3.1-8B is the preset
    assert (page.input_value("#tp"), page.input_value("#T")) == ("2", "32000")  # 32k is 32,000 to vLLM
    assert (page.input_value("#L"), page.input_value("#Hkv")) == ("32", "4")  # its factors, per GPU at TP 2
    assert page.input_value("#weights") == page.input_value("#nonkv") == ""  # from the model, as planned
    assert page.input_value("#gpu") == "h100-sxm-80gb"
    for param in ("model=llama-3.1-8b", "tp=2", "T=32000", "gpu=h100-sxm-80gb"):
        assert param in page.url  # the view is in the URL; the command is not (it may carry a key)
    assert "command=" not in page.url and "enable-prompt-embeds" not in page.url
    body = {"command": COMMAND, "gpu": "h100-sxm-80gb", "engine": page.input_value("#engine")}
    planned = httpx.post(f"{server.url}/v1/plan", json=body).json()
    guaranteed = f"{planned['concurrency']['guaranteed']:,}"
    assert page.text_content("#out-concurrency") == guaranteed  # the page's figures are the command's plan
    assert f"{guaranteed} concurrent requests of 32,000 tokens" in page.text_content("#command-status")
    # The flag table: each flag, its value as vLLM read it, and its effect.
    rows = page.locator("#command-flags tr[data-option]")
    table = {r.get_attribute("data-option"): r for r in rows.all()}
    assert list(table) == ["--max-model-len", "--tensor-parallel-size", "--enable-prompt-embeds"]
    cells = {o: r.locator("td").all_text_contents() for o, r in table.items()}
    assert cells["--max-model-len"] == ["--max-model-len", "32000", "planned → “T, context tokens”"]
    assert cells["--tensor-parallel-size"] == ["--tensor-parallel-size", "2", "planned → “tensor parallel”"]
    assert table["--tensor-parallel-size"].locator("td").first.get_attribute("title") == "given as -tp"
    embeds = table["--enable-prompt-embeds"]
    assert (
        embeds.get_attribute("data-effect") == "memory"
        and cells["--enable-prompt-embeds"][2] == "not modelled"
    )
    note = next(f["note"] for f in planned["command"]["flags"] if f["option"] == "--enable-prompt-embeds")
    note = page.evaluate("(n) => sentence(plain(n))", note)  # the note in the page's words
    assert embeds.locator("td").last.get_attribute("title") == note  # its note as a tooltip, and on a line
    assert page.locator("#command-flags tr.flag-note").text_content() == note
    highlighted = style_of(page, "#command-flags tr[data-option='--enable-prompt-embeds'] td")["background"]
    assert highlighted == style_of(page, "#warning")["background"]  # a warning's amber, not red
    assert "--enable-prompt-embeds changes what vLLM allocates" in page.text_content("#command-notes")
    assert page.is_hidden("#command-error")
    shot(page, "command-box", "#command-form")
    messages = command_messages(page)
    # A command vLLM refuses: the 400's detail beside the box, the controls and URL as they were.
    url = page.url
    bad = "vllm serve llama-3.1-8b --tensor-paralel-size 2"
    refusal = httpx.post(f"{server.url}/v1/plan", json={"command": bad, "gpu": "h100-sxm-80gb"})
    assert refusal.status_code == 400 and refusal.json()["field"] == "command"
    detail = refusal.json()["detail"].removeprefix("command: ")
    assert "did you mean --tensor-parallel-size?" in detail
    plan_command(page, bad, shown="#command-error")
    assert page.is_visible("#command-error") and page.text_content("#command-error") == detail
    assert page.get_attribute("#command", "aria-invalid") == "true"
    assert page.is_hidden("#command-flags")  # the table was the earlier command's
    assert page.url == url and page.input_value("#tp") == "2"
    shot(page, "command-box-refused", "#command-form")
    assert_plain(messages + command_messages(page), server)
    assert page.errors == []  # type: ignore[attr-defined]


def test_a_command_without_a_readable_model_plans_the_pages_and_values_no_option_offers_restore(
    page, server, browser
):
    open_page(page, server, DEFAULT_BUDGET)  # llama-3.1-8b on an H100
    # A local path, on two lines (a shell's backslash), with values no option of the page offers.
    plan_command(page, "vllm serve /models/llama \\\n  --kv-cache-dtype fp8_e5m2 --block-size 256 "
                       "--max-num-seqs 64 --port 8000")  # fmt: skip
    assert page.is_hidden("#command-error")
    assert page.input_value("#model") == "llama-3.1-8b"  # a local path: the page's model
    assert (page.input_value("#b"), page.input_value("#bs")) == ("fp8_e5m2", "256")  # options of their own
    assert "The model chosen below, llama-3.1-8b," in page.text_content("#command-status")
    effects = {r.get_attribute("data-option"): r.locator("td").last.text_content()
               for r in page.locator("#command-flags tr[data-option]").all()}  # fmt: skip
    assert effects["--max-num-seqs"] == "planned, no control here" and effects["--port"] == "no memory effect"
    assert "No control here for --max-num-seqs" in page.text_content("#command-notes")
    figures = page.text_content("#out-concurrency")
    fresh = new_page(browser, viewport={"width": 1280, "height": 800})
    try:
        fresh.goto(page.url)
        fresh.wait_for_selector("body[data-ready='1']", timeout=20_000)
        settle(fresh)
        for sel in ("#model", "#b", "#bs", "#T", "#nonkv"):
            assert fresh.input_value(sel) == page.input_value(sel), sel
        assert fresh.text_content("#out-concurrency") == figures
    finally:
        fresh.context.close()
    assert page.errors == []  # type: ignore[attr-defined]
