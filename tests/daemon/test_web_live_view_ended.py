"""The live view keeps showing a session that ended: its last screen, its steps and
their results, on the page that watched it and on one loaded afterwards.

It once showed "no screen yet" for every ended session, and an ended session
vanished, results and all, from a page that reloaded or reconnected (a viewer
cut off for lagging reconnects with a snapshot, which listed only running
sessions). A real daemon with the live view, a real session on its RunSession
stream (the test plays the client), and the page in real Chromium.
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from typing import Any

import pytest

from holodesk.proto.v1 import agent_pb2
from tests.daemon.support import (
    GUARD_S,
    RecordingPolicy,
    Stream,
    holo,
    make_frame,
    ok_results,
    running_daemon,
)

pytestmark = pytest.mark.web

WAIT = holo({"action": "wait", "seconds": 0}, thought="look again")
ANSWER = holo({"action": "answer", "content": "finished"}, thought="all done")
# Each frame a size of its own, so the page's image tells which one it shows.
SIZES = {"f1": (64, 48), "f2": (80, 60), "f3": (96, 72)}


@pytest.fixture
async def browser() -> AsyncIterator[Any]:
    playwright_api = pytest.importorskip("playwright.async_api")
    from holodesk.platform.web.browser import LAUNCH_FLAGS, find_chromium

    executable = find_chromium(None, os.environ)
    async with playwright_api.async_playwright() as playwright:
        launched = await playwright.chromium.launch(
            executable_path=executable, args=list(LAUNCH_FLAGS)
        )
        try:
            yield launched
        finally:
            await launched.close()


async def observe(stream: Stream, frame_id: str, results: Any = ()) -> agent_pb2.RunSessionResponse:
    return await stream.observe(make_frame(frame_id, *SIZES[frame_id]), results)


async def shows_the_ended_session(page: Any) -> None:
    """The card of the ended session: its ending, its last screen, every step with
    the results it had while it ran."""
    card = page.locator("article.session")
    await card.locator("span.state", has_text="ended").wait_for()
    await card.locator("p.ending", has_text="succeeded: finished").wait_for()
    await page.wait_for_function(
        "() => { const i = document.querySelector('article.session img.frame');"
        " return i && i.complete && i.naturalWidth === 96; }"
    )
    assert await card.locator("img.frame").is_visible()
    assert not await card.locator("figure.screen figcaption").is_visible()
    steps = card.locator("li.step-entry")
    assert await steps.count() == 3
    results = {
        await entry.get_attribute("data-step"): await entry.locator("p.results").inner_text()
        for entry in await steps.all()
    }
    assert results == {"1": "ok", "2": "ok", "3": ""}


async def test_an_ended_session_keeps_its_screen_and_results(browser: Any) -> None:
    policy = RecordingPolicy([WAIT, WAIT, ANSWER])
    async with running_daemon([policy], web="127.0.0.1:0") as daemon:
        assert daemon.running.web is not None
        url = daemon.running.web.url
        page = await browser.new_page()
        page.set_default_timeout(GUARD_S * 1000)
        errors: list[str] = []
        page.on("pageerror", lambda error: errors.append(str(error)))
        await page.goto(url)

        stream = daemon.stream()
        await stream.start("watch me end")
        first = await observe(stream, "f1")
        second = await observe(stream, "f2", ok_results(first.actions))
        card = page.locator("article.session")
        await card.locator("li.step-entry[data-step='1'] p.results", has_text="ok").wait_for()
        assert await card.locator("span.state").inner_text() != "ended"

        ended = await observe(stream, "f3", ok_results(second.actions))
        assert ended.WhichOneof("event") == "ended"
        await shows_the_ended_session(page)

        # A page loaded afterwards (a reload, or a viewer reconnecting) shows it too.
        await page.reload()
        await shows_the_ended_session(page)
        fresh = await browser.new_page()
        fresh.set_default_timeout(GUARD_S * 1000)
        await fresh.goto(url)
        await shows_the_ended_session(fresh)
        assert not errors, errors
