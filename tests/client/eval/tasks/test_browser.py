"""The browser steps and getters on a real Chromium on a real Xvfb display: started as
OSWorld's tasks start Chrome (its DevTools port and socat replaced by a port of the
environment's own), tabs opened, then read in place over DevTools: the open tabs,
the active one (which follows a real tab switch), a page's info."""

from __future__ import annotations

import json
import os
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest

from holodesk.client.eval.tasks import TaskEnvironment, evaluate, read_task, rollout_task
from holodesk.client.eval.tasks.registry import GETTERS

pytestmark = [pytest.mark.x11, pytest.mark.web, pytest.mark.timeout(120)]


def _page(folder: Path, name: str, title: str) -> str:
    path = folder / f"{name}.html"
    path.write_text(f"<html><head><title>{title}</title></head><body><p>{title} body</p>")
    return path.as_uri()


def _task(folder: Path, config: list[dict[str, Any]], expected_url: str) -> Any:
    raw = {
        "id": "tabs",
        "instruction": "look",
        "config": config,
        "evaluator": {
            "func": "is_expected_active_tab",
            "result": {"type": "active_url_from_accessTree", "goto_prefix": "https://"},
            "expected": {"type": "rule", "rules": {"type": "url", "url": expected_url}},
        },
    }
    (folder / "tabs.json").write_text(json.dumps(raw))
    return read_task(folder / "tabs.json", "chrome")


def test_tabs_are_read_in_place_and_follow_the_user(tmp_path: Path) -> None:
    first = _page(tmp_path, "first", "First page")
    second = _page(tmp_path, "second", "Second page")
    third = _page(tmp_path, "third", "Third page")
    config = [
        {
            "type": "launch",
            "parameters": {"command": ["google-chrome", "--remote-debugging-port=1337", first]},
        },
        {
            "type": "launch",
            "parameters": {"command": ["socat", "tcp-listen:9222,fork", "tcp:localhost:1337"]},
        },
        # Chromium runs already: the URL opens as its tab (not in a second Chromium).
        {"type": "open", "parameters": {"path": third}},
        {"type": "chrome_open_tabs", "parameters": {"urls_to_open": [second]}},
        {"type": "activate_window", "parameters": {"window_name": "chromium", "by_class": True}},
        # OSWorld's tasks name Chrome's window; Chromium's is found for it.
        {"type": "activate_window", "parameters": {"window_name": "Google Chrome"}},
    ]
    expects_first = _task(tmp_path, config, first)
    with TaskEnvironment(width=1024, height=700, workdir=tmp_path) as environment:
        environment.reset(rollout_task(expects_first)).close()
        context = environment.context
        assert context.devtools_port not in (None, 1337, 9222)

        # In the order Playwright lists them, as OSWorld's open_tabs_info.
        tabs = GETTERS["open_tabs_info"].fetch(context, {})
        assert sorted((t["url"], t["title"]) for t in tabs) == [
            (first, "First page"),
            (second, "Second page"),
            (third, "Third page"),
        ]
        assert GETTERS["active_url_from_accessTree"].fetch(context, {}) == second
        info = GETTERS["active_tab_info"].fetch(context, {})
        assert info["title"] == "Second page"
        assert "Second page body" in info["content"]
        page = GETTERS["page_info"].fetch(context, {"url": first})
        assert page["title"] == "First page"
        assert page["url"] == first
        assert evaluate(expects_first, context, failed_on_purpose=False).score == 0.0

        # The user switches to the first tab (Ctrl+1 on the display): the getters follow.
        env = {**os.environ, "DISPLAY": context.display}
        subprocess.run(["xdotool", "key", "ctrl+1"], env=env, check=True)
        deadline = time.monotonic() + 10
        while GETTERS["active_url_from_accessTree"].fetch(context, {}) != first:
            assert time.monotonic() < deadline, "the tab switch never showed"
            time.sleep(0.1)
        assert evaluate(expects_first, context, failed_on_purpose=False).score == 1.0


def test_no_chromium_reads_as_none(tmp_path: Path) -> None:
    task = _task(tmp_path, [], "file:///x")
    with TaskEnvironment(width=640, height=480, workdir=tmp_path) as environment:
        environment.reset(rollout_task(task)).close()
        context = environment.context
        assert GETTERS["active_tab_info"].fetch(context, {}) is None
        assert GETTERS["open_tabs_info"].fetch(context, {}) is None
        assert evaluate(task, context, failed_on_purpose=False).score == 0.0
