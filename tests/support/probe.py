"""Drive tests/apps/probe_app.py: start it, read what it received, stop it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from holodesk.platform.processes import stop_process

PROBE_APP = Path(__file__).resolve().parent.parent / "apps" / "probe_app.py"

Event = dict[str, Any]

# X11 state-mask bits, as the probe logs them.
SHIFT_MASK, LOCK_MASK, CONTROL_MASK, MOD1_MASK, MOD4_MASK = 0x1, 0x2, 0x4, 0x8, 0x40
BUTTON1_MASK = 0x100


@dataclass(frozen=True)
class Widget:
    """A widget's rectangle in root-window (screen) coordinates."""

    x: int
    y: int
    width: int
    height: int

    @property
    def center(self) -> tuple[int, int]:
        return self.x + self.width // 2, self.y + self.height // 2

    def contains(self, x: int, y: int) -> bool:
        return self.x <= x < self.x + self.width and self.y <= y < self.y + self.height


class ProbeApp:
    """One running probe window and its event log."""

    def __init__(self, process: subprocess.Popen[bytes], log_path: Path, display: str = "") -> None:
        self._process = process
        self.log_path = log_path
        # The X display the window is on.
        self.display = display
        self.widgets: dict[str, Widget] = {}
        self.colors: dict[str, str] = {}

    @classmethod
    def start(
        cls, display: str, log_path: Path, x: int = 40, y: int = 30, timeout: float = 30.0
    ) -> ProbeApp:
        """Launch the app on `display` and wait for its ready record."""
        log_path.write_text("")
        env = {**os.environ, "DISPLAY": display}
        command = [sys.executable, str(PROBE_APP), str(log_path), "--x", str(x), "--y", str(y)]
        probe = cls(subprocess.Popen(command, env=env), log_path, display)
        try:
            ready = probe.wait_for(lambda events: _first(events, "ready") is not None, timeout)
        except BaseException:
            probe.stop()
            raise
        record = _first(ready, "ready")
        assert record is not None
        probe.widgets = {name: Widget(**box) for name, box in record["widgets"].items()}
        probe.colors = dict(record["colors"])
        return probe

    def events(self, kind: str | None = None) -> list[Event]:
        """Every record logged so far (only complete lines), optionally of one type."""
        records = read_json_lines(self.log_path)
        return [r for r in records if kind is None or r["type"] == kind]

    def wait_for(
        self, predicate: Callable[[list[Event]], bool], timeout: float = 10.0
    ) -> list[Event]:
        """Poll the log until `predicate(events)` holds; return the events then."""
        deadline = time.monotonic() + timeout
        while True:
            events = self.events()
            if predicate(events):
                return events
            if self._process.poll() is not None:
                raise RuntimeError(f"the probe app exited with {self._process.returncode}")
            if time.monotonic() > deadline:
                tail = "\n".join(json.dumps(e, ensure_ascii=False) for e in events[-15:])
                raise TimeoutError(
                    f"probe condition not met within {timeout}s; last events:\n{tail}"
                )
            time.sleep(0.02)

    def wait_for_event(self, kind: str, timeout: float = 10.0, **fields: Any) -> Event:
        """The first record of type `kind` whose fields equal `fields`, once it exists."""

        def matching(events: list[Event]) -> list[Event]:
            return [
                e
                for e in events
                if e["type"] == kind and all(e.get(k) == v for k, v in fields.items())
            ]

        return matching(self.wait_for(lambda events: bool(matching(events)), timeout))[0]

    def entry_text(self, widget: str = "entry") -> str:
        """The Entry's content (or the multi-line Text's: "area"), as of its last change."""
        changes = self.events(widget)
        return str(changes[-1]["text"]) if changes else ""

    def wait_for_entry(self, text: str, timeout: float = 10.0, widget: str = "entry") -> str:
        """Wait until the Entry (or "area") holds `text`; return what it holds then (or raise)."""
        self.wait_for(lambda _: self.entry_text(widget) == text, timeout)
        return self.entry_text(widget)

    def stop(self) -> None:
        stop_process(self._process)


def read_json_lines(path: Path) -> list[Event]:
    """The complete JSON lines of a log another process appends to (none if it is missing)."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return []
    lines = text.splitlines()
    if lines and not text.endswith("\n"):
        lines.pop()  # the writer is mid-line
    return [json.loads(line) for line in lines if line]


def _first(events: list[Event], kind: str) -> Event | None:
    return next((e for e in events if e["type"] == kind), None)


def wheel_notches(events: list[Event]) -> list[tuple[int, int]]:
    """Scroll notches (dx, dy) as the app saw them; dy > 0 is down, dx > 0 right.

    Tk 8.6 reports X buttons 6/7 as Shift + buttons 4/5; Tk 8.7+ reports all
    four as MouseWheel events. Both spellings are decoded.
    """
    notches: list[tuple[int, int]] = []
    for event in events:
        if event["type"] == "press" and event["num"] in (4, 5, 6, 7):
            number = event["num"]
            if number in (4, 5) and event["state"] & SHIFT_MASK:
                number += 2
            notches.append({4: (0, -1), 5: (0, 1), 6: (-1, 0), 7: (1, 0)}[number])
        elif event["type"] == "wheel":
            step = -1 if event["delta"] > 0 else 1
            horizontal = bool(event["state"] & SHIFT_MASK)
            notches.append((step, 0) if horizontal else (0, step))
    return notches


def server_key_names(events: list[Event], display_name: str) -> list[Event]:
    """The events, with each key Tk could not name ("??") named from the X server's
    keymap as it is now.

    Tk names a key from its own copy of the keymap, which can lag a server that maps
    a keysym onto a spare keycode as the key arrives (Xvnc does, for keysyms its
    keymap lacks, e.g. XF86Stop): the key did reach the app, on that keycode."""
    unnamed = {int(e["keycode"]) for e in events if e.get("keysym") == "??" and "keycode" in e}
    if not unnamed:
        return events
    from Xlib import XK
    from Xlib.display import Display

    XK.load_keysym_group("xf86")
    # python-xlib spells XF86 keysyms XK_XF86_Stop; X and Tk spell them XF86Stop.
    by_number = {
        v: k.removeprefix("XK_").replace("XF86_", "XF86")
        for k, v in vars(XK).items()
        if k.startswith("XK_")
    }
    display = Display(display_name)
    try:
        names = {code: by_number.get(display.keycode_to_keysym(code, 0), "??") for code in unnamed}
    finally:
        display.close()
    return [
        {**e, "keysym": names[int(e["keycode"])]} if e.get("keysym") == "??" else e for e in events
    ]
