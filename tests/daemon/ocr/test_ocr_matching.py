"""Finding a phrase among OCR'd words."""

from __future__ import annotations

import pytest

from holodesk.daemon.policies.ocr.matching import find_all, find_text, normalize
from holodesk.daemon.policies.ocr.reader import TextBox, group_lines, read_text

from .screens import form_screen


def _line(*texts: str, top: int = 100, left: int = 10) -> list[TextBox]:
    """Words laid out left to right with one-space gaps, as OCR reports them."""
    words = []
    for text in texts:
        width = 8 * len(text)
        words.append(TextBox(text, 95.0, left, top, width, 12))
        left += width + 4
    return words


def _page(*lines: list[TextBox]) -> list[TextBox]:
    return group_lines([w for line in lines for w in line])


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Déjà Vu", "deja vu"),
        ("  SAVE   changes ", "save changes"),
        ("Name:", "name"),
        ("(OK)", "ok"),
        ("Straße", "strasse"),
        ("e-mail", "e-mail"),
        ("+", "+"),
        ("…", "..."),
        ("ｆｕｌｌ", "full"),
    ],
)
def test_normalize(text: str, expected: str) -> None:
    assert normalize(text) == expected


def test_case_and_accents_do_not_matter() -> None:
    words = _page(_line("Déja", "vu", "café"))
    match = find_text("DÉJÀ VU", words)
    assert match is not None
    assert match.text == "Déja vu"
    assert match.score == 1.0


def test_multi_word_phrase_spans_adjacent_words_and_its_box_covers_them() -> None:
    words = _page(_line("Please", "Save", "changes", "now"))
    match = find_text("save changes", words)
    assert match is not None
    assert [w.text for w in match.words] == ["Save", "changes"]
    save, changes = words[1], words[2]
    assert match.box == (save.left, save.top, changes.right, changes.bottom)
    assert match.center == ((save.left + changes.right) / 2, save.top + 6)


def test_phrase_does_not_join_words_of_different_lines() -> None:
    words = _page(_line("Save", top=100), _line("changes", top=140))
    assert find_text("save changes", words) is None


def test_ocr_splitting_or_joining_words_still_matches() -> None:
    joined = _page(_line("Savechanges"))
    split = _page(_line("Can", "cel"))
    assert find_text("Save changes", joined) is not None
    assert find_text("Cancel", split) is not None


def test_one_misread_letter_is_tolerated_but_a_different_word_is_not() -> None:
    words = _page(_line("Submlt"), _line("Settings", top=140))
    match = find_text("Submit", words)
    assert match is not None
    assert match.text == "Submlt"
    assert match.score < 1.0
    assert find_text("Sitemap", words) is None
    assert find_text("OR", _page(_line("OK"))) is None  # short words need exact reads


def test_a_whole_line_beats_the_same_words_inside_a_longer_one() -> None:
    words = _page(_line("Save", "as", "template", top=100), _line("Save", top=140))
    match = find_text("Save", words)
    assert match is not None
    assert match.words[0].top == 140


def test_equal_matches_come_in_reading_order_and_do_not_overlap() -> None:
    words = _page(_line("OK", top=300), _line("OK", top=100), _line("OK", "OK", top=200))
    matches = find_all("ok", words)
    tops = [m.words[0].top for m in matches]
    assert tops == [100, 300, 200, 200]  # whole-line matches first
    assert len({m.words for m in matches}) == 4


def test_punctuation_only_labels_are_findable() -> None:
    words = _page(_line("Zoom", "+", top=100, left=10), _line("-", top=100, left=300))
    match = find_text("+", words)
    assert match is not None
    assert match.text == "+"


def test_empty_phrase_matches_nothing() -> None:
    assert find_all("   ", _page(_line("OK"))) == []


@pytest.mark.parametrize("size", [(1280, 800), (1024, 640)])
def test_matches_land_on_rendered_targets(size: tuple[int, int]) -> None:
    screen = form_screen()
    if size != (1280, 800):
        screen = screen.resized(*size)
    words = read_text(screen.image)
    for phrase, drawn in [
        ("save changes", screen.texts["Save changes"]),
        ("EMAIL ADDRESS", screen.texts["Email address:"]),
        ("deja vu au cafe", screen.texts["Déjà vu au café"]),
        ("Cancel", screen.texts["Cancel"]),
    ]:
        match = find_text(phrase, words)
        assert match is not None, phrase
        x, y = match.center
        assert drawn[0] <= x <= drawn[2], (phrase, match.box, drawn)
        assert drawn[1] <= y <= drawn[3], (phrase, match.box, drawn)
