"""Find a phrase among OCR'd words: case- and accent-insensitive, tolerant of OCR slips.

Accents are folded away on both sides because Tesseract's English model often
drops or swaps them ("Déjà" reads as "Déja"), and a user typing a task rarely
cares. Fuzziness (difflib's ratio) absorbs single-letter misreads; short phrases
still need near-exact reads because one letter is a large part of them.
"""

from __future__ import annotations

import difflib
import unicodedata
from dataclasses import dataclass

from holodesk.daemon.policies.ocr.reader import TextBox, lines_of

DEFAULT_THRESHOLD = 0.8


@dataclass(frozen=True)
class Match:
    phrase: str
    words: tuple[TextBox, ...]
    score: float  # 0-1, 1 = identical after normalization

    @property
    def text(self) -> str:
        return " ".join(w.text for w in self.words)

    @property
    def box(self) -> tuple[int, int, int, int]:
        """left, top, right, bottom in image pixels."""
        return (
            min(w.left for w in self.words),
            min(w.top for w in self.words),
            max(w.right for w in self.words),
            max(w.bottom for w in self.words),
        )

    @property
    def center(self) -> tuple[float, float]:
        left, top, right, bottom = self.box
        return ((left + right) / 2, (top + bottom) / 2)


def normalize(text: str) -> str:
    """Casefolded, accents removed, punctuation at word edges stripped, spaces collapsed.

    A text made only of punctuation ("+", "…") keeps it, so such buttons stay findable.
    """
    decomposed = unicodedata.normalize("NFKD", text.casefold())
    folded = "".join(c for c in decomposed if not unicodedata.combining(c))
    words = [_strip_punctuation(w) for w in folded.split()]
    joined = " ".join(w for w in words if w)
    return joined or " ".join(folded.split())


def find_all(
    phrase: str, words: list[TextBox], threshold: float = DEFAULT_THRESHOLD
) -> list[Match]:
    """Non-overlapping matches scoring at least `threshold`, best first.

    Candidates are runs of adjacent words on one line, one word shorter to one
    longer than the phrase (OCR splits and joins words). Among equal scores, a run
    that is its whole line comes first, then reading order.
    """
    target = normalize(phrase)
    if not target:
        return []
    size = len(target.split())
    # (score, covers its whole line, reading order, match): a phrase that is a whole
    # line (a button "Save") beats the same words inside a longer one ("Save as").
    candidates: list[tuple[float, bool, int, Match]] = []
    order = 0
    for line in lines_of(words):
        for start in range(len(line)):
            for length in range(max(1, size - 1), size + 2):
                run = line[start : start + length]
                if len(run) < length:
                    break
                score = _score(target, " ".join(normalize(w.text) for w in run))
                if score >= threshold:
                    whole = len(run) == len(line)
                    candidates.append((score, whole, order, Match(phrase, tuple(run), score)))
                order += 1
    candidates.sort(key=lambda c: (-c[0], not c[1], c[2]))
    chosen: list[Match] = []
    for _, _, _, match in candidates:
        if not any(_overlaps(match, other) for other in chosen):
            chosen.append(match)
    return chosen


def find_text(
    phrase: str, words: list[TextBox], threshold: float = DEFAULT_THRESHOLD
) -> Match | None:
    """The best match of `phrase`, or None."""
    matches = find_all(phrase, words, threshold)
    return matches[0] if matches else None


def _score(target: str, candidate: str) -> float:
    if not candidate:
        return 0.0
    spaced = difflib.SequenceMatcher(None, target, candidate, autojunk=False).ratio()
    # OCR sometimes drops the space between words ("Savechanges") or adds one.
    tight = difflib.SequenceMatcher(
        None, target.replace(" ", ""), candidate.replace(" ", ""), autojunk=False
    ).ratio()
    return max(spaced, tight)


def _overlaps(a: Match, b: Match) -> bool:
    return any(w in b.words for w in a.words)


def _strip_punctuation(word: str) -> str:
    start, end = 0, len(word)
    while start < end and _is_punctuation(word[start]):
        start += 1
    while end > start and _is_punctuation(word[end - 1]):
        end -= 1
    return word[start:end]


def _is_punctuation(char: str) -> bool:
    return unicodedata.category(char)[0] in "PS"
