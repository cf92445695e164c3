"""The keys that select all of a field's text, so that typing replaces it.

`type "X" into "F"` means F ends up holding X. A click lands wherever it lands in
the field's text, so before typing, the baseline selects the whole text as a
person would, with the keyboard; what it types then replaces the selection (and
an empty field simply receives it).

Which keys: there is no one select-all chord on Linux. ctrl+a selects all in GTK,
Qt, Chromium, Firefox and Windows, but Tk on X11 keeps Emacs's meaning for it
(the start of the line): typed after it, "Grace Hopper" lands before "Ada
Lovelace" (tested on Tk 8.6: tk.Entry, ttk.Entry, tk.Text). What every toolkit
the OCR tasks meet does alike is the CUA pair: ctrl+home goes to the start of the
text, ctrl+shift+end selects from there to its end, through every line of a
multi-line field (Tk Entry, ttk Entry and Text; GTK 3 Entry and TextView;
Chromium's input and textarea, all measured; Windows edit controls follow CUA).
Qt's QLineEdit is the exception: it knows no ctrl+home, and ignores it. So the
sequence is ctrl+a (select all where that is its meaning), then the CUA pair
(select all where ctrl+a was not, or select it again): whichever a toolkit knows,
the whole text ends selected, and none of the three types a character or
deletes anything on its own.

On a Mac neither works (ctrl+a is Emacs's there too, ctrl+home nothing in Cocoa),
and cmd+a ("meta" in the contract) is every toolkit's select-all: Cocoa, Tk's
Aqua bindings, Chromium, Qt.

The typed text is checked afterwards anyway (typing_check.py): where neither
selects, the field shows more than X and the step fails instead of succeeding.
"""

from __future__ import annotations

Chord = tuple[str, ...]

CUA_SELECT_ALL: tuple[Chord, ...] = (("ctrl", "a"), ("ctrl", "home"), ("ctrl", "shift", "end"))
MAC_SELECT_ALL: tuple[Chord, ...] = (("meta", "a"),)


def select_all_keys(client_os: str) -> tuple[Chord, ...]:
    """The chords, pressed in order, that select all of a focused field's text.

    `client_os` is the client's ClientInfo.os ("linux", "darwin", "windows", "web",
    "vnc", or "" when it did not say). A VNC desktop may be any OS: the CUA
    sequence, which Windows and Linux both follow.
    """
    return MAC_SELECT_ALL if client_os.strip().lower() == "darwin" else CUA_SELECT_ALL
