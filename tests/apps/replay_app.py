"""A small Tk form whose look is set on the command line, for replay tests.

Usage: python replay_app.py [--accent COLOR] [--x X --y Y] [--state FILE]

An Entry and a "Greet" button; pressing it shows a large panel in the accent
colour with a greeting. Starting it with another --accent is "the app changed":
only the screen after the press differs. Everything that would make two runs
differ by itself is switched off: the caret does not blink, the button has no
hover look. Prints "ready" on stdout once drawn. With --state, every change of
the field and every greeting is written to FILE as JSON ({"name", "greeted"}), so a
test can check what the app received, not only what the screen shows.
"""

from __future__ import annotations

import argparse
import json
import tkinter as tk
from pathlib import Path

WIDTH, HEIGHT = 560, 360
BACKGROUND = "#f0f0f0"
FONT = ("DejaVu Sans", 16)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--accent", default="#2060c0")
    parser.add_argument("--x", type=int, default=40)
    parser.add_argument("--y", type=int, default=30)
    parser.add_argument("--state", type=Path, help="write what the app received here")
    args = parser.parse_args()

    root = tk.Tk(className="HolodeskReplay")
    root.geometry(f"{WIDTH}x{HEIGHT}+{args.x}+{args.y}")
    root.configure(background=BACKGROUND)
    name = tk.StringVar(root)
    greetings: list[str] = []

    def save() -> None:
        if args.state is not None:
            state = {"name": name.get(), "greeted": greetings}
            partial = args.state.with_suffix(".tmp")
            partial.write_text(json.dumps(state, ensure_ascii=False), encoding="utf-8")
            partial.replace(args.state)

    name.trace_add("write", lambda *_: save())
    entry = tk.Entry(root, textvariable=name, font=FONT, insertofftime=0, highlightthickness=0)
    entry.place(x=20, y=20, width=300, height=40)
    # No window manager gives focus: take it on a click, as the probe app does.
    entry.bind("<ButtonPress-1>", lambda _event: entry.focus_force(), add=True)
    panel = tk.Label(root, text="", font=FONT, background=args.accent, foreground="#ffffff")

    def greet() -> None:
        greetings.append(name.get())
        save()
        panel.configure(text=f"Hello, {name.get()}!")
        panel.place(x=20, y=90, width=520, height=240)

    button = tk.Button(
        root,
        text="Greet",
        font=FONT,
        command=greet,
        relief="flat",
        background="#d0d0d0",
        activebackground="#d0d0d0",
        highlightthickness=0,
    )
    button.place(x=340, y=20, width=120, height=40)
    root.wait_visibility(root)
    root.update()
    save()
    print("ready", flush=True)
    root.mainloop()


if __name__ == "__main__":
    main()
