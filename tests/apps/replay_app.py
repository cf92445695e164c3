"""A small Tk form whose look is set on the command line, for replay tests.

Usage: python replay_app.py [--accent COLOR] [--x X --y Y]

An Entry and a "Greet" button; pressing it shows a large panel in the accent
colour with a greeting. Starting it with another --accent is "the app changed":
only the screen after the press differs. Everything that would make two runs
differ by itself is switched off: the caret does not blink, the button has no
hover look. Prints "ready" on stdout once drawn.
"""

from __future__ import annotations

import argparse
import tkinter as tk

WIDTH, HEIGHT = 560, 360
BACKGROUND = "#f0f0f0"
FONT = ("DejaVu Sans", 16)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--accent", default="#2060c0")
    parser.add_argument("--x", type=int, default=40)
    parser.add_argument("--y", type=int, default=30)
    args = parser.parse_args()

    root = tk.Tk(className="HolodeskReplay")
    root.geometry(f"{WIDTH}x{HEIGHT}+{args.x}+{args.y}")
    root.configure(background=BACKGROUND)
    name = tk.StringVar(root)
    entry = tk.Entry(root, textvariable=name, font=FONT, insertofftime=0, highlightthickness=0)
    entry.place(x=20, y=20, width=300, height=40)
    # No window manager gives focus: take it on a click, as the probe app does.
    entry.bind("<ButtonPress-1>", lambda _event: entry.focus_force(), add=True)
    panel = tk.Label(root, text="", font=FONT, background=args.accent, foreground="#ffffff")

    def greet() -> None:
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
    print("ready", flush=True)
    root.mainloop()


if __name__ == "__main__":
    main()
