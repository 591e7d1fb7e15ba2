"""The planner page's Must-show screenshots (issue 31), at 1440 and 390 px wide, for a person to
look at: the default budget (llama-3.1-8b on an H100, vLLM's other memory estimated), a fleet with
the pooled-memory trap (the seed's group B) and an incident paste without a model.

    kvplan serve --port 8123 &
    python benchmarks/screens.py http://127.0.0.1:8123   # → benchmarks/results/screens/*.png
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

from playwright.sync_api import Page, sync_playwright

OUT = Path(__file__).resolve().parent / "results" / "screens"
LOG = Path(__file__).resolve().parents[1] / "tests" / "reconcile" / "data" / "engine-0.33-tp2.log"
DEFAULT_BUDGET = "?model=llama-3.1-8b&gpu=h100-sxm-80gb&nonkv=&weights=&T=8192&tp=1&pp=1&b=bfloat16&util=0.92"


def log_without_a_model() -> str:
    """The engine log less the line that names its model (vLLM's non-default args)."""
    return "\n".join(line for line in LOG.read_text().splitlines() if "non-default args" not in line)


def ready(page: Page, url: str) -> None:
    page.goto(url)
    page.wait_for_selector("body[data-ready='1']", timeout=20_000)
    page.wait_for_timeout(300)
    page.wait_for_load_state("networkidle")


def clip_to(page: Page, *selectors: str) -> dict[str, float]:
    """The page from its top to the lowest bottom edge of the elements named, full width."""
    bottom = max(page.eval_on_selector(s, "(el) => el.getBoundingClientRect().bottom + window.scrollY")
                 for s in selectors)  # fmt: skip
    width = page.evaluate("document.documentElement.clientWidth")
    return {"x": 0, "y": 0, "width": width, "height": bottom + 12}


def shoot(base: str, width: int) -> list[Path]:
    shots = []
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=shutil.which("chromium") or "/usr/bin/chromium",
                                    args=["--headless=new", "--no-sandbox", "--disable-gpu"])  # fmt: skip
        ctx = browser.new_context(viewport={"width": width, "height": 900}, device_scale_factor=1)
        page = ctx.new_page()

        ready(page, base + "/" + DEFAULT_BUDGET)  # (a) the default budget: results and the GPU row
        path = OUT / f"a-default-budget-{width}.png"
        form = "#controls fieldset:last-of-type"  # beside the results; below them on a phone
        page.screenshot(
            path=str(path),
            full_page=True,
            clip=clip_to(page, "#readouts .meta", *([form] if width > 760 else [])),
        )
        shots.append(path)
        if width <= 760:
            path = OUT / f"a-default-budget-gpu-row-{width}.png"
            page.locator(form).screenshot(path=str(path))
            shots.append(path)

        ready(page, base + "/")  # (b) the seed's group B: the pooled-memory trap
        page.click("#preset-B")
        page.wait_for_timeout(300)
        page.wait_for_load_state("networkidle")
        page.wait_for_selector("#fleet-table:not([hidden])")
        path = OUT / f"b-fleet-pooled-trap-{width}.png"
        page.locator("#fleet").screenshot(path=str(path))
        shots.append(path)
        path = OUT / f"b-budget-pooled-trap-{width}.png"
        page.screenshot(path=str(path), full_page=True, clip=clip_to(page, "#readouts .meta"))
        shots.append(path)

        page.fill("#reconcile-log", log_without_a_model())  # (c) an incident paste with no model line
        page.click("#reconcile-go")
        page.wait_for_selector("#reconcile-error:not([hidden])", timeout=10_000)
        path = OUT / f"c-incident-no-model-{width}.png"
        page.locator("#incident").screenshot(path=str(path))
        shots.append(path)
        browser.close()
    return shots


def main() -> None:
    base = sys.argv[1].rstrip("/") if len(sys.argv) > 1 else "http://127.0.0.1:8123"
    OUT.mkdir(parents=True, exist_ok=True)
    for width in (1440, 390):
        for path in shoot(base, width):
            print(path.relative_to(Path.cwd()) if path.is_relative_to(Path.cwd()) else path)


if __name__ == "__main__":
    main()
