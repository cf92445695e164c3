"""What a test page logged (tests/support/web_site.py), also as a conformance target."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any, Literal

from holodesk.platform.base import MouseButton, Region
from holodesk.platform.web.backend import WebBackend
from tests.platform.conformance import Field, Key, Motion, Observed, Press, Target, Wheel

Event = dict[str, Any]


def events(backend: WebBackend, *types: str) -> list[Event]:
    """The page's logged events, optionally only those of the given types."""
    logged: list[Event] = backend.page.evaluate("window.events")
    return [e for e in logged if not types or e["type"] in types]


def wait_for(check: Callable[[], Any], what: str, timeout_s: float = 10.0) -> Any:
    """Poll until check() is truthy (for effects the page applies asynchronously)."""
    deadline = time.monotonic() + timeout_s
    while True:
        value = check()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.05)


# -- the events page as a conformance target (tests/platform/conformance.py) -------------------
_DOM_BUTTONS = {0: MouseButton.LEFT, 1: MouseButton.MIDDLE, 2: MouseButton.RIGHT,
                3: MouseButton.BACK, 4: MouseButton.FORWARD}  # fmt: skip
_DOM_KEYS = {"Control": "ctrl", "Shift": "shift", "Alt": "alt", "Meta": "meta", "Enter": "enter"}
# By `code`, for keys whose `key` is shared: the right modifiers, the keypad.
_DOM_CODES = {
    **{f"{key}Right": f"{name}_r" for key, name in
       (("Control", "ctrl"), ("Shift", "shift"), ("Alt", "alt"), ("Meta", "meta"))},
    **{f"Numpad{n}": f"kp_{n}" for n in range(10)},
    "NumpadEnter": "kp_enter", "NumpadAdd": "kp_add", "NumpadSubtract": "kp_subtract",
    "NumpadMultiply": "kp_multiply", "NumpadDivide": "kp_divide", "NumpadDecimal": "kp_decimal",
    "AudioVolumeMute": "volume_mute", "AudioVolumeDown": "volume_down",
    "AudioVolumeUp": "volume_up", "MediaPlayPause": "media_play_pause", "MediaStop": "media_stop",
    "MediaTrackNext": "media_next", "MediaTrackPrevious": "media_previous",
    "BrowserBack": "browser_back", "BrowserForward": "browser_forward",
    "BrowserRefresh": "browser_refresh", "BrowserStop": "browser_stop",
    "BrowserSearch": "browser_search", "BrowserFavorites": "browser_favorites",
    "BrowserHome": "browser_home",
}  # fmt: skip
_FIELDS: dict[str, str] = {"line": "field", "lines": "area"}
# The back and forward buttons move the tab through its history on release unless
# the page cancels that; cancelled here, so checks read the page they clicked on
# (test_web_input.py checks the navigation itself).
_KEEP_PAGE = """window.addEventListener("mouseup", (e) => {
  if (e.button === 3 || e.button === 4) e.preventDefault();
})"""


class WebTarget(Target):
    """events.html of the test site at scale 1, where CSS pixels are the backend's pixels."""

    def __init__(self, backend: WebBackend) -> None:
        super().__init__(backend)
        self.web = backend
        backend.page.evaluate(_KEEP_PAGE)

    def _box(self, element: str) -> Region:
        box = self.web.page.evaluate(
            f"(() => {{ const r = document.getElementById('{element}').getBoundingClientRect();"
            " return [r.left, r.top, r.width, r.height]; })()"
        )
        return Region(*(round(value) for value in box))

    def pad(self) -> Region:
        return self._box("pad")

    def push_button(self) -> tuple[int, int]:
        box = self._box("go")
        return box.x + box.width // 2, box.y + box.height // 2

    def pushed(self) -> bool:
        return bool(self.web.page.evaluate("document.title") == "clicked")

    def focus(self, field: Field) -> None:
        self.web.page.evaluate(
            f"(() => {{ const e = document.getElementById('{_FIELDS[field]}');"
            " e.value = ''; e.focus(); })()"
        )

    def text(self, field: Field) -> str:
        value: str = self.web.page.evaluate(f"document.getElementById('{_FIELDS[field]}').value")
        return value

    def observed(self) -> list[Observed]:
        out: list[Observed] = []
        for e in events(self.web, "mousedown", "mouseup", "mousemove", "wheel", "keydown", "keyup"):
            held = frozenset(m for m in ("ctrl", "shift", "alt", "meta") if e[m])
            kind = e["type"]
            if kind in ("mousedown", "mouseup"):
                press: Literal["press", "release"] = "press" if kind == "mousedown" else "release"
                count = e["detail"] if kind == "mousedown" else 1
                out.append(Press(press, _DOM_BUTTONS[e["button"]], e["x"], e["y"], held, count))
            elif kind == "mousemove":
                out.append(Motion(e["x"], e["y"], bool(e["buttons"] & 1)))
            elif kind == "wheel":
                out.append(Wheel(_sign(e["deltaX"]), _sign(e["deltaY"])))
            else:
                key = _DOM_CODES.get(e["code"]) or _DOM_KEYS.get(e["key"]) or str(e["key"])
                out.append(Key("down" if kind == "keydown" else "up", key, held))
        return out


def _sign(value: float) -> int:
    return (value > 0) - (value < 0)
