"""The task's Chromium: started with a DevTools port of its own, and read over it.

OSWorld's tasks start `google-chrome --remote-debugging-port=1337` in a VM and read
it on a fixed port. Here many environments share one host, so a fixed port would
collide: Chromium is started with `--remote-debugging-port=0` and its profile in
the task's HOME, and the port it chose is read from the profile's
DevToolsActivePort file. Reading goes through Playwright's connect_over_cdp (the
repository's way of talking CDP: platform/web/), in place: nothing is reloaded."""

from __future__ import annotations

import json
import os
import time
import urllib.request
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path, PurePath
from typing import Any

from holodesk.client.eval.tasks.context import StepError, TaskContext

CHROME_NAMES = frozenset({"google-chrome", "google-chrome-stable", "chromium", "chromium-browser"})
START_TIMEOUT_S = 30.0
# Flags for a Chromium on a private display, as root, with no network to speak of.
FLAGS: tuple[str, ...] = (
    "--no-first-run",
    "--no-default-browser-check",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-features=Translate,MediaRouter",
    "--password-store=basic",
    "--test-type",
)


def is_chrome(command: str | Sequence[str]) -> bool:
    """The command starts Chrome or Chromium (by its program's name)."""
    words = command.split() if isinstance(command, str) else list(command)
    return bool(words) and PurePath(str(words[0])).name in CHROME_NAMES


def is_devtools_forwarder(command: str | Sequence[str]) -> bool:
    """OSWorld's `socat tcp-listen:9222,fork tcp:localhost:1337`: VM plumbing."""
    words = command.split() if isinstance(command, str) else [str(w) for w in command]
    return bool(words) and PurePath(words[0]).name == "socat" and any("9222" in w for w in words)


def executable() -> str:
    """The Chromium to run ($HOLODESK_CHROMIUM, else one on PATH), as the web platform
    finds it."""
    from holodesk.platform.web.browser import find_chromium

    return find_chromium(None, os.environ)


def start(
    context: TaskContext, command: str | Sequence[str] = (), urls: Sequence[str] = ()
) -> None:
    """Start the task's Chromium: `command`'s own arguments kept (its program and any
    DevTools port or profile replaced), then `urls`; returns once DevTools answers and
    its pages have loaded. With one running already (a second launch, an `open` of a
    URL), the URLs open as tabs of it: a second Chromium on the same profile would
    only hand them over and exit."""
    words = command.split() if isinstance(command, str) else [str(w) for w in command]
    if context.devtools_port is not None:
        pages = [w for w in words[1:] if not w.startswith("-")] + list(urls)
        if pages:
            open_tabs(context, pages)
        return
    kept = [
        w
        for w in words[1:]
        if not w.startswith(
            ("--remote-debugging-port", "--user-data-dir", "--remote-debugging-address")
        )
    ]
    profile = context.home / ".config" / "chromium"
    profile.mkdir(parents=True, exist_ok=True)
    (profile / "DevToolsActivePort").unlink(missing_ok=True)
    argv = [
        executable(),
        *FLAGS,
        "--remote-debugging-port=0",
        f"--user-data-dir={profile}",
        "--window-position=0,0",
        f"--window-size={context.width},{context.height}",
        *kept,
        *urls,
    ]
    context.start(argv)
    context.chromium_profile = profile
    context.devtools_port = _wait_port(profile / "DevToolsActivePort")
    _wait_loaded(context)


def _wait_loaded(context: TaskContext) -> None:
    """Every page has loaded (the agent's first screen shows them, not a blank window)."""
    from playwright.sync_api import Error, sync_playwright

    with sync_playwright() as playwright:
        try:
            browser = playwright.chromium.connect_over_cdp(_endpoint(context), timeout=10_000)
            for browser_context in browser.contexts:
                for page in browser_context.pages:
                    page.wait_for_load_state("load", timeout=30_000)
        except Error as error:
            raise StepError(f"Chromium's pages did not load: {error.message}") from error


def _wait_port(path: Path) -> int:
    deadline = time.monotonic() + START_TIMEOUT_S
    while time.monotonic() < deadline:
        try:
            first = path.read_text().splitlines()[0]
            return int(first)
        except (OSError, IndexError, ValueError):
            time.sleep(0.05)
    raise StepError(f"Chromium did not open its DevTools port within {START_TIMEOUT_S:g} s")


@dataclass(frozen=True)
class Tab:
    title: str
    url: str
    visible: bool
    focused: bool
    # Chrome's own order of activity (its /json/list: 0 is the most recently active).
    recency: int = 1 << 30
    content: str = ""


def _endpoint(context: TaskContext) -> str:
    return f"http://127.0.0.1:{context.devtools_port}"


def _recency(context: TaskContext) -> dict[str, int]:
    """Target id -> rank in Chrome's /json/list, which lists the most recently active
    first."""
    with urllib.request.urlopen(f"{_endpoint(context)}/json/list", timeout=10) as answer:
        listed = json.load(answer)
    pages = [t for t in listed if t.get("type") == "page"]
    return {str(t["id"]): rank for rank, t in enumerate(pages)}


def tabs(context: TaskContext, *, content: bool = False) -> list[Tab] | None:
    """The open tabs of the task's Chromium, in the order they were opened (None when
    it has none running)."""
    if context.devtools_port is None:
        return None
    from playwright.sync_api import Error, sync_playwright

    try:
        recency = _recency(context)
    except (OSError, ValueError):
        return None
    found: list[Tab] = []
    with sync_playwright() as playwright:
        try:
            browser = playwright.chromium.connect_over_cdp(_endpoint(context), timeout=10_000)
        except Error:
            return None
        for browser_context in browser.contexts:
            for page in browser_context.pages:
                if page.url.startswith(("devtools://", "chrome-extension://", "chrome://")):
                    continue
                found.append(_tab(browser_context, page, recency, content=content))
    return found


def _tab(browser_context: Any, page: Any, recency: dict[str, int], *, content: bool) -> Tab:
    session = browser_context.new_cdp_session(page)
    target = session.send("Target.getTargetInfo")["targetInfo"]["targetId"]
    session.detach()
    state: list[Any] = page.evaluate(
        "() => [document.title, location.href, document.visibilityState, document.hasFocus()]"
    )
    return Tab(
        title=str(state[0]),
        url=str(state[1]),
        visible=state[2] == "visible",
        focused=bool(state[3]),
        recency=recency.get(str(target), len(recency)),
        content=page.content() if content else "",
    )


def active(tabs_found: Sequence[Tab]) -> Tab | None:
    """The active tab: a visible one (a window shows one tab; the others are hidden),
    preferring one with focus, then the one Chrome says was active most recently."""
    if not tabs_found:
        return None
    return min(tabs_found, key=lambda t: (not t.visible, not t.focused, t.recency))


def in_active_tab(context: TaskContext, script: str) -> Any:
    """Evaluate `script` (a JavaScript function) in the active tab (active()'s choice);
    None without a running Chromium or an open tab."""
    if context.devtools_port is None:
        return None
    from playwright.sync_api import Error, sync_playwright

    try:
        recency = _recency(context)
    except (OSError, ValueError):
        return None
    with sync_playwright() as playwright:
        try:
            browser = playwright.chromium.connect_over_cdp(_endpoint(context), timeout=10_000)
        except Error:
            return None
        pages = [
            (page, _tab(browser_context, page, recency, content=False))
            for browser_context in browser.contexts
            for page in browser_context.pages
            if not page.url.startswith(("devtools://", "chrome-extension://", "chrome://"))
        ]
        chosen = active([tab for _, tab in pages])
        if chosen is None:
            return None
        return next(page for page, tab in pages if tab is chosen).evaluate(script)


def page_info(context: TaskContext, url: str) -> dict[str, str] | None:
    """{title, url, content} of `url` opened in a new tab of the task's Chromium."""
    if context.devtools_port is None:
        return None
    from playwright.sync_api import Error, sync_playwright

    endpoint = f"http://127.0.0.1:{context.devtools_port}"
    with sync_playwright() as playwright:
        try:
            browser = playwright.chromium.connect_over_cdp(endpoint, timeout=10_000)
            page = browser.contexts[0].new_page()
            page.goto(url, wait_until="load", timeout=30_000)
            info = {"title": page.title(), "url": page.url, "content": page.content()}
            page.close()
            return info
        except Error:
            return None


def open_tabs(context: TaskContext, urls: Sequence[str]) -> None:
    """Open each URL in a new tab of the task's Chromium window, in front, loaded (the
    Chromium is started first when none runs)."""
    if context.devtools_port is None:
        start(context, urls=list(urls))
        return
    from playwright.sync_api import Error, sync_playwright

    with sync_playwright() as playwright:
        try:
            browser = playwright.chromium.connect_over_cdp(_endpoint(context), timeout=10_000)
            session = browser.new_browser_cdp_session()
            for url in urls:
                # A tab of the existing window (Playwright's new_page opens a window).
                session.send("Target.createTarget", {"url": url, "newWindow": False})
            for page in browser.contexts[0].pages:
                page.wait_for_load_state("load", timeout=30_000)
        except Error as error:
            raise StepError(f"Chromium could not open {list(urls)}: {error.message}") from error
