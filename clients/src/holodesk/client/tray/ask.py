"""Asking the user for a task: a small Tk window in its own process.

`python -m holodesk.client.tray.ask` prints the task and exits 0, or exits 1 when
the user cancels. A separate process keeps Tk's main loop away from the tray's.
"""

from __future__ import annotations

import subprocess
import sys
import tkinter as tk

TITLE = "holodesk: new task"


def ask_in_subprocess(timeout_s: float = 600.0) -> str | None:
    """The task the user typed, or None (cancelled, closed, timed out, no display)."""
    try:
        done = subprocess.run(
            [sys.executable, "-m", "holodesk.client.tray.ask"],
            capture_output=True,
            text=True,
            timeout=timeout_s,
            check=False,
        )
    except subprocess.TimeoutExpired:
        return None
    task = done.stdout.strip()
    return task if done.returncode == 0 and task else None


def main() -> int:
    try:
        root = tk.Tk()
    except tk.TclError as error:
        print(f"holodesk tray: cannot open a window: {error}", file=sys.stderr)
        return 2
    root.title(TITLE)
    answer: list[str] = []

    def accept(_event: object = None) -> None:
        answer.append(entry.get())
        root.destroy()

    tk.Label(root, text="What should the agent do?").pack(padx=12, pady=(12, 4), anchor="w")
    entry = tk.Entry(root, width=60)
    entry.pack(padx=12, pady=4)
    buttons = tk.Frame(root)
    buttons.pack(padx=12, pady=(4, 12), anchor="e")
    tk.Button(buttons, text="Cancel", command=root.destroy).pack(side="right")
    tk.Button(buttons, text="Start", command=accept).pack(side="right", padx=6)
    root.bind("<Return>", accept)
    root.bind("<Escape>", lambda _event: root.destroy())
    entry.focus_force()
    root.mainloop()
    if not answer or not answer[0].strip():
        return 1
    print(answer[0].strip())
    return 0


if __name__ == "__main__":
    sys.exit(main())
