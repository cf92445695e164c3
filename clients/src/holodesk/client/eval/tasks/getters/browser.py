"""Browser getters, read from the task's Chromium over its DevTools port (chromium.py):
the active tab's URL and contents, a page's info, the open tabs. Without a running
Chromium they give None, which the metrics score 0."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from holodesk.client.eval.tasks import chromium
from holodesk.client.eval.tasks.context import TaskContext
from holodesk.client.eval.tasks.kinds import Getter


def active_url_from_accessTree(context: TaskContext, spec: Mapping[str, Any]) -> str | None:  # noqa: N802 (OSWorld's name)
    found = chromium.tabs(context)
    tab = chromium.active(found or [])
    return None if tab is None else tab.url


def active_tab_info(context: TaskContext, spec: Mapping[str, Any]) -> dict[str, str] | None:
    found = chromium.tabs(context, content=True)
    tab = chromium.active(found or [])
    return None if tab is None else {"title": tab.title, "url": tab.url, "content": tab.content}


def page_info(context: TaskContext, spec: Mapping[str, Any]) -> dict[str, str] | None:
    return chromium.page_info(context, str(spec["url"]))


def open_tabs_info(context: TaskContext, spec: Mapping[str, Any]) -> list[dict[str, str]] | None:
    found = chromium.tabs(context)
    return None if found is None else [{"title": t.title, "url": t.url} for t in found]


GETTERS: Mapping[str, Getter] = {
    "active_url_from_accessTree": Getter(active_url_from_accessTree),
    "active_tab_info": Getter(active_tab_info),
    "page_info": Getter(page_info, ("url",)),
    "open_tabs_info": Getter(open_tabs_info),
}
