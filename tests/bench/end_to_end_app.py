"""A full-screen Tk window for the end-to-end benchmark: a code editor and a blank panel.

Usage: python end_to_end_app.py

Left, an editor (a Text widget) full of syntax-coloured code in an anti-aliased
font, holding the keyboard focus, its caret not blinking (an idle screen is really
unchanged); below it a status bar. A click in the editor moves the caret and the
status bar counts it (the screen changes a little, as after most clicks); a click
on the blank panel on the right changes nothing (an unchanged screen). Once mapped,
the app prints one JSON line to stdout: {"editor": [x, y, w, h], "panel": [x, y, w,
h], "screen": [w, h]} (root coordinates).
"""

from __future__ import annotations

import json
import random
import tkinter as tk

FONT = ("DejaVu Sans Mono", 10)
COLOURS = {
    "keyword": "#c678dd",
    "name": "#61afef",
    "string": "#98c379",
    "number": "#d19a66",
    "comment": "#5c6370",
    "plain": "#abb2bf",
}
NAMES = ("session", "frame", "decode", "resize", "window", "engine", "policy", "delta", "cache")


def code(rng: random.Random, lines: int) -> list[list[tuple[str, str]]]:
    result = []
    for _ in range(lines):
        indent = "    " * rng.randint(0, 3)
        if rng.random() < 0.15:
            words = " ".join(rng.choice(NAMES) for _ in range(rng.randint(3, 8)))
            result.append([(f"{indent}# {words}", "comment")])
            continue
        result.append(
            [
                (indent, "plain"),
                (rng.choice(("def ", "return ", "await ", "if ")), "keyword"),
                (rng.choice(NAMES), "name"),
                (" = ", "plain"),
                (f'"{rng.choice(NAMES)}-{rng.randint(0, 999)}"', "string"),
                (", ", "plain"),
                (str(rng.randint(0, 65535)), "number"),
            ]
        )
    return result


class App:
    def __init__(self, root: tk.Tk) -> None:
        self.root = root
        width, height = root.winfo_screenwidth(), root.winfo_screenheight()
        root.geometry(f"{width}x{height}+0+0")
        root.configure(background="#21252b")
        self.clicks = 0
        self.status = tk.Label(
            root, text="ready", font=FONT, anchor=tk.W, background="#007acc", foreground="white"
        )
        self.status.pack(side=tk.BOTTOM, fill=tk.X)
        self.panel = tk.Frame(root, width=width // 4, background="#e8eaed")
        self.panel.pack(side=tk.RIGHT, fill=tk.Y)
        self.editor = tk.Text(
            root,
            font=FONT,
            background="#282c34",
            foreground=COLOURS["plain"],
            insertbackground="#528bff",
            insertofftime=0,
            borderwidth=0,
            wrap=tk.NONE,
        )
        self.editor.pack(side=tk.LEFT, fill=tk.BOTH, expand=True)
        for tag, colour in COLOURS.items():
            self.editor.tag_configure(tag, foreground=colour)
        for line in code(random.Random(3), height // 12 + 10):
            for text, tag in line:
                self.editor.insert(tk.END, text, tag)
            self.editor.insert(tk.END, "\n")
        self.editor.bind("<ButtonRelease-1>", self.clicked, add=True)
        self.editor.focus_force()
        root.after(300, self.report_ready)

    def clicked(self, _event: tk.Event) -> None:
        self.clicks += 1
        line, column = self.editor.index(tk.INSERT).split(".")
        self.status.configure(text=f"clicks {self.clicks}   Ln {line}, Col {int(column) + 1}")

    def report_ready(self) -> None:
        self.root.update_idletasks()

        def box(widget: tk.Widget) -> list[int]:
            return [
                widget.winfo_rootx(),
                widget.winfo_rooty(),
                widget.winfo_width(),
                widget.winfo_height(),
            ]

        screen = [self.root.winfo_screenwidth(), self.root.winfo_screenheight()]
        print(
            json.dumps({"editor": box(self.editor), "panel": box(self.panel), "screen": screen}),
            flush=True,
        )


def main() -> None:
    root = tk.Tk()
    App(root)
    root.mainloop()


if __name__ == "__main__":
    main()
