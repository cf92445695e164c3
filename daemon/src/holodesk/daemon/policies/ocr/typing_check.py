"""Did typing into a field work? Read the screen again: the field must show the text, all of it.

An action that ran is not an effect that happened: a click on a label focuses
nothing, and the text typed after it reaches no widget while every action still
reports OK. So after typing into a field the baseline reads the next screen and
only moves on when the field shows the text.

Shows the text means holds it and nothing else: a field that held "Ada Lovelace"
and now reads "Ada LovelacGrace Hoppere" did receive "Grace Hopper", but does not
hold it. So the whole of what the field shows is compared with the text (an edit
distance over its length; one slip in five characters tolerated), when the field's outline
is known; without one, each whole line near the label. Whether the text shows as a
stretch of something longer is reported apart (`landed`): the caller tells "typed
into the field, beside its old text" from "typed nowhere".

Only what the OCR language can read is compared: Tesseract's English model does
not read 日本 or €, so those characters are left out of the expected text, and in
the whole-field comparison each stands for the few characters OCR makes of it (a
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
# The whole field against the text: stricter, since a leftover of the old text counts
# as much as a misread ("Ada Grace Hopper" for "Grace Hopper" scores 0.73); one slip
# in five characters still passes.
WHOLE_THRESHOLD = 0.8
# Texts shorter than this (spaces aside) must be a whole line, not a stretch of one.
_SHORT = 4
# Characters OCR may make of one it cannot read (a CJK glyph is as wide as two).
_UNREADABLE_READS_AS = 2
# Stands for one unreadable character in the whole-field comparison.
_ANY = "\x00"
# What a field's border or caret right beside its text reads as, glued to the text:
# Tk's border "|Ada", Chromium's input border "jada", a caret "Hopperl". One of these
# at either end of a field's text is not held against it.
_THIN = frozenset("|lij1!I[]()")
Box = tuple[int, int, int, int]  # left, top, right, bottom, pixels


@dataclass(frozen=True)
class TypingCheck:
    # The text as the OCR language can read it ('' : nothing to compare).
    expected: str
    # What the field shows (the best candidate's whole text, as read); '' when empty.
    seen: str = ""
    # How well `seen` as a whole matches the text (0-1).
    score: float = 0.0
    # Whether the text shows as a stretch of `seen` (typed into it, maybe beside
    # other text) or, failing that, of any line near the label.
    landed: bool = False

    @property
    def checkable(self) -> bool:
        return bool(self.expected)

    @property
    def shown(self) -> bool:
        """The field holds the text: all it shows matches it."""
        return self.checkable and self.score >= WHOLE_THRESHOLD


def readable(text: str) -> str:
    """The part of `text` an English OCR model can read back, normalized as matching does."""
    kept = []
    for char in unicodedata.normalize("NFKD", text):
        if unicodedata.combining(char):
            continue
        kept.append(char if char.isascii() and char.isprintable() else " ")
    return normalize("".join(kept))


def check_typing(
    text: str, words: list[TextBox], label: Box | None, field: Box | None = None
) -> TypingCheck:
    """Whether `words` (a fresh read of the screen) show a field holding `text`.

    With the field's outline (`field`), what the field shows is every word inside
    it. Without, each line near the label is a candidate, whole: right of the label
    or below it, as far as a wide or tall field reaches; the whole screen when the
    label is gone (typing may have changed the view).
    """
    expected = readable(text)
    if not expected:
        return TypingCheck("")
    pattern = _pattern(text)
    nearby = words if label is None else [w for w in words if _near(w, label)]
    candidates = [" ".join(w.text for w in line) for line in lines_of(nearby)]
    if field is not None:
        inside = [w for w in words if _inside(w, field)]
        shown = " ".join(" ".join(w.text for w in line) for line in lines_of(inside))
        candidates = [shown]
    best = max(((_framed(pattern, normalize(c)), c) for c in candidates), default=(0.0, ""))
    # Landed: in the field, when its outline is known, else in any line near the label.
    stretches = candidates if field is not None else [c for c in candidates if c]
    landed = any(_contained(expected, normalize(c)) >= CHECK_THRESHOLD for c in stretches)
    score, seen = best
    return TypingCheck(expected, seen, score, landed)


def _pattern(text: str) -> str:
    """`text` as readable() keeps it, with _ANY for each character OCR cannot read and
    no spaces (OCR's spacing is unreliable)."""
    kept = []
    for char in unicodedata.normalize("NFKD", text):
        if unicodedata.combining(char):
            continue
        kept.append(char if char.isascii() and char.isprintable() else f" {_ANY} ")
    return normalize("".join(kept)).replace(" ", "")


def _framed(pattern: str, read: str) -> float:
    """_whole, forgiving one thin glyph (a border, a caret) at either end of `read`."""
    read = read.replace(" ", "")
    starts = (0, 1) if read[:1] in _THIN else (0,)
    ends = (len(read), len(read) - 1) if read[-1:] in _THIN else (len(read),)
    return max(_whole(pattern, read[a:b]) for a in starts for b in ends if a <= b)


def _whole(pattern: str, read: str) -> float:
    """How well all of `read` matches all of `pattern` (0-1): one minus the edit
    distance over the pattern's readable length, each _ANY matching up to
    _UNREADABLE_READS_AS characters of anything. Extra text counts against it."""
    haystack = read.replace(" ", "")
    literal = len(pattern) - pattern.count(_ANY)
    if literal == 0:
        return 0.0
    # previous[j]: the distance between the pattern so far and haystack[:j].
    previous = list(range(len(haystack) + 1))
    for char in pattern:
        if char == _ANY:
            current = [
                min(previous[max(0, j - _UNREADABLE_READS_AS) : j + 1])
                for j in range(len(haystack) + 1)
            ]
        else:
            current = [previous[0] + 1]
            for j, got in enumerate(haystack, start=1):
                current.append(
                    min(previous[j - 1] + (got != char), previous[j] + 1, current[j - 1] + 1)
                )
        previous = current
    return max(0.0, 1.0 - previous[-1] / literal)


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


def _inside(word: TextBox, box: Box) -> bool:
    x, y = word.center
    return box[0] <= x <= box[2] and box[1] <= y <= box[3]


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
