"""read_text: the words on a screenshot, with pixel boxes, grouped into lines."""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass, field, replace

from PIL import Image

from holodesk.daemon.policies.ocr.preprocess import PrepConfig, prepare
from holodesk.daemon.policies.ocr.tesseract import RawWord, TesseractConfig, run_tesseract

# One-character "words" that are almost always a widget's border or a separator
# read as a glyph; dropping them keeps them out of phrases. "+", "×", "?" etc. stay:
# they are real button labels.
_BORDER_GLYPHS = frozenset("|[](){}_-—–=~'\"`.,:;!/\\")


@dataclass(frozen=True)
class TextBox:
    """One word in the pixels of the image that was read."""

    text: str
    confidence: float  # 0-100, Tesseract's
    left: int
    top: int
    width: int
    height: int
    # Index of the line the word belongs to; lines are numbered in reading order.
    line: int = 0

    @property
    def right(self) -> int:
        return self.left + self.width

    @property
    def bottom(self) -> int:
        return self.top + self.height

    @property
    def center(self) -> tuple[float, float]:
        return (self.left + self.width / 2, self.top + self.height / 2)


@dataclass(frozen=True)
class ReaderConfig:
    prep: PrepConfig = field(default_factory=PrepConfig)
    tesseract: TesseractConfig = field(default_factory=TesseractConfig)
    min_confidence: float = 0.0
    # Two words are on one line when the gap between them is at most this many
    # times the line's typical word height (a space is ~0.3; separate widgets on
    # one row are usually further apart than this).
    max_word_gap: float = 1.2


def read_text(image: Image.Image, config: ReaderConfig = ReaderConfig()) -> list[TextBox]:
    """Words in reading order (line by line, left to right), boxes in `image` pixels.

    Raises OcrError (TesseractNotFoundError, OcrTimeoutError) when OCR cannot run.
    """
    prepared = prepare(image, config.prep)
    raw = run_tesseract(prepared.image, config.tesseract)
    boxes = [
        _to_source(word, prepared.scale, image.width, image.height)
        for word in raw
        if word.confidence >= config.min_confidence and not _is_border(word.text)
    ]
    return group_lines(boxes, config.max_word_gap)


def lines_of(words: list[TextBox]) -> list[list[TextBox]]:
    """The words of each line, lines in reading order."""
    lines: dict[int, list[TextBox]] = {}
    for word in words:
        lines.setdefault(word.line, []).append(word)
    return [sorted(lines[key], key=lambda w: w.left) for key in sorted(lines)]


def group_lines(words: list[TextBox], max_word_gap: float = 1.2) -> list[TextBox]:
    """Assign line numbers by geometry: same row, and close enough horizontally.

    Tesseract's own line numbers are not used: in sparse-text mode it often splits
    one visual line into blocks, and joins far-apart widgets in others.
    """
    rows: list[list[TextBox]] = []
    for word in sorted(words, key=lambda w: w.center[1]):
        row = rows[-1] if rows else None
        if row is not None and _same_row(row, word):
            row.append(word)
        else:
            rows.append([word])
    lines: list[list[TextBox]] = []
    for row in rows:
        row.sort(key=lambda w: w.left)
        height = statistics.median(w.height for w in row)
        current = [row[0]]
        for word in row[1:]:
            if word.left - current[-1].right <= max_word_gap * height:
                current.append(word)
            else:
                lines.append(current)
                current = [word]
        lines.append(current)
    return [replace(word, line=index) for index, line in enumerate(lines) for word in line]


def _same_row(row: list[TextBox], word: TextBox) -> bool:
    row_center = statistics.fmean(w.center[1] for w in row)
    row_height = statistics.median(w.height for w in row)
    return abs(word.center[1] - row_center) <= 0.5 * min(row_height, word.height)


def _is_border(text: str) -> bool:
    return len(text) == 1 and text in _BORDER_GLYPHS


def _to_source(word: RawWord, scale: float, width: int, height: int) -> TextBox:
    left = max(0, math.floor(word.left / scale))
    top = max(0, math.floor(word.top / scale))
    right = min(width, math.ceil((word.left + word.width) / scale))
    bottom = min(height, math.ceil((word.top + word.height) / scale))
    return TextBox(
        text=word.text,
        confidence=word.confidence,
        left=left,
        top=top,
        width=max(1, right - left),
        height=max(1, bottom - top),
    )
