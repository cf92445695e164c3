"""Capture the live view's screenshots for docs/live-view.md with Playwright.

Runs the scene of the live view's e2e test (tests/e2e/live_view_scene.py): a daemon
with --web, a real client session on a fresh Xvfb showing the probe app, a scripted
policy that keeps looking at it. Chromium (the system's, as the tests use it) logs
in through the page's form and takes two pictures:

    docs/images/live-view.png           a session running: its screen and its steps
    docs/images/live-view-takeover.png  the same session taken over, a note written

    uv run python tools/make_live_view_screenshots.py [OUT_DIR]

Needs Xvfb, python3-tk and chromium (tools/setup.sh installs them).
"""

from __future__ import annotations

import asyncio
import os
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # the scene lives with the tests

from playwright.async_api import ViewportSize, async_playwright  # noqa: E402

from holodesk.platform.web.browser import LAUNCH_FLAGS, find_chromium  # noqa: E402
from tests.e2e.live_view_scene import live_scene  # noqa: E402
from tests.support.probe import ProbeApp  # noqa: E402
from tests.support.xvfb import xvfb  # noqa: E402

OUT = ROOT / "docs" / "images"
VIEWPORT: ViewportSize = {"width": 1360, "height": 900}
STEPS_SHOWN = 6
NOTE = "I closed the dialog myself; go on from the form"


async def capture(out_dir: Path) -> list[Path]:
    written = [out_dir / "live-view.png", out_dir / "live-view-takeover.png"]
    with xvfb() as display, tempfile.TemporaryDirectory() as scratch:
        probe = ProbeApp.start(display, Path(scratch) / "probe.log")
        try:
            async with live_scene(display, Path(scratch)) as scene, async_playwright() as pw:
                browser = await pw.chromium.launch(
                    executable_path=find_chromium(None, os.environ), args=list(LAUNCH_FLAGS)
                )
                page = await browser.new_page(viewport=VIEWPORT)
                page.set_default_timeout(30_000)
                await page.goto(scene.url)
                await page.locator("section.login input[name=token]").fill(scene.admin_token)
                await page.locator("section.login button[type=submit]").click()
                await page.wait_for_function(
                    "n => document.querySelectorAll('li.step-entry').length >= n"
                    " && document.querySelector('img.frame')?.naturalWidth > 0",
                    arg=STEPS_SHOWN,
                )
                await page.screenshot(path=str(written[0]))
                card = page.locator("article.session")
                await card.locator("button.takeover").click()
                await card.locator("span.state", has_text="taken over").wait_for()
                await card.locator("textarea.note").fill(NOTE)
                await page.screenshot(path=str(written[1]))
                await browser.close()
        finally:
            probe.stop()
    return written


def main() -> None:
    out_dir = Path(sys.argv[1]) if len(sys.argv) > 1 else OUT
    out_dir.mkdir(parents=True, exist_ok=True)
    for path in asyncio.run(capture(out_dir)):
        print(path)


if __name__ == "__main__":
    main()
