"""A full-screen Tk window for the client pipeline benchmark: text-dense or sparse.

Usage: python pipeline_app.py {dense,sparse} WORDS_PATH

`dense` fills the screen with paragraphs of ordinary words in a small UI font
(an editor, a mail client, a docs page); `sparse` shows a settings-like form on
a plain background. Both have an entry that has the keyboard focus (steps type
into it) and a button that opens a dialog (Ctrl-D does too; Escape closes it).
The caret does not blink, so an idle screen is really unchanged. The words shown
are written to WORDS_PATH (one per line) so OCR can be scored against the truth.
Once the window is mapped the app prints one JSON line to stdout: {"entry": [x, y],
"button": [x, y]} (root-window centres).
"""

from __future__ import annotations

import json
import random
import sys
import tkinter as tk
from pathlib import Path

# Ordinary English words: OCR recall on them is meaningful (no code, no numbers).
_WORDS = (
    "the quick brown fox jumps over lazy dog report budget meeting window screen "
    "agent model frame client daemon policy session review summary invoice order "
    "customer account settings network printer folder document project schedule "
    "monday friday morning evening weather garden kitchen window market station "
    "travel ticket flight hotel dinner coffee letter answer question problem method "
    "result number system control button option select delete update create remove "
    "friendly careful simple quiet bright yellow purple orange silver golden"
)
VOCABULARY = tuple(_WORDS.split())
FONT = ("DejaVu Sans", 10)
BACKGROUND = "#f4f4f4"


def paragraphs(rng: random.Random, count: int) -> list[str]:
    return [
        " ".join(rng.choice(VOCABULARY) for _ in range(rng.randint(40, 90))) for _ in range(count)
    ]


class PipelineApp:
    def __init__(self, root: tk.Tk, kind: str, words_path: Path) -> None:
        self.root = root
        width, height = root.winfo_screenwidth(), root.winfo_screenheight()
        root.geometry(f"{width}x{height}+0+0")
        root.configure(background=BACKGROUND)
        bar = tk.Frame(root, background=BACKGROUND)
        bar.pack(side=tk.TOP, fill=tk.X, padx=8, pady=6)
        tk.Label(bar, text="Search", font=FONT, background=BACKGROUND).pack(side=tk.LEFT)
        self.entry = tk.Entry(bar, font=FONT, width=40, insertofftime=0)
        self.entry.pack(side=tk.LEFT, padx=6)
        self.button = tk.Button(bar, text="Open dialog", font=FONT, command=self.open_dialog)
        self.button.pack(side=tk.LEFT)
        self.dialog: tk.Toplevel | None = None
        self.dialog_ok: tk.Button | None = None
        root.bind_all("<Control-d>", lambda _event: self.open_dialog())
        root.bind_all("<Escape>", lambda _event: self.close_dialog())
        shown: list[str] = []
        rng = random.Random(7)
        if kind == "dense":
            text = tk.Text(root, font=FONT, wrap=tk.WORD, borderwidth=0, background="white")
            text.pack(side=tk.TOP, fill=tk.BOTH, expand=True, padx=8, pady=4)
            # Enough text to fill any screen up to 4K; only the visible part is scored.
            lines_needed = height // 12 + 10
            chars_per_line = max(40, width // 7)
            body = paragraphs(rng, lines_needed * chars_per_line // 400 + 4)
            text.insert("1.0", "\n\n".join(body))
            text.configure(state=tk.DISABLED)
            self.text: tk.Text | None = text
            shown = " ".join(body).split()
        else:
            self.text = None
            form = tk.Frame(root, background=BACKGROUND)
            form.pack(side=tk.TOP, anchor=tk.NW, padx=40, pady=40)
            for row, label in enumerate(("Display name", "Email address", "Time zone", "Language")):
                tk.Label(form, text=label, font=FONT, background=BACKGROUND).grid(
                    row=row, column=0, sticky=tk.W, pady=6
                )
                tk.Entry(form, font=FONT, width=30).grid(row=row, column=1, padx=12)
                shown.extend(label.lower().split())
            tk.Button(form, text="Save changes", font=FONT).grid(row=5, column=1, sticky=tk.E)
            shown.extend(["save", "changes"])
        words_path.write_text("\n".join(w.lower() for w in shown) + "\n", encoding="utf-8")
        self.entry.focus_force()
        root.after(200, self.report_ready)

    def open_dialog(self) -> None:
        if self.dialog is not None:
            return
        dialog = tk.Toplevel(self.root, background="white", borderwidth=2, relief=tk.RIDGE)
        x = self.root.winfo_screenwidth() // 2 - 200
        y = self.root.winfo_screenheight() // 2 - 90
        dialog.geometry(f"400x180+{x}+{y}")
        tk.Label(
            dialog,
            text="Save the changes to this document before closing?",
            font=FONT,
            background="white",
            wraplength=360,
        ).pack(padx=16, pady=24)
        self.dialog_ok = tk.Button(dialog, text="Save", font=FONT, command=self.close_dialog)
        self.dialog_ok.pack(pady=8)
        self.dialog = dialog

    def close_dialog(self) -> None:
        if self.dialog is not None:
            self.dialog.destroy()
            self.dialog = None
            self.dialog_ok = None

    def report_ready(self) -> None:
        self.root.update_idletasks()

        def centre(widget: tk.Widget) -> list[int]:
            return [
                widget.winfo_rootx() + widget.winfo_width() // 2,
                widget.winfo_rooty() + widget.winfo_height() // 2,
            ]

        print(json.dumps({"entry": centre(self.entry), "button": centre(self.button)}), flush=True)


def main() -> None:
    kind, words_path = sys.argv[1], Path(sys.argv[2])
    if kind not in ("dense", "sparse"):
        raise SystemExit(f"kind must be dense or sparse, not {kind!r}")
    root = tk.Tk()
    PipelineApp(root, kind, words_path)
    root.mainloop()


if __name__ == "__main__":
    main()
