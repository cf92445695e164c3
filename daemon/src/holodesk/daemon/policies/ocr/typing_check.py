"""Did typing into a field work? Read the screen again and look for the text near its label.

An action that ran is not an effect that happened: a click on a label focuses
nothing, and the text typed after it reaches no widget while every action still
reports OK. So after typing into a field the baseline reads the next screen and
only moves on when the text shows near the field's label.

Only what the OCR language can read is compared: Tesseract's English model does
not read 日本 or €, so those characters are left out of the expected text (and a
text with nothing readable left cannot be checked, which the caller says).
Password fields show bullets, not the text: the check cannot pass there.
"""

from __future__ import annotations

import difflib
import unicodedata
from dataclasses import dataclass

from holodesk.daemon.policies.ocr.matching import normalize
from holodesk.daemon.policies.ocr.reader import TextBox, lines_of

# Looser than finding a label: a field's text is small, in an inset box, and typed
# text has no dictionary to help Tesseract; one misread letter in five still passes.
CHECK_THRESHOLD = 0.7
# Texts shorter than this (spaces aside) must be a whole line, not a stretch of one.
_SHORT = 4
Box = tuple[int, int, int, int]  # left, top, right, bottom, pixels


@dataclass(frozen=True)
class TypingCheck:
    # The text as the OCR language can read it ('' : nothing to compare).
    expected: str
    # What was read where the text should be, when it matched.
    seen: str = ""
    score: float = 0.0

    @property
    def checkable(self) -> bool:
        return bool(self.expected)

    @property
    def shown(self) -> bool:
        return bool(self.seen)


def readable(text: str) -> str:
    """The part of `text` an English OCR model can read back, normalized as matching does."""
    kept = []
    for char in unicodedata.normalize("NFKD", text):
        if unicodedata.combining(char):
            continue
        kept.append(char if char.isascii() and char.isprintable() else " ")
    return normalize("".join(kept))


def check_typing(text: str, words: list[TextBox], label: Box | None) -> TypingCheck:
    """Whether `words` (a fresh read of the screen) show `text` near the label.

    Near: right of the label or below it, as far as a wide or tall field reaches;
    the whole screen when the label is gone (typing may have changed the view).
    """
    expected = readable(text)
    if not expected:
        return TypingCheck("")
    nearby = words if label is None else [w for w in words if _near(w, label)]
    best: tuple[float, str] = (0.0, "")
    for line in lines_of(nearby):
        text_of_line = " ".join(w.text for w in line)
        best = max(best, (_contained(expected, normalize(text_of_line)), text_of_line))
    score, seen = best
    if score < CHECK_THRESHOLD:
        return TypingCheck(expected)
    return TypingCheck(expected, seen, score)


def _contained(expected: str, line: str) -> float:
    """How well `expected` matches its best stretch of `line` (0-1), spaces ignored.

    A stretch, not the whole line: a field that held text already shows it before
    the typed text, and OCR may join the field's text with a neighbour's.
    """
    target, haystack = expected.replace(" ", ""), line.replace(" ", "")
    if not target or not haystack:
        return 0.0
    size = len(target)
    if size < _SHORT:
        # A letter or two is inside most lines: a short text must be its field's all.
        return difflib.SequenceMatcher(None, target, haystack, autojunk=False).ratio()
    starts = range(max(1, len(haystack) - size + 1))
    return max(
        difflib.SequenceMatcher(None, target, haystack[i : i + size], autojunk=False).ratio()
        for i in starts
    )


def _near(word: TextBox, label: Box) -> bool:
    left, top, right, bottom = label
    height = max(bottom - top, 8)
    x = word.left + word.width / 2
    y = word.top + word.height / 2
    inside_label = left <= x <= right and top <= y <= bottom
    return (
        not inside_label
        and left - 40 * height <= x <= right + 60 * height
        and top - height <= y <= bottom + 20 * height
    )
