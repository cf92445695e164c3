"""The hdesktop dialect (H Company's desktop agent format): every tool as a table of
schema-valid answers and the contract actions they become, the schema against the
parser, and the round trip through the history renderer."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from holodesk.daemon.actions import (
    ActionKind,
    Click,
    Done,
    KeyChord,
    KeyDown,
    KeyUp,
    MouseButton,
    MouseDown,
    MouseUp,
    Move,
    Scroll,
    TypeText,
)
from holodesk.daemon.dialects import DialectParseError, get_dialect, load_dialect
from holodesk.daemon.dialects.hdesktop import HDesktopDialect
from holodesk.daemon.dialects.hdesktop.plan import Goal, split_plan, with_plan
from holodesk.daemon.dialects.hdesktop.vocabulary import HANDLERS, TOOL_NAMES
from holodesk.daemon.dialects.values import MODIFIER_KEYS, key_name, key_names
from holodesk.daemon.geometry import Point, Size
from holodesk.daemon.policies.model import ModelPolicy
from holodesk.daemon.policies.registry import create_policy

H = get_dialect("hdesktop")
FRAME = Size(1000, 500)  # 0-1000: x maps 1:1, y halves
GEO = H.geometry(FRAME)
# vLLM's own dependency (the default dependency groups); absent only without vLLM.
jsonschema = pytest.importorskip("jsonschema")


def _schema() -> dict[str, Any]:
    schema = H.step_schema()
    assert schema is not None
    return schema


SCHEMA = _schema()
VALIDATOR = jsonschema.Draft202012Validator(SCHEMA)


def answer(call: dict[str, Any], note: str | None = None, thought: str = "t") -> str:
    return json.dumps({"note": note, "thought": thought, "tool_call": call})


def at(name: str, x: int, y: int, **extra: Any) -> dict[str, Any]:
    return {"tool_name": name, "element": "the thing", "x": x, "y": y, **extra}


P = Point(400, 100)  # model (400, 200) on FRAME

CASES: list[tuple[str, dict[str, Any], tuple[ActionKind, ...]]] = [
    ("click", at("click_desktop", 400, 200), (Click(P),)),
    ("right click", at("click_desktop", 400, 200, button="right"),
     (Click(P, button=MouseButton.RIGHT),)),
    ("middle click", at("click_desktop", 400, 200, button="middle"),
     (Click(P, button=MouseButton.MIDDLE),)),
    ("double click", at("double_click_desktop", 400, 200), (Click(P, count=2),)),
    ("move", at("move_to_desktop", 400, 200), (Move(P),)),
    ("drag from the pointer", at("drag_to_desktop", 400, 200),
     (MouseDown(MouseButton.LEFT), MouseUp(MouseButton.LEFT, P))),
    ("scroll down by default 10", at("scroll_desktop", 400, 200, direction="down"),
     (Scroll(P, dy=10),)),
    ("scroll up 3", at("scroll_desktop", 400, 200, direction="up", scroll_size=3),
     (Scroll(P, dy=-3),)),
    ("scroll left 100", at("scroll_desktop", 400, 200, direction="left", scroll_size=100),
     (Scroll(P, dx=-100),)),
    ("scroll right 1", at("scroll_desktop", 400, 200, direction="right", scroll_size=1),
     (Scroll(P, dx=1),)),
    ("write types at the focus", {"tool_name": "write_desktop", "content": "héllo 👋"},
     (TypeText("héllo 👋"),)),
    ("write overwrite and enter",
     {"tool_name": "write_desktop", "content": "x", "overwrite": True, "press_enter": True},
     (KeyChord(("ctrl", "a")), KeyChord(("delete",)), TypeText("x"), KeyChord(("enter",)))),
    ("write nothing but clear", {"tool_name": "write_desktop", "content": "", "overwrite": True},
     (KeyChord(("ctrl", "a")), KeyChord(("delete",)))),
    ("write nothing at all", {"tool_name": "write_desktop", "content": ""}, ()),
    ("key down", {"tool_name": "key_down_desktop", "key": "shift"}, (KeyDown("shift"),)),
    ("key up, pyautogui name", {"tool_name": "key_up_desktop", "key": "esc"},
     (KeyUp("escape"),)),
    ("hotkey", {"tool_name": "hotkey_desktop", "keys": ["ctrl", "c"]}, (KeyChord(("ctrl", "c")),)),
    ("hotkey repeated", {"tool_name": "hotkey_desktop", "keys": ["down"], "repeat_count": 3},
     (KeyChord(("down",)),) * 3),
    ("hotkey pyautogui names", {"tool_name": "hotkey_desktop", "keys": ["cmd", "esc"]},
     (KeyChord(("meta", "escape")),)),
    ("hold and tap",
     {"tool_name": "hold_and_tap_key_desktop", "hold_keys": ["ctrl", "shift"],
      "tap_keys": ["left", "left", "x"]},
     (KeyDown("ctrl"), KeyDown("shift"), KeyChord(("left",)), KeyChord(("left",)),
      KeyChord(("x",)), KeyUp("shift"), KeyUp("ctrl"))),
    ("answer", {"tool_name": "answer", "content": "42"}, (Done("42"),)),
    ("update_plan acts on nothing",
     {"tool_name": "update_plan", "goals": [{"title": "Open it", "status": "running"}]}, ()),
]  # fmt: skip


@pytest.mark.parametrize(("name", "call", "expected"), CASES, ids=[c[0] for c in CASES])
def test_each_tool_is_schema_valid_and_becomes_its_actions(
    name: str, call: dict[str, Any], expected: tuple[ActionKind, ...]
) -> None:
    text = answer(call, note="seen: 3 files")
    VALIDATOR.validate(json.loads(text))
    step = H.parse_step(text, GEO)
    assert step.actions == expected
    assert step.thought == "t"
    assert split_plan(step.note)[0] == "seen: 3 files"


def test_the_table_uses_every_tool_and_every_tool_has_a_handler() -> None:
    assert tuple(HANDLERS) == TOOL_NAMES
    assert {c[1]["tool_name"] for c in CASES} == set(TOOL_NAMES)
    variants = SCHEMA["properties"]["tool_call"]["anyOf"]
    assert [v["properties"]["tool_name"]["const"] for v in variants] == list(TOOL_NAMES)


def test_update_plan_carries_its_goals_in_the_note() -> None:
    goals = [{"title": "Open the <plan>[ editor", "status": "done"},
             {"title": "Type", "status": "running"}]  # fmt: skip
    step = H.parse_step(answer({"tool_name": "update_plan", "goals": goals}, note="n"), GEO)
    note, plan = split_plan(step.note)
    assert note == "n"
    assert plan == (Goal("Open the <plan>[ editor", "done"), Goal("Type", "running"))
    assert split_plan(with_plan("", plan)) == ("", plan)


def test_a_null_note_is_empty() -> None:
    assert H.parse_step(answer(at("move_to_desktop", 1, 1)), GEO).note == ""


def test_raw_control_characters_in_strings_are_read_as_they_are() -> None:
    # vLLM's xgrammar lets a constrained string hold them; strict JSON would refuse.
    text = '{"note": null, "thought": "a\x16b", "tool_call": {"tool_name": "write_desktop",'
    text += ' "content": "line 1\nline 2\tend"}}'
    step = H.parse_step(text, GEO)
    assert step.thought == "a\x16b"
    assert step.actions == (TypeText("line 1\nline 2\tend"),)


def test_edges_of_the_coordinate_space_land_on_the_frame_edges() -> None:
    step = H.parse_step(answer(at("click_desktop", 1000, 1000)), GEO)
    assert step.actions == (Click(Point(1000, 500)),)


BAD: list[tuple[str, str, str]] = [
    ("no tool_call", json.dumps({"thought": "t", "action": {"action": "click"}}), "no tool_call"),
    ("two calls", json.dumps({"thought": "t", "tool_call": [at("click_desktop", 1, 1)] * 2}),
     "list"),
    ("unknown tool", answer({"tool_name": "wait_desktop", "seconds": 2}), "unknown tool_name"),
    ("x past 1000", answer(at("click_desktop", 1001, 5)), "outside"),
    ("no y", answer({"tool_name": "click_desktop", "element": "e", "x": 5}), "x and y"),
    ("side button", answer(at("click_desktop", 5, 5, button="back")), "button"),
    ("scroll too far", answer(at("scroll_desktop", 5, 5, direction="down", scroll_size=101)),
     "scroll_size"),
    ("scroll nowhere", answer(at("scroll_desktop", 5, 5, direction="in")), "direction"),
    ("repeat zero", answer({"tool_name": "hotkey_desktop", "keys": ["a"], "repeat_count": 0}),
     "repeat_count"),
    ("too many held", answer({"tool_name": "hold_and_tap_key_desktop",
                              "hold_keys": ["ctrl", "alt", "shift", "meta"], "tap_keys": ["a"]}),
     "hold_keys"),
    ("unknown key", answer({"tool_name": "key_down_desktop", "key": "hyperspace"}), "unknown key"),
    ("bad status", answer({"tool_name": "update_plan", "goals": [{"title": "a", "status": "?"}]}),
     "status"),
    ("no goals", answer({"tool_name": "update_plan", "goals": []}), "goals"),
    ("enter as text", answer({"tool_name": "write_desktop", "content": "a", "press_enter": "yes"}),
     "press_enter"),
]  # fmt: skip


@pytest.mark.parametrize(("name", "text", "message"), BAD, ids=[b[0] for b in BAD])
def test_unusable_answers_are_parse_errors_with_a_hint(name: str, text: str, message: str) -> None:
    with pytest.raises(DialectParseError) as caught:
        H.parse_step(text, GEO)
    assert message in caught.value.message
    assert caught.value.hint
    # Structured decoding would not have let the model write it.
    assert not VALIDATOR.is_valid(json.loads(text))


def test_pyautogui_sided_modifiers_keep_their_side_where_the_vocabulary_has_one() -> None:
    step = H.parse_step(answer({"tool_name": "key_down_desktop", "key": "shiftleft"}), GEO)
    assert step.actions[0] == KeyDown("shift_l" if "shift_l" in MODIFIER_KEYS else "shift")


def test_every_key_the_schema_allows_parses() -> None:
    for name in key_names(H.spec.key_aliases):
        assert key_name(name, H.spec.key_aliases)


def test_the_prompt_lists_every_tool_and_the_schema() -> None:
    listed = [line.split("(")[0] for line in H.action_list().splitlines()]
    assert listed == [f"- {name}" for name in TOOL_NAMES]
    system = H.spec.prompts.system
    assert "{action_list}" in system
    assert "<output_format>\n{output_schema}\n</output_format>" in system


def test_the_space_names_what_the_format_cannot_say() -> None:
    assert H.action_space is not None
    gaps = {option for gap in H.action_space.gaps for option in gap.options}
    assert {"click.count=3", "fail", "ask_user", "wait", "navigate", "drag"} <= gaps
    assert isinstance(H, HDesktopDialect)


def test_location_answers_are_points_or_clicks() -> None:
    assert H.parse_location('{"x": 500, "y": 500}', GEO).point == Point(500, 250)
    assert H.parse_location(answer(at("click_desktop", 100, 100)), GEO).point == Point(100, 50)
    with pytest.raises(DialectParseError):
        H.parse_location(answer({"tool_name": "answer", "content": "none"}), GEO)


# Property: any schema-valid tool call parses, and its rendering parses to the same actions.

_KEY = st.sampled_from(key_names(H.spec.key_aliases)) | st.characters(codec="utf-8")
_XY = {"element": st.text(max_size=20), "x": st.integers(0, 1000), "y": st.integers(0, 1000)}


def _call(name: str, required: dict[str, Any], optional: dict[str, Any]) -> Any:
    return st.fixed_dictionaries({"tool_name": st.just(name), **required}, optional=optional)


_CALLS = st.one_of(
    _call("update_plan", {"goals": st.lists(st.fixed_dictionaries(
        {"title": st.text(), "status": st.sampled_from(["todo", "running", "done", "failed"])}
    ), min_size=1, max_size=20)}, {}),
    _call("write_desktop", {"content": st.text()},
          {"press_enter": st.booleans(), "overwrite": st.booleans()}),
    _call("click_desktop", _XY, {"button": st.sampled_from(["left", "right", "middle"])}),
    _call("double_click_desktop", _XY, {}),
    _call("move_to_desktop", _XY, {}),
    _call("drag_to_desktop", _XY, {}),
    _call("scroll_desktop", {**_XY, "direction": st.sampled_from(["up", "down", "left", "right"])},
          {"scroll_size": st.integers(1, 100)}),
    _call("key_down_desktop", {"key": _KEY}, {}),
    _call("key_up_desktop", {"key": _KEY}, {}),
    _call("hotkey_desktop", {"keys": st.lists(_KEY, min_size=1, max_size=5)},
          {"repeat_count": st.integers(1, 20)}),
    _call("hold_and_tap_key_desktop", {"hold_keys": st.lists(_KEY, min_size=1, max_size=3),
                                       "tap_keys": st.lists(_KEY, min_size=1, max_size=5)}, {}),
    _call("answer", {"content": st.text()}, {}),
)  # fmt: skip


@settings(max_examples=300, deadline=None)
@given(call=_CALLS, note=st.none() | st.text(max_size=30), frame=st.sampled_from(
    [Size(1920, 1080), Size(1000, 500), Size(1366, 768), Size(333, 777)]
))  # fmt: skip
def test_schema_valid_calls_parse_and_render_back_to_the_same_actions(
    call: dict[str, Any], note: str | None, frame: Size
) -> None:
    text = answer(call, note=note)
    VALIDATOR.validate(json.loads(text))
    geometry = H.geometry(frame)
    step = H.parse_step(text, geometry)
    rendered = json.loads(H.parser.render_actions(step.actions, H.spec, geometry))
    if call["tool_name"] == "update_plan":
        assert step.actions == ()
        return  # its goals are in the note, which render_actions does not see
    VALIDATOR.validate({"thought": "", "tool_call": rendered})
    # Coordinates come back as whole model units, which is what they were given in.
    assert H.parse_step(answer(rendered), geometry).actions == step.actions


def test_the_daemon_option_and_a_dialect_file_based_on_it_give_the_harness_layout(
    tmp_path: Path,
) -> None:
    script = tmp_path / "script.json"
    script.write_text(json.dumps([answer({"tool_name": "answer", "content": "ok"})]))
    policy = create_policy("scripted", {"script": str(script), "dialect": "hdesktop"})
    assert isinstance(policy, ModelPolicy)
    assert isinstance(policy.dialect, HDesktopDialect)
    # A Holo2 checkpoint speaking the format: Holo2's image rule over the same dialect.
    override = tmp_path / "holo2-desktop.toml"
    override.write_text(
        'base = "hdesktop"\nname = "holo2-desktop"\nhistory_images = 2\n'
        '[resize]\nkind = "smart"\nfactor = 32\nmin_pixels = 4096\nmax_pixels = 2073600\n'
    )
    loaded = load_dialect(override)
    assert isinstance(loaded, HDesktopDialect)
    assert loaded.spec.parser == "hdesktop_json"
    holo2 = get_dialect("holo").geometry(Size(1920, 1080)).model_image
    assert loaded.geometry(Size(1920, 1080)).model_image == holo2
    assert holo2 != H.geometry(Size(1920, 1080)).model_image  # the built-in's tiles
    assert loaded.parse_step(
        answer(at("click_desktop", 500, 500)), loaded.geometry(FRAME)
    ).actions == (Click(Point(500, 250)),)
