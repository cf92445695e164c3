"""A Tk form whose label sits centred above its field, as many dialogs lay them out.

Run as `python message_app.py STATE_FILE`. "To" has its field beside it, "Message"
has its label centred over a wide field below it, then a Send button. Every change
is written to STATE_FILE as JSON ({"to", "message", "sent"}), so a test reads what
the app received, not what the agent meant to do. Prints "ready" once drawn.
"""

from __future__ import annotations

import json
import sys
import tkinter as tk
from pathlib import Path

FONT = ("DejaVu Sans", 18)


def main() -> None:
    if len(sys.argv) != 2:
        raise SystemExit("usage: python message_app.py STATE_FILE")
    state_file = Path(sys.argv[1])
    root = tk.Tk(className="HolodeskMessage")
    root.geometry("760x460+40+40")
    root.configure(background="white")
    frame = tk.Frame(root, background="white", padx=40, pady=30)
    frame.pack(fill="both", expand=True)
    to, message = tk.StringVar(root), tk.StringVar(root)
    sent: list[str] = []

    def save(*_: object) -> None:
        state = {"to": to.get(), "message": message.get(), "sent": sent[-1] if sent else None}
        temporary = state_file.with_suffix(".tmp")
        temporary.write_text(json.dumps(state, ensure_ascii=False))
        temporary.replace(state_file)

    def entry(variable: tk.StringVar, width: int) -> tk.Entry:
        widget = tk.Entry(frame, textvariable=variable, font=FONT, width=width, insertofftime=0)
        # No window manager gives focus: take it on a click.
        widget.bind("<Button-1>", lambda _event: widget.focus_force())
        return widget

    tk.Label(frame, text="To", font=FONT, bg="white").grid(row=0, column=0, sticky="w")
    entry(to, 30).grid(row=0, column=1, sticky="w", padx=(20, 0))
    tk.Label(frame, text="Message", font=FONT, bg="white").grid(
        row=1, column=0, columnspan=2, pady=(30, 6)
    )
    entry(message, 40).grid(row=2, column=0, columnspan=2)

    def send() -> None:
        sent.append(message.get())
        save()

    tk.Button(frame, text="Send", font=FONT, command=send).grid(row=3, column=1, pady=(30, 0))
    to.trace_add("write", save)
    message.trace_add("write", save)
    save()
    root.wait_visibility(root)
    root.update()
    print("ready", flush=True)
    root.mainloop()


if __name__ == "__main__":
    main()
