"""The demo's target: a small Tk form that reports what it received.

Run as `python -m holodesk.client.demo.form_app STATE_FILE`. Every change of the
form is written to STATE_FILE as JSON, so the demo can show what the app actually
received rather than what the agent meant to do.
"""

from __future__ import annotations

import json
import sys
import tkinter as tk
from pathlib import Path

FONT = ("DejaVu Sans", 20)


class FormApp:
    def __init__(self, root: tk.Tk, state_file: Path) -> None:
        self._state_file = state_file
        self._submitted: str | None = None
        root.title("holodesk demo")
        root.geometry("900x520+60+60")
        root.configure(background="white")
        frame = tk.Frame(root, background="white", padx=40, pady=40)
        frame.pack(fill="both", expand=True)
        tk.Label(frame, text="Sign up", font=("DejaVu Sans", 28, "bold"), bg="white").grid(
            row=0, column=0, columnspan=2, sticky="w", pady=(0, 30)
        )
        tk.Label(frame, text="Name", font=FONT, bg="white").grid(row=1, column=0, sticky="w")
        self._name = tk.StringVar()
        self._name.trace_add("write", lambda *_: self._save())
        entry = tk.Entry(frame, textvariable=self._name, font=FONT, width=24)
        entry.grid(row=1, column=1, padx=(24, 0), sticky="w")
        entry.bind("<Button-1>", lambda _event: entry.focus_force())
        tk.Button(frame, text="Submit", font=FONT, command=self._submit).grid(
            row=2, column=1, sticky="w", padx=(24, 0), pady=(30, 0)
        )
        self._message = tk.Label(frame, text="", font=FONT, bg="white")
        self._message.grid(row=3, column=0, columnspan=2, sticky="w", pady=(30, 0))
        self._save()

    def _submit(self) -> None:
        self._submitted = self._name.get()
        self._message.configure(text=f"Thanks, {self._submitted}!")
        self._save()

    def _save(self) -> None:
        state = {"name": self._name.get(), "submitted": self._submitted}
        tmp = self._state_file.with_suffix(".tmp")
        tmp.write_text(json.dumps(state, ensure_ascii=False))
        tmp.replace(self._state_file)


def main() -> None:
    if len(sys.argv) != 2:
        raise SystemExit("usage: python -m holodesk.client.demo.form_app STATE_FILE")
    root = tk.Tk()
    FormApp(root, Path(sys.argv[1]))
    root.mainloop()


if __name__ == "__main__":
    main()
