"""The read-back check after typing, and the markers that carry it across steps."""

from __future__ import annotations

from holodesk.daemon.actions import Action, ActionResult, ActionStatus, HistoryStep, Wait
from holodesk.daemon.policies.ocr.progress import Progress, marker, progress_from_history
from holodesk.daemon.policies.ocr.reader import TextBox
from holodesk.daemon.policies.ocr.typing_check import check_typing, readable

LABEL = (100, 100, 180, 120)  # "Message", 20 px high


def word(text: str, left: int, top: int, line: int = 0) -> TextBox:
    return TextBox(text, 90.0, left, top, 8 * len(text), 20, line)


def test_only_what_english_ocr_reads_is_expected() -> None:
    assert readable("héllo wörld ñ € 日本") == "hello world n"
    assert readable("日本語") == ""


def test_text_shown_below_or_beside_the_label_passes() -> None:
    below = [word("Message", 100, 100), word("hello", 60, 150, 1), word("eco", 110, 150, 1)]
    check = check_typing("hello eco", below, LABEL)
    assert check.shown
    assert check.seen == "hello eco"
    # An OCR slip still passes; another text does not.
    assert check_typing(
        "hello eco", [word("helo", 60, 150, 1), word("eco", 100, 150, 1)], LABEL
    ).shown
    assert not check_typing("hello eco", [word("goodbye", 60, 150, 1)], LABEL).shown


def test_text_typed_beside_what_the_field_held_landed_but_is_not_shown() -> None:
    # The field holds more than the text: it received it, but does not hold it.
    held = [word("Dear", 60, 150, 1), word("team,hello", 100, 150, 1), word("eco", 190, 150, 1)]
    check = check_typing("hello eco", held, LABEL)
    assert not check.shown
    assert check.landed
    assert check.seen == "Dear team,hello eco"
    # Issue 30's field: "Ada Lovelace" clicked in its middle, "Grace Hopper" typed there.
    garbled = [
        word("la", 60, 150, 1),
        word("LovelacGrace", 90, 150, 1),
        word("Hopper", 200, 150, 1),
    ]
    check = check_typing("Grace Hopper", garbled, LABEL)
    assert (check.shown, check.landed) == (False, True)
    # The same text typed into a field that held it already.
    doubled = [
        word("Grace", 60, 150, 1),
        word("HopperGrace", 110, 150, 1),
        word("Hopper", 210, 150, 1),
    ]
    assert not check_typing("Grace Hopper", doubled, LABEL).shown


FIELD = (50, 140, 400, 180)  # a field's outline, below LABEL


def test_with_the_fields_outline_all_of_it_is_what_it_shows() -> None:
    inside = [word("|Grace", 60, 150, 1), word("Hopper|", 120, 150, 1)]
    beside = [word("Help", 420, 150, 1)]  # a button on the same row, outside the field
    check = check_typing("Grace Hopper", inside + beside, LABEL, FIELD)
    assert check.shown
    assert check.seen == "|Grace Hopper|"  # the field's border and caret, as OCR reads them
    # Text left of what was typed, inside the field, is the field's too.
    held = [word("Ada", 60, 150, 1), word("Grace", 100, 150, 1), word("Hopper", 160, 150, 1)]
    check = check_typing("Grace Hopper", held, LABEL, FIELD)
    assert (check.shown, check.landed, check.seen) == (False, True, "Ada Grace Hopper")
    # An empty field: nothing landed.
    check = check_typing("Grace Hopper", beside, LABEL, FIELD)
    assert (check.shown, check.landed, check.seen) == (False, False, "")


def test_a_border_or_caret_beside_the_text_is_not_held_against_it() -> None:
    # Chromium's input border, read glued to a short text; a caret after it.
    assert check_typing("ada", [word("jada", 60, 150, 1)], LABEL, FIELD).shown
    assert check_typing("ada", [word("adal", 60, 150, 1)], LABEL, FIELD).shown
    # A letter more is a letter more when it is no thin glyph, or one at each end.
    assert not check_typing("ada", [word("xada", 60, 150, 1)], LABEL, FIELD).shown
    assert not check_typing("ada", [word("jjada", 60, 150, 1)], LABEL, FIELD).shown


def test_one_slip_in_five_passes_and_unreadable_characters_match_what_ocr_made_of_them() -> None:
    assert check_typing(
        "Grace Hopper", [word("Grace", 60, 150, 1), word("Hoppor", 110, 150, 1)], LABEL, FIELD
    ).shown
    # As the demo's Tk field reads "héllo wörld ñ € 日本" back: ñ as A, 日本 as BA.
    shown = ["|héllo", "world", "A", "€", "BA"]
    read = [word(w, 60 + 50 * i, 150, 1) for i, w in enumerate(shown)]
    assert check_typing("héllo wörld ñ € 日本", read, LABEL, FIELD).shown
    # But text beyond what the unreadable characters can account for is not.
    read += [word("Lovelace", 400, 150, 1)]
    assert not check_typing("héllo wörld ñ € 日本", read, LABEL, (50, 140, 500, 180)).shown


def test_a_short_text_must_be_all_its_line_shows() -> None:
    assert check_typing("42", [word("42", 60, 150, 1)], LABEL).shown
    assert not check_typing("a", [word("Cancel", 60, 150, 1)], LABEL).shown


def test_text_above_the_label_or_nowhere_fails() -> None:
    above = [word("hello", 60, 40), word("eco", 110, 40)]
    assert not check_typing("hello eco", above, LABEL).shown
    assert not check_typing("hello eco", [word("Message", 100, 100)], LABEL).shown
    # Without a label to anchor on, the whole screen counts.
    assert check_typing("hello eco", above, None).shown


def test_a_text_ocr_cannot_read_is_not_checkable() -> None:
    check = check_typing("日本", [], LABEL)
    assert not check.checkable
    assert not check.shown


def test_type_markers_carry_the_pending_check() -> None:
    assert marker(1, 3, typed=2) == "[ocr 2/3 type 2]"
    assert marker(1, 3, typed=2, looked=True) == "[ocr 2/3 type 2 look]"

    def step(number: int, note: str) -> HistoryStep:
        action = Action(f"a{number}", "", Wait(1000))
        return HistoryStep(
            number, (action,), note=note, results=(ActionResult(action.action_id, ActionStatus.OK),)
        )

    assert progress_from_history([step(1, "[ocr 1/3 type 1] t")]) == Progress(0, typed=1)
    assert progress_from_history(
        [step(1, "[ocr 1/3 type 1] t"), step(2, "[ocr 1/3 type 1 look] checking")]
    ) == Progress(0, typed=1, looked=True)
    # Checked and passed: the next plan step's marker moves it on.
    assert progress_from_history(
        [step(1, "[ocr 1/3 type 1] t"), step(2, "[ocr 2/3] click")]
    ) == Progress(2)
