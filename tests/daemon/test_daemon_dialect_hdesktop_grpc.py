"""A whole RunSession over gRPC against a real daemon whose model answers in H
Company's desktop format (a ScriptedEngine speaking hdesktop): the actions on the
wire, the schema the engine is held to, and what the model is told of each step."""

from __future__ import annotations

import json
from typing import Any

from holodesk.daemon.dialects import get_dialect
from holodesk.daemon.engines.scripted import ScriptedEngine
from holodesk.daemon.policies.model import ModelPolicy
from holodesk.proto.v1 import action_pb2, agent_pb2
from tests.daemon.support import make_frame, ok_results, running_daemon


def answer(call: dict[str, Any], note: str | None = None) -> str:
    return json.dumps({"note": note, "thought": f"use {call['tool_name']}", "tool_call": call})


def at(name: str, x: int, y: int, **extra: Any) -> dict[str, Any]:
    return {"tool_name": name, "element": "the target", "x": x, "y": y, **extra}


PLAN = {"tool_name": "update_plan", "goals": [{"title": "Move the card", "status": "running"}]}
SCRIPT = [
    answer(PLAN, note="a card sits top left"),
    answer(at("move_to_desktop", 100, 100)),
    answer(at("drag_to_desktop", 600, 800, element="the done column")),
    answer(at("scroll_desktop", 500, 500, direction="up", scroll_size=7)),
    answer(
        {"tool_name": "write_desktop", "content": "héllo", "overwrite": True, "press_enter": True}
    ),
    answer({"tool_name": "hold_and_tap_key_desktop", "hold_keys": ["shift"], "tap_keys": ["tab"]}),
    answer(at("click_desktop", 1000, 0, button="right")),
    answer({"tool_name": "answer", "content": "moved"}),
]


def kinds(actions: agent_pb2.Actions) -> list[str]:
    return [str(a.WhichOneof("kind")) for a in actions.actions]


async def test_a_session_in_the_hdesktop_format_runs_over_grpc() -> None:
    dialect = get_dialect("hdesktop")
    engine = ScriptedEngine(
        SCRIPT, exhausted_output=answer({"tool_name": "answer", "content": "?"})
    )
    policy = ModelPolicy(dialect, engine, name="hdesktop-scripted")
    async with running_daemon([policy]) as daemon:
        stream = daemon.stream()
        started = await stream.start("move the card to done", max_steps=20)
        assert started.policy == "hdesktop-scripted"

        # update_plan: no desktop action, an empty batch; the client just looks again.
        plan = await stream.observe(make_frame("f1", 1000, 500))
        assert list(plan.actions.actions) == []
        assert plan.actions.thought == "use update_plan"

        move = await stream.observe(make_frame("f2", 1000, 500))
        assert kinds(move.actions) == ["move"]
        assert (move.actions.actions[0].move.point.x, move.actions.actions[0].move.point.y) == (
            100.0,
            50.0,
        )

        # drag_to_desktop: pressed where the pointer is (no point, no frame), released at x, y.
        drag = await stream.observe(make_frame("f3", 1000, 500), ok_results(move.actions))
        down, up = drag.actions.actions
        assert down.WhichOneof("kind") == "mouse_down"
        assert not down.mouse_down.HasField("point")
        assert down.frame_id == ""
        assert down.mouse_down.button == action_pb2.MOUSE_BUTTON_LEFT
        assert up.WhichOneof("kind") == "mouse_up"
        assert (up.mouse_up.point.x, up.mouse_up.point.y) == (600.0, 400.0)
        assert up.frame_id == "f3"

        # The drag's release failed: the model is told so on the next step.
        failed = [
            action_pb2.ActionResult(action_id=down.action_id, status=action_pb2.ACTION_STATUS_OK),
            action_pb2.ActionResult(
                action_id=up.action_id, status=action_pb2.ACTION_STATUS_FAILED, error="stuck"
            ),
        ]
        scroll = await stream.observe(make_frame("f4", 1000, 500), failed)
        (wheel,) = scroll.actions.actions
        assert (wheel.scroll.dx, wheel.scroll.dy) == (0, -7)
        assert (wheel.scroll.point.x, wheel.scroll.point.y) == (500.0, 250.0)

        write = await stream.observe(make_frame("f5", 1000, 500), ok_results(scroll.actions))
        assert kinds(write.actions) == ["key_chord", "key_chord", "type_text", "key_chord"]
        assert [
            list(a.key_chord.keys) for a in write.actions.actions if a.HasField("key_chord")
        ] == [
            ["ctrl", "a"],
            ["delete"],
            ["enter"],
        ]
        assert write.actions.actions[2].type_text.text == "héllo"

        hold = await stream.observe(make_frame("f6", 1000, 500), ok_results(write.actions))
        assert kinds(hold.actions) == ["key_down", "key_chord", "key_up"]
        assert hold.actions.actions[0].key_down.key == "shift"

        right = await stream.observe(make_frame("f7", 1000, 500), ok_results(hold.actions))
        (press,) = right.actions.actions
        assert press.click.button == action_pb2.MOUSE_BUTTON_RIGHT
        assert (press.click.point.x, press.click.point.y) == (1000.0, 0.0)

        last = await stream.observe(make_frame("f8", 1000, 500), ok_results(right.actions))
        assert last.ended.outcome == agent_pb2.SESSION_OUTCOME_SUCCEEDED
        assert last.ended.answer == "moved"
        await stream.finished_ok()

    # Every request held the engine to the format's schema; the last one told the model
    # its history in the harness's words.
    assert {json.dumps(r.json_schema) for r in engine.requests} == {
        json.dumps(dialect.step_schema())
    }
    final = engine.requests[-1].messages
    texts = [m.text for m in final]
    assert texts[1] == "Task: move the card to done"
    assert '<tool_output tool="update_plan">\n- [running] Move the card\n</tool_output>' in texts
    assert '<error tool="drag_to_desktop">\nfailed: stuck\n</error>' in texts
    assert '<tool_output tool="scroll_desktop">\n\n</tool_output>' in texts
    replayed = [json.loads(m.text) for m in final if m.role == "assistant"]
    assert [r["tool_call"]["tool_name"] for r in replayed] == [
        "update_plan",
        "move_to_desktop",
        "drag_to_desktop",
        "scroll_desktop",
        "write_desktop",
        "hold_and_tap_key_desktop",
        "click_desktop",
    ]
    assert replayed[0]["note"] == "a card sits top left"
    assert replayed[2]["tool_call"] == {
        "tool_name": "drag_to_desktop",
        "element": "",
        "x": 600,
        "y": 800,
    }
    assert len(final[-1].images) == 1
