"""What a web page in the task's Chromium holds right now: its text and its form
values, read over the DevTools port (chromium.py) in place, nothing reloaded.

OSWorld's `active_tab_info` gives the page's HTML, which does not hold what a user
typed (an input's value is a property, not an attribute) nor a ticked box; these two
getters read the live page for the bundled suite's browser tasks:

- `active_tab_text`: the active tab's `document.body.innerText` (what it shows);
- `active_tab_form_values`: `{key: value}` for every input, select and textarea of the
  active tab, keyed by `id`, else `name` (a checkbox or radio: whether it is ticked;
  a select: its value). Fields with neither are left out.

Both give None when the task has no Chromium (the metric then scores 0).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from holodesk.client.eval.tasks import chromium
from holodesk.client.eval.tasks.context import TaskContext
from holodesk.client.eval.tasks.kinds import Getter

_STATE = "() => [document.title, location.href, document.visibilityState, document.hasFocus()]"
_TEXT = "() => document.body ? document.body.innerText : ''"
_FORM_VALUES = """() => {
  const values = {};
  for (const field of document.querySelectorAll('input, select, textarea')) {
    const key = field.id || field.name;
    if (!key) continue;
    const kind = (field.type || '').toLowerCase();
    values[key] = (kind === 'checkbox' || kind === 'radio') ? field.checked : field.value;
  }
  return values;
}"""


def _read_active(context: TaskContext, script: str) -> Any:
    """Run `script` in the active tab (chromium.active's choice); None without a
    running Chromium or an open tab."""
    if context.devtools_port is None:
        return None
    from playwright.sync_api import Error, sync_playwright

    with sync_playwright() as playwright:
        try:
            browser = playwright.chromium.connect_over_cdp(
                f"http://127.0.0.1:{context.devtools_port}", timeout=10_000
            )
        except Error:
            return None
        pages = [
            page
            for browser_context in browser.contexts
            for page in browser_context.pages
            if not page.url.startswith(("devtools://", "chrome-extension://"))
        ]
        tabs = []
        for page in pages:
            title, url, visibility, focused = page.evaluate(_STATE)
            tabs.append(chromium.Tab(str(title), str(url), visibility == "visible", bool(focused)))
        tab = chromium.active(tabs)
        if tab is None:
            return None
        return pages[tabs.index(tab)].evaluate(script)


def active_tab_text(context: TaskContext, spec: Mapping[str, Any]) -> str | None:
    text = _read_active(context, _TEXT)
    return None if text is None else str(text)


def active_tab_form_values(context: TaskContext, spec: Mapping[str, Any]) -> dict[str, Any] | None:
    values = _read_active(context, _FORM_VALUES)
    return None if values is None else dict(values)


GETTERS: Mapping[str, Getter] = {
    "active_tab_text": Getter(active_tab_text),
    "active_tab_form_values": Getter(active_tab_form_values),
}
