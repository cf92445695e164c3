"""The live view in real Chromium (Playwright), watching a real client session on Xvfb.

The page logs in with an admin token through its form, shows the running
session's task, its newest screen and its steps as they come; Pause holds the
session before its next step and Resume lets it go on; Take over pauses it while
a person clicks the probe's OK button, and Hand back resumes it with a note that
is in the prompt of the very next model step, decided on a screen taken after the
person's click; Stop ends the client's run CANCELLED.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest

from holodesk.client.events import Outcome
from holodesk.platform.select import open_backend
from tests.daemon.support import GUARD_S, wait_until
from tests.e2e.live_view_scene import TASK, live_scene
from tests.support.probe import ProbeApp

pytestmark = [pytest.mark.x11, pytest.mark.e2e, pytest.mark.web]

NOTE = "I pressed OK myself; type the greeting next"
PAGE_TIMEOUT_MS = GUARD_S * 1000


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


async def wait_for(predicate: Callable[[], bool], what: str) -> None:
    await wait_until(predicate, what)


async def test_the_page_watches_pauses_takes_over_and_stops_a_session(
    xvfb: str, probe: ProbeApp, browser: Any, tmp_path: Path
) -> None:
    async with live_scene(xvfb, tmp_path) as scene:
        page = await browser.new_page(viewport={"width": 1400, "height": 1000})
        page.set_default_timeout(PAGE_TIMEOUT_MS)
        errors: list[str] = []
        page.on("pageerror", lambda error: errors.append(str(error)))
        # Console errors besides failed requests (counted below): CSP violations, above all.
        page.on(
            "console",
            lambda m: (
                errors.append(m.text)
                if m.type == "error" and not m.text.startswith("Failed to load resource")
                else None
            ),
        )
        failed: list[tuple[int, str]] = []
        page.on(
            "response",
            lambda r: (
                failed.append((r.status, r.url.split("/", 3)[3])) if r.status >= 400 else None
            ),
        )
        await page.goto(scene.url)

        # Logging in: the form, then the session's card.
        await page.locator("section.login input[name=token]").fill(scene.admin_token)
        await page.locator("section.login button[type=submit]").click()
        card = page.locator("article.session")
        await card.locator("h2.task", has_text=TASK).wait_for()
        cookies = await page.context.cookies()
        assert [c["name"] for c in cookies] == ["holodesk_live"]
        assert cookies[0]["httpOnly"]
        assert scene.admin_token not in cookies[0]["value"]

        # Its newest screen and its steps, as they happen.
        frame = card.locator("img.frame")
        await frame.wait_for()
        await page.wait_for_function(
            "() => { const i = document.querySelector('img.frame');"
            " return i && i.complete && i.naturalWidth === 1280; }"
        )
        await card.locator("li.step-entry p.thought").first.wait_for()
        await page.wait_for_function("() => document.querySelectorAll('li.step-entry').length >= 3")
        assert "wait 150 ms" in await card.locator("ul.actions li").first.inner_text()

        session = scene.running.registry.list()[0]
        policy = scene.policy

        # Pause: the session parks before its next step and no step is decided.
        await card.locator("button.pause").click()
        await card.locator("span.state", has_text="paused").wait_for()
        await asyncio.wait_for(session.held.wait(), GUARD_S)
        decided = len(policy.contexts)
        assert session.step == decided  # nothing in flight while it is held
        assert await card.locator("button.resume").is_visible()

        # Resume: steps come again.
        await card.locator("button.resume").click()
        await wait_for(lambda: len(policy.contexts) > decided + 1, "steps after resume")

        # Take over: held again; the person uses the desktop, then hands back.
        await card.locator("button.takeover").click()
        await card.locator("span.state", has_text="taken over").wait_for()
        await asyncio.wait_for(session.held.wait(), GUARD_S)
        held_frame = session.frames[-1].frame_id
        before = len(policy.contexts)
        person = open_backend("x11", display=xvfb)
        try:
            ok = probe.widgets["ok"]
            person.input.click(*ok.center)
        finally:
            person.close()
        probe.wait_for_event("command", widget="ok")
        assert len(policy.contexts) == before  # the agent did nothing meanwhile

        await card.locator("textarea.note").fill(NOTE)
        await card.locator("button.handback-button").click()
        await wait_for(lambda: len(policy.contexts) > before, "the step after the hand-back")
        noted = policy.contexts[before]
        assert noted.operator_note == NOTE
        assert noted.frame.frame_id != held_frame  # a fresh screen, after the person's click
        prompt = policy.prompts.prompts[before]
        assert f"<operator_note>\n{NOTE}\n</operator_note>" in prompt
        await wait_for(lambda: len(policy.contexts) > before + 1, "the step after that")
        assert policy.contexts[before + 1].operator_note == ""  # the note went once
        assert NOTE not in policy.prompts.prompts[before + 1]
        await card.locator("span.state", has_text="taken over").wait_for(state="detached")

        # Stop: the client's run ends CANCELLED, and the page says so.
        await card.locator("button.stop").click()
        outcome = await asyncio.wait_for(asyncio.shield(scene.client), GUARD_S)
        assert outcome.outcome is Outcome.CANCELLED
        assert "stopped from the live view" in outcome.reason
        await card.locator("p.ending", has_text="cancelled").wait_for()
        await card.locator("span.state", has_text="ended").wait_for()
        assert not await card.locator("button.pause").is_visible()
        assert not errors, errors
        assert failed == [(401, "api/me")]  # only the check that showed the login form


async def test_a_wrong_token_is_refused_on_the_page(
    xvfb: str, probe: ProbeApp, browser: Any, tmp_path: Path
) -> None:
    async with live_scene(xvfb, tmp_path) as scene:
        page = await browser.new_page()
        page.set_default_timeout(PAGE_TIMEOUT_MS)
        await page.goto(scene.url)
        await page.locator("section.login input[name=token]").fill("not-the-token")
        await page.locator("section.login button[type=submit]").click()
        await page.locator("section.login p.error", has_text="unknown token").wait_for()
        assert await page.locator("article.session").count() == 0
        agent = scene.tokens.by_name["desk"]
        await page.locator("section.login input[name=token]").fill(agent)
        await page.locator("section.login button[type=submit]").click()
        await page.locator("section.login p.error", has_text="needs admin").wait_for()
        assert await page.context.cookies() == []
