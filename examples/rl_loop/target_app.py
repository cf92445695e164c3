"""A desktop app for the RL example: one window filling the display, a green target,
and a log of every click (JSON lines), which the reward function reads.

    python target_app.py LOG WIDTH HEIGHT LEFT TOP RIGHT BOTTOM

Its own process on the X display it is given (DISPLAY), so that the session drives a
real app through XTest, and the reward reads what the app itself received.
"""

from __future__ import annotations

import json
import sys
import tkinter as tk
from pathlib import Path


def main(argv: list[str]) -> None:
    log = Path(argv[0])
    width, height, left, top, right, bottom = (int(v) for v in argv[1:7])

    def write(record: dict[str, object]) -> None:
        with log.open("a", encoding="utf-8") as out:
            out.write(json.dumps(record) + "\n")

    root = tk.Tk()
    root.overrideredirect(True)  # no decorations: window pixels are screen pixels
    root.geometry(f"{width}x{height}+0+0")
    canvas = tk.Canvas(root, width=width, height=height, bg="white", highlightthickness=0)
    canvas.pack()
    canvas.create_rectangle(left, top, right, bottom, fill="#2e9e44", outline="")
    canvas.create_text((left + right) // 2, (top + bottom) // 2, text="OK", fill="white")

    def clicked(event: tk.Event) -> None:
        write({"type": "click", "x": event.x_root, "y": event.y_root, "button": event.num})

    root.bind_all("<ButtonPress>", clicked)
    root.after(200, lambda: write({"type": "ready"}))
    root.mainloop()


if __name__ == "__main__":
    main(sys.argv[1:])
