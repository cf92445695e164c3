"""A Tk window that logs every input event it receives, as JSON lines.

Usage: python probe_app.py LOG_PATH [--x X --y Y]

Records (one JSON object per line, "type" first):
  ready     once mapped: each widget's root-window geometry and the colours used
  press / release   ButtonPress / ButtonRelease: num (1-3, wheel 4-7, back 8, forward 9),
                    state, x_root, y_root, widget, time
  multi     Tk recognised a double or triple click: count, num, widget
  motion    Motion: state (Button1Mask = 0x100 while button 1 is held), x_root, y_root
  key / keyup       KeyPress / KeyRelease: keysym, char, keycode, state, widget, time
                    (time: the X server's timestamp in ms, CLOCK_MONOTONIC mod 2**32)
  wheel     MouseWheel (Tk 8.7+ turns buttons 4-7 into these): delta, state
  focus     FocusIn: widget
  command   the OK button was invoked
  entry     the Entry's text changed: text
  area      the multi-line Text's content changed: text
  reset     the file LOG_PATH.reset appeared (checked every 50 ms; removed here): both
            text fields were emptied (entry/area records follow) and the window took
            the keyboard focus back, so one window can serve many test cases
No window manager is needed: the window goes where it is told. Under one, the
ready record waits until the window has stayed put (a reparenting one frames it,
and moves it by its title bar, after it is first visible).
"""

from __future__ import annotations

import argparse
import json
import os
import time
import tkinter as tk
from typing import Any, TextIO

WIDTH, HEIGHT = 600, 400
SWATCH_COLOR = "#ff8000"
CANVAS_COLOR = "#2060c0"
WINDOW_COLOR = "#e0e0e0"
# How long the window must stay put under a window manager before it is announced.
STILL_S = 0.3
SETTLE_LIMIT_S = 5.0
POLL_S = 0.02


class Probe:
    def __init__(self, root: tk.Tk, log: TextIO) -> None:
        self.root = root
        self.log = log
        root.configure(background=WINDOW_COLOR)
        self.text = tk.StringVar(root)
        self.widgets: dict[str, tk.Widget] = {
            "ok": tk.Button(root, name="ok", text="OK", command=self.on_command),
            "entry": tk.Entry(root, name="entry", textvariable=self.text),
            "swatch": tk.Frame(root, name="swatch", background=SWATCH_COLOR),
            "canvas": tk.Canvas(root, name="canvas", background=CANVAS_COLOR, highlightthickness=0),
            "label": tk.Label(root, name="label", text="holodesk probe", background=WINDOW_COLOR),
            "area": tk.Text(root, name="area", highlightthickness=0),
        }
        # place(): fixed pixel geometry, so tests can aim without layout surprises.
        places = {
            "ok": (10, 10, 80, 32),
            "entry": (100, 10, 300, 32),
            "swatch": (420, 10, 60, 40),
            "label": (490, 10, 100, 32),
            "canvas": (10, 60, 580, 230),
            "area": (10, 300, 580, 90),
        }
        for name, (x, y, width, height) in places.items():
            self.widgets[name].place(x=x, y=y, width=width, height=height)
        self.text.trace_add("write", self.on_text)
        self.widgets["area"].bind("<<Modified>>", self.on_area, add=True)
        self.bind_events()

    def bind_events(self) -> None:
        # bind_all: every widget's "all" tag, so nothing escapes the log.
        self.root.bind_all("<ButtonPress>", self.pointer("press"), add=True)
        self.root.bind_all("<ButtonRelease>", self.pointer("release"), add=True)
        self.root.bind_all("<Motion>", self.pointer("motion"), add=True)
        self.root.bind_all("<KeyPress>", self.key("key"), add=True)
        self.root.bind_all("<KeyRelease>", self.key("keyup"), add=True)
        self.root.bind_all("<MouseWheel>", self.wheel, add=True)
        self.root.bind_all("<FocusIn>", self.focus, add=True)
        # Double/Triple on the widgets' own tags: on the "all" tag they would
        # shadow the plain <ButtonPress> binding for repeated presses.
        for name in ("ok", "entry", "canvas"):
            widget = self.widgets[name]
            widget.bind("<Double-ButtonPress>", self.multi(2), add=True)
            widget.bind("<Triple-ButtonPress>", self.multi(3), add=True)
        # Deterministic keyboard focus without a window manager.
        for name in ("entry", "area"):
            self.widgets[name].bind("<ButtonPress-1>", self.focus_on_click, add=True)

    def write(self, record: dict[str, Any]) -> None:
        self.log.write(json.dumps(record, ensure_ascii=False) + "\n")
        self.log.flush()

    @staticmethod
    def name(widget: Any) -> str:
        # Tk passes a widget object, or its path name for some internal windows.
        return str(widget).lstrip(".") or "root"

    def pointer(self, kind: str) -> Any:
        def handler(event: tk.Event[Any]) -> None:
            record: dict[str, Any] = {"type": kind}
            if kind != "motion":
                record["num"] = event.num
            record.update(
                state=int(event.state),
                x_root=event.x_root,
                y_root=event.y_root,
                widget=self.name(event.widget),
                time=event.time,
            )
            self.write(record)

        return handler

    def key(self, kind: str) -> Any:
        def handler(event: tk.Event[Any]) -> None:
            self.write(
                {
                    "type": kind,
                    "keysym": event.keysym,
                    "char": event.char,
                    "keycode": event.keycode,
                    "state": int(event.state),
                    "widget": self.name(event.widget),
                    "time": event.time,
                }
            )

        return handler

    def multi(self, count: int) -> Any:
        def handler(event: tk.Event[Any]) -> None:
            self.write(
                {
                    "type": "multi",
                    "count": count,
                    "num": event.num,
                    "widget": self.name(event.widget),
                }
            )

        return handler

    def wheel(self, event: tk.Event[Any]) -> None:
        self.write(
            {
                "type": "wheel",
                "delta": event.delta,
                "state": int(event.state),
                "widget": self.name(event.widget),
            }
        )

    def focus(self, event: tk.Event[Any]) -> None:
        self.write({"type": "focus", "widget": self.name(event.widget)})

    def focus_on_click(self, event: tk.Event[Any]) -> None:
        event.widget.focus_force()

    def on_command(self) -> None:
        self.write({"type": "command", "widget": "ok"})

    def on_text(self, *_: object) -> None:
        self.write({"type": "entry", "text": self.text.get()})

    def on_area(self, event: tk.Event[Any]) -> None:
        # <<Modified>> fires once until the flag is cleared; clearing it fires again.
        area = self.widgets["area"]
        assert isinstance(area, tk.Text)
        if area.edit_modified():
            self.write({"type": "area", "text": area.get("1.0", "end-1c")})
            area.edit_modified(False)

    def watch_for_reset(self, path: str) -> None:
        """Empty both fields and take the focus back whenever `path` appears (then remove it)."""
        if os.path.exists(path):
            os.remove(path)
            self.text.set("")
            area = self.widgets["area"]
            assert isinstance(area, tk.Text)
            area.delete("1.0", "end")
            self.root.focus_force()
            self.root.update()  # the fields' and focus's records go first
            self.write({"type": "reset"})
        self.root.after(50, self.watch_for_reset, path)

    def announce(self) -> None:
        """Write the ready record with every widget's geometry in root coordinates."""
        self.root.update_idletasks()
        geometry = {
            name: {
                "x": widget.winfo_rootx(),
                "y": widget.winfo_rooty(),
                "width": widget.winfo_width(),
                "height": widget.winfo_height(),
            }
            for name, widget in {"window": self.root, **self.widgets}.items()
        }
        self.write(
            {
                "type": "ready",
                "widgets": geometry,
                "colors": {"swatch": SWATCH_COLOR, "canvas": CANVAS_COLOR, "window": WINDOW_COLOR},
            }
        )


def window_manager_runs() -> bool:
    """Whether an EWMH window manager runs on this display (it may move the window)."""
    from Xlib.display import Display

    display = Display()
    try:
        root = display.screen().root
        check = display.intern_atom("_NET_SUPPORTING_WM_CHECK")
        return root.get_full_property(check, 0) is not None
    finally:
        display.close()


def settle(root: tk.Tk) -> None:
    """Wait until the window has stayed put for STILL_S (at most SETTLE_LIMIT_S).

    A reparenting window manager (KWin with a decoration, mutter, openbox) can
    frame the window, and move it down by its title bar, after the window is
    first visible; the ready record must say where it ended up.
    """
    deadline = time.monotonic() + SETTLE_LIMIT_S
    last = (root.winfo_rootx(), root.winfo_rooty())
    still_since = time.monotonic()
    while time.monotonic() < deadline:
        time.sleep(POLL_S)
        root.update()
        now = (root.winfo_rootx(), root.winfo_rooty())
        if now != last:
            last, still_since = now, time.monotonic()
        elif time.monotonic() - still_since >= STILL_S:
            return


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("log", help="file to append JSON-line event records to")
    parser.add_argument("--x", type=int, default=40)
    parser.add_argument("--y", type=int, default=30)
    args = parser.parse_args()
    with open(args.log, "a", encoding="utf-8") as log:
        root = tk.Tk(className="HolodeskProbe")
        root.title("holodesk probe")
        root.geometry(f"{WIDTH}x{HEIGHT}+{args.x}+{args.y}")
        probe = Probe(root, log)
        root.wait_visibility(root)
        # After the first Expose everything is drawn, so captures see real pixels.
        root.update()
        if window_manager_runs():
            settle(root)
        probe.announce()
        probe.watch_for_reset(args.log + ".reset")
        root.mainloop()


if __name__ == "__main__":
    main()
