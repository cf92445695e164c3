"""The hdesktop conversation, built from the daemon's own Session: observations in
tags, each earlier step as its parsed JSON with its tool output or error after it,
old screenshots as the harness's placeholder, notes and plan kept past the window."""

from __future__ import annotations

import dataclasses
import json
from typing import Any

from holodesk.daemon.actions import ActionResult, ActionStatus
from holodesk.daemon.dialects import Dialect, get_dialect
from holodesk.daemon.dialects.base import ParsedStep
from holodesk.daemon.dialects.hdesktop import HDesktopDialect
from holodesk.daemon.dialects.hdesktop.prompt import IMAGE_PLACEHOLDER
from holodesk.daemon.dialects.values import key_names_text
from holodesk.daemon.engines.base import ChatMessage, ImagePart
from holodesk.daemon.frames import EncodedFrame, ImageEncoding
from holodesk.daemon.geometry import Size
from holodesk.daemon.policies.base import Decision
from holodesk.daemon.session.sessions import Session
from holodesk.daemon.session.values import SessionRequest
from holodesk.daemon.steps import StepContext

H = get_dialect("hdesktop")
FRAME = Size(1000, 500)


def answer(call: dict[str, Any], note: str | None = None, thought: str = "t") -> str:
    return json.dumps({"note": note, "thought": thought, "tool_call": call})


def click(x: int, y: int) -> dict[str, Any]:
    return {"tool_name": "click_desktop", "element": "", "x": x, "y": y}


PLAN = {
    "tool_name": "update_plan",
    "goals": [{"title": "Open the file", "status": "done"}, {"title": "Save", "status": "running"}],
}


class Run:
    """A session driven by model answers in the format; each step's prompt kept."""

    def __init__(self, dialect: Dialect | None = None) -> None:
        self.dialect = dialect or H
        self.session = Session(
            SessionRequest(task="Save the file."),
            policy_name="test",
            max_steps=100,
            history_frames=self.dialect.spec.frames_kept,
        )
        self.prompts: list[tuple[ChatMessage, ...]] = []
        self._outcome = (ActionStatus.OK, "")

    def step(self, text: str, status: ActionStatus = ActionStatus.OK, error: str = "") -> None:
        """Observe, build the prompt, record `text`; its actions then report `status`."""
        was, why = self._outcome
        results = tuple(ActionResult(a.action_id, was, why) for a in self.session.pending)
        self.session.accept_results(results, "observation.results")
        number = len(self.prompts) + 1
        self.session.accept_frame(EncodedFrame(f"f{number}", FRAME, ImageEncoding.PNG), "frame")
        self.prompts.append(self.dialect.step_messages(self.context(), self.images()))
        parsed = self.dialect.parse_step(text, self.dialect.geometry(FRAME))
        self.session.record_decision(Decision(parsed.actions, parsed.thought, parsed.note))
        self._outcome = (status, error)

    def context(self) -> StepContext:
        return self.session.context()

    def images(self) -> tuple[ImagePart, ...]:
        return tuple(
            ImagePart(f.frame_id.encode(), "image/png", 64, 32) for f in self.context().frames
        )

    def now(self) -> tuple[ChatMessage, ...]:
        """The prompt of the step that would come next (results all OK)."""
        self.step(answer(click(1, 1)))
        return self.prompts[-1]


def flat(messages: tuple[ChatMessage, ...]) -> list[tuple[str, list[str]]]:
    """Each turn's role and parts, images named by their frame."""
    return [
        (m.role, [p.data.decode() if isinstance(p, ImagePart) else p.text for p in m.content])
        for m in messages
    ]


def roles(messages: tuple[ChatMessage, ...]) -> list[str]:
    return [m.role for m in messages]


def test_earlier_steps_come_back_as_parsed_json_with_their_tool_outputs() -> None:
    run = Run()
    run.step(answer(click(400, 200), note="a dialog is open", thought="Close it."))
    run.step(answer(PLAN, note=None, thought="Plan it."))
    prompt = run.now()
    assert roles(prompt) == ["system", "user"] + ["user", "assistant", "user"] * 2 + ["user"]
    _, task, obs1, step1, out1, _, step2, out2, obs3 = prompt
    assert task.text == "Task: Save the file."
    assert obs1.text == "<observation>\n\n</observation>"
    assert [i.data for i in obs1.images] == [b"f1"]
    # Only the parsed step, coordinates in the model's 0-1000 space, never the raw text.
    assert json.loads(step1.text) == {
        "note": "a dialog is open",
        "thought": "Close it.",
        "tool_call": click(400, 200),
    }
    assert out1.text == '<tool_output tool="click_desktop">\n\n</tool_output>'
    assert json.loads(step2.text) == {"note": None, "thought": "Plan it.", "tool_call": PLAN}
    assert out2.text == (
        '<tool_output tool="update_plan">\n- [done] Open the file\n- [running] Save\n</tool_output>'
    )
    assert [i.data for i in obs3.images] == [b"f3"]
    assert roles(prompt)[-1] == "user"


def test_an_action_that_failed_comes_back_as_an_error() -> None:
    run = Run()
    run.step(answer({"tool_name": "hotkey_desktop", "keys": ["ctrl", "s"]}))
    run.step(answer(click(5, 5)), status=ActionStatus.FAILED, error="no window at the point")
    run.step(answer(click(6, 6)), status=ActionStatus.REJECTED)
    prompt = run.now()
    outputs = [m.text for m in prompt[4::3]][:3]
    assert outputs == [
        '<tool_output tool="hotkey_desktop">\n\n</tool_output>',
        '<error tool="click_desktop">\nfailed: no window at the point\n</error>',
        '<error tool="click_desktop">\nrejected\n</error>',
    ]


def test_old_screenshots_become_the_placeholder_inside_their_observation() -> None:
    run = Run()
    for n in range(9):
        run.step(answer(click(10 * n, 10), note=f"note {n}"))
    prompt = run.now()
    images = [p for m in prompt for p in m.content if isinstance(p, ImagePart)]
    assert 1 <= len(images) <= H.spec.frames_kept
    assert images[-1].data == b"f10"
    observations = [m for m in prompt if m.text.startswith("<observation>")]
    assert len(observations) == 10  # every earlier step still in the text window
    placeholders = [m for m in observations if not m.images]
    assert len(placeholders) == 10 - len(images)
    assert all(
        m.text == f"<observation>\n{IMAGE_PLACEHOLDER}\n</observation>" for m in placeholders
    )
    # The placeholders are the oldest ones.
    assert observations[: len(placeholders)] == placeholders


def test_each_prompt_begins_with_the_previous_one_between_image_drops() -> None:
    run = Run()
    for n in range(12):
        run.step(answer(click(n, n), note=f"n{n}"))
    extended = 0
    for before, after in zip(run.prompts, run.prompts[1:], strict=False):
        if flat(after[: len(before) - 1]) == flat(before[:-1]):
            extended += 1
    # One step in a block of 3 rebuilds from the dropped screenshot on.
    assert extended >= 7


def test_notes_and_the_plan_outlive_the_window_in_a_memory_turn() -> None:
    short = HDesktopDialect(H.spec.model_copy(update={"history_steps": 2}))
    run = Run(short)
    run.step(answer(PLAN, note="the file is report.txt"))
    run.step(answer(click(1, 1), note=None))
    for n in range(8):
        run.step(answer(click(2, 2), note=f"seen {n}"))
    prompt = run.now()
    memory = prompt[2]
    assert memory.role == "user"
    assert memory.text.startswith(
        "<memory>\nNotes from earlier steps:\n- step 1: the file is report.txt\n"
    )
    assert "- step 3: seen 0\n" in memory.text
    assert memory.text.endswith("Plan:\n- [done] Open the file\n- [running] Save\n</memory>\n")
    # The steps still in the window are not repeated in it.
    window = [json.loads(m.text)["note"] for m in prompt if m.role == "assistant"]
    assert window
    assert all(note not in memory.text for note in window)


def test_a_plan_still_in_view_is_not_repeated_in_memory() -> None:
    run = Run()
    run.step(answer(PLAN))
    prompt = run.now()
    assert not any(m.text.startswith("<memory>") for m in prompt)


def test_the_system_prompt_holds_the_schema_and_the_coordinate_rule() -> None:
    run = Run()
    run.step(answer(click(1, 1)))
    system = run.prompts[0][0].text
    assert json.dumps(H.step_schema(), separators=(",", ":")) in system
    assert "integers in [0, 1000]" in system
    assert H.action_list() in system
    assert key_names_text() in system


def test_a_user_reply_follows_the_screen_now() -> None:
    run = Run()
    run.step(answer(click(1, 1)))
    pending = run.session.pending
    run.session.accept_results(
        tuple(ActionResult(a.action_id, ActionStatus.OK) for a in pending), "r"
    )
    run.session.accept_frame(EncodedFrame("f2", FRAME, ImageEncoding.PNG), "frame")
    context = dataclasses.replace(run.context(), user_reply="use the Desktop folder")
    last = H.step_messages(context, run.images())[-1]
    assert [i.data for i in last.images] == [b"f2"]
    assert last.text.endswith(
        "\n</observation>\n<user_reply>\nuse the Desktop folder\n</user_reply>"
    )


def test_replayed_steps_parse_to_the_actions_the_session_recorded() -> None:
    calls: list[dict[str, Any]] = [
        click(400, 200),
        {"tool_name": "click_desktop", "element": "", "x": 3, "y": 4, "button": "middle"},
        {"tool_name": "double_click_desktop", "element": "", "x": 1000, "y": 0},
        {"tool_name": "move_to_desktop", "element": "", "x": 250, "y": 750},
        {"tool_name": "drag_to_desktop", "element": "", "x": 999, "y": 1},
        {"tool_name": "scroll_desktop", "element": "", "x": 5, "y": 5, "direction": "left",
         "scroll_size": 42},
        {"tool_name": "write_desktop", "content": "hi", "press_enter": True, "overwrite": True},
        {"tool_name": "hotkey_desktop", "keys": ["ctrl", "z"], "repeat_count": 4},
        {"tool_name": "hold_and_tap_key_desktop", "hold_keys": ["alt"], "tap_keys": ["tab", "tab"]},
        {"tool_name": "key_down_desktop", "key": "shift"},
        {"tool_name": "key_up_desktop", "key": "shift"},
    ]  # fmt: skip
    run = Run()
    recorded: list[ParsedStep] = []
    for call in calls:
        run.step(answer(call))
        recorded.append(run.dialect.parse_step(answer(call), H.geometry(FRAME)))
    prompt = run.now()
    replayed = [m for m in prompt if m.role == "assistant"]
    geometry = H.geometry(FRAME)
    for message, call, step in zip(replayed, calls, recorded, strict=True):
        assert json.loads(message.text)["tool_call"]["tool_name"] == call["tool_name"]
        assert step.actions
        assert H.parse_step(message.text, geometry).actions == step.actions
