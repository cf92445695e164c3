"""Browser set-up steps on the task's Chromium (chromium.py)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from holodesk.client.eval.tasks import chromium
from holodesk.client.eval.tasks.context import TaskContext
from holodesk.client.eval.tasks.kinds import Step


def chrome_open_tabs(context: TaskContext, parameters: Mapping[str, Any]) -> None:
    chromium.open_tabs(context, [str(u) for u in parameters["urls_to_open"]])


def _check_urls(parameters: Mapping[str, Any]) -> str:
    urls = parameters.get("urls_to_open")
    if isinstance(urls, list) and urls and all(isinstance(u, str) for u in urls):
        return ""
    return f"`urls_to_open` must be a non-empty list of URLs, got {urls!r}"


STEPS: Mapping[str, Step] = {
    "chrome_open_tabs": Step(chrome_open_tabs, ("urls_to_open",), _check_urls),
}
