"""Text that came from elsewhere (the daemon, a model, a recording), made safe to show.

A daemon's strings reach the user's terminal, the tray's tooltip and the client's
log lines. Written raw, they are instructions to the terminal: an OSC 52 sequence
writes the clipboard, others set the window title, clear the screen, move the
cursor over the client's own prompt (a fake "sudo password:"), and bidi overrides
make text read differently from what it is. `shown` turns every such character
into a visible escape (ESC becomes the four characters ``\\x1b``), so the rest of
any sequence is plain text and nothing is lost from view.

Neutralised: the C0 controls (tab and line feed kept where the text may span
lines), DEL, the C1 controls (U+0080-U+009F, 8-bit CSI and OSC among them), the
bidi embedding, override and isolate controls and marks, and the line and paragraph
separators. Every place that shows such text calls `shown`; markup added around
it afterwards (rich's tags) is the client's own.
"""

from __future__ import annotations

# Bidi controls (Unicode's Bidi_Control property) and the separators that act as
# line breaks in some terminals and viewers.
_BIDI_AND_SEPARATORS = (
    0x061C,  # ARABIC LETTER MARK
    0x200E,  # LEFT-TO-RIGHT MARK
    0x200F,  # RIGHT-TO-LEFT MARK
    *range(0x202A, 0x202F),  # LRE, RLE, PDF, LRO, RLO
    *range(0x2066, 0x206A),  # LRI, RLI, FSI, PDI
    0x2028,  # LINE SEPARATOR
    0x2029,  # PARAGRAPH SEPARATOR
)
_CONTROLS = (*range(0x00, 0x20), 0x7F, *range(0x80, 0xA0), *_BIDI_AND_SEPARATORS)


def _escape(code: int) -> str:
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


_ONE_LINE: dict[int, str] = {code: _escape(code) for code in _CONTROLS}
_LINES: dict[int, str] = {
    code: text for code, text in _ONE_LINE.items() if code not in (ord("\n"), ord("\t"))
}


def shown(text: str, *, multiline: bool = True) -> str:
    """`text` with every control character and escape sequence made visible and inert.

    multiline=False also escapes line feeds and tabs, for what must stay one line
    (a tooltip, a log line, an id).
    """
    return text.translate(_LINES if multiline else _ONE_LINE)
