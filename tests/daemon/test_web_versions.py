"""The live view shows which policy version made each step: in its events and
snapshots, and on the page (real Chromium), when the daemon's weights change while a
session runs.

A real daemon (gRPC and the live view on 127.0.0.1:0) with a real session on its
RunSession stream; its ModelPolicy runs over the versioned test engine of
tests/support/versioned_engine.py, whose weights change while step 2 is sampled.
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import pytest

from holodesk.daemon.dialects import get_dialect
from holodesk.daemon.policies.model import ModelPolicy
from tests.daemon.support import GUARD_S, RecordingPolicy, running_daemon
from tests.daemon.test_web_live_view import WAIT, Events, observe, ok, start_session, web_url
from tests.support.versioned_engine import VersionedEngine


def straddling_policy() -> ModelPolicy:
    """Step 1 by v1; step 2 sampled while v1 gave way to v2; step 3 by v2."""
    engine = VersionedEngine([WAIT, WAIT, WAIT], updates={1: "straddle"})
    return ModelPolicy(get_dialect("holo"), engine, name="versioned")


@pytest.fixture
async def http() -> AsyncIterator[aiohttp.ClientSession]:
    async with aiohttp.ClientSession() as session:
        yield session


async def test_events_and_snapshots_carry_each_steps_version(
    http: aiohttp.ClientSession,
) -> None:
    async with running_daemon([straddling_policy()], web="127.0.0.1:0") as daemon:
        stream, sid = await start_session(daemon)
        async with http.get(web_url(daemon.running, "/api/events")) as response:
            events = Events(response)
            await events.until("snapshot")
            first = await observe(stream, "f1")
            one = await events.until("step", session_id=sid, step=1)
            await observe(stream, "f2", ok(first.actions))
            two = await events.until("step", session_id=sid, step=2)
        assert (one["policy_version"], one["policy_label"], one["versions"]) == (1, "step-10", [1])
        assert (two["policy_version"], two["policy_label"], two["versions"]) == (
            2,
            "step-20",
            [1, 2],
        )
        # A page opened now gets the same from its snapshot.
        async with http.get(web_url(daemon.running, "/api/sessions")) as snap:
            (info,) = (await snap.json())["sessions"]
        assert [(s["step"], s["policy_version"], s["versions"]) for s in info["steps"]] == [
            (1, 1, [1]),
            (2, 2, [1, 2]),
        ]


async def test_a_policy_without_versions_says_version_0(http: aiohttp.ClientSession) -> None:
    async with running_daemon([RecordingPolicy([WAIT])], web="127.0.0.1:0") as daemon:
        stream, sid = await start_session(daemon)
        async with http.get(web_url(daemon.running, "/api/events")) as response:
            events = Events(response)
            await observe(stream, "f1")
            step = await events.until("step", session_id=sid, step=1)
        assert (step["policy_version"], step["policy_label"], step["versions"]) == (0, "", [])


@pytest.mark.web
async def test_the_page_shows_each_steps_version() -> None:
    playwright_api = pytest.importorskip("playwright.async_api")
    from holodesk.platform.web.browser import LAUNCH_FLAGS, find_chromium

    async with running_daemon([straddling_policy()], web="127.0.0.1:0") as daemon:
        stream, _ = await start_session(daemon)
        first = await observe(stream, "f1")
        await observe(stream, "f2", ok(first.actions))
        async with playwright_api.async_playwright() as playwright:
            browser = await playwright.chromium.launch(
                executable_path=find_chromium(None, os.environ), args=list(LAUNCH_FLAGS)
            )
            try:
                page = await browser.new_page()
                page.set_default_timeout(GUARD_S * 1000)
                errors: list[str] = []
                page.on("pageerror", lambda error: errors.append(str(error)))
                await page.goto(web_url(daemon.running))
                versions = await shown_versions(page)
            finally:
                await browser.close()
        assert versions == {
            "2": ("v1+v2", "policy step-20: an update landed while this step was sampled"),
            "1": ("v1", "policy step-10"),
        }
        assert errors == []


async def shown_versions(page: Any) -> dict[str, tuple[str, str]]:
    """Each step entry's version badge: step -> (text, title)."""
    await page.locator('li.step-entry[data-step="2"] .version').wait_for()
    shown: dict[str, tuple[str, str]] = {}
    for entry in await page.locator("li.step-entry").all():
        badge = entry.locator(".version")
        shown[await entry.get_attribute("data-step")] = (
            await badge.inner_text(),
            await badge.get_attribute("title"),
        )
    return shown
