"""A whole RunSession over gRPC against a real daemon whose model calls the
nemotron-tools natively (a ScriptedEngine answering tool replies, as every engine
answers a request with tools; the engines' own tool handling is tested in
tests/engines): the actions on the wire, every request carrying the dialect's
tools, a malformed call repaired through the parse-error path, and the history
told back as tool calls and tool turns."""

from __future__ import annotations

import json
from typing import Any

from holodesk.daemon.dialects import get_dialect
from holodesk.daemon.engines.base import ToolCall
from holodesk.daemon.engines.scripted import ScriptedEngine
from holodesk.daemon.engines.tool_reply import reply_text
from holodesk.daemon.policies.model import ModelPolicy
from holodesk.proto.v1 import action_pb2, agent_pb2
from tests.daemon.support import make_frame, ok_results, running_daemon


def call(name: str, arguments: dict[str, Any] | str, said: str = "") -> str:
    text = arguments if isinstance(arguments, str) else json.dumps(arguments)
    return reply_text(said or f"use {name}", [ToolCall(name, text, f"id-{name}")])


def computer(*actions: dict[str, Any]) -> dict[str, Any]:
    return {"actions": list(actions)}


SCRIPT = [
    call("computer", computer({"action": "left_click", "coordinate": [0.1, 0.2]},
                              {"action": "type", "text": "héllo"},
                              {"action": "key_press", "keys": ["enter"]})),
    call("computer", '{"actions": [{"action": "left_cl'),  # cut short: repaired
    call("computer", computer({"action": "scroll", "coordinate": [0.5, 0.5],
                               "scroll_parameters": {"scroll_direction": "down",
                                                     "scroll_amount": 5}})),
    call("navigate", {"url": "https://example.com/report"}),
    call("terminate", {"status": "success", "answer": "sent"}),
]  # fmt: skip


def kinds(actions: agent_pb2.Actions) -> list[str]:
    return [str(a.WhichOneof("kind")) for a in actions.actions]


async def test_a_session_with_native_tool_calls_runs_over_grpc() -> None:
    dialect = get_dialect("nemotron-tools")
    gave_up = call("terminate", {"status": "failure", "answer": "?"})
    engine = ScriptedEngine(SCRIPT, exhausted_output=gave_up)
    policy = ModelPolicy(dialect, engine, name="nemotron-scripted")
    async with running_daemon([policy]) as daemon:
        stream = daemon.stream()
        await stream.start("send the report", max_steps=20)
        first = await stream.observe(make_frame("f1", 1000, 500))
        assert kinds(first.actions) == ["click", "type_text", "key_chord"]
        click = first.actions.actions[0].click
        assert (click.point.x, click.point.y) == (100.0, 100.0)
        assert first.actions.actions[1].type_text.text == "héllo"

        # The cut-short call is a parse error; the repair turn gets the scroll.
        scroll = await stream.observe(make_frame("f2", 1000, 500), ok_results(first.actions))
        (wheel,) = scroll.actions.actions
        assert (wheel.scroll.dx, wheel.scroll.dy) == (0, 5)

        failed = [
            action_pb2.ActionResult(
                action_id=wheel.action_id, status=action_pb2.ACTION_STATUS_FAILED, error="stuck"
            )
        ]
        nav = await stream.observe(make_frame("f3", 1000, 500), failed)
        assert nav.actions.actions[0].navigate.url == "https://example.com/report"

        last = await stream.observe(make_frame("f4", 1000, 500), ok_results(nav.actions))
        assert last.ended.outcome == agent_pb2.SESSION_OUTCOME_SUCCEEDED
        assert last.ended.answer == "sent"
        await stream.finished_ok()

    requests = list(engine.requests)
    assert len(requests) == 5  # one repair
    assert all(r.tools == dialect.tool_use() for r in requests)
    assert all(r.json_schema is None for r in requests)
    repair = requests[2].messages
    assert repair[-1].role == "tool"
    assert "not JSON" in repair[-1].text
    final = requests[-1].messages
    calls = [m.tool_calls[0] for m in final if m.tool_calls]
    assert [c.name for c in calls] == ["computer", "computer", "navigate"]
    assert [c.id for c in calls] == ["call_1", "call_2", "call_3"]
    results = {m.tool_call_id: m.text for m in final if m.role == "tool"}
    assert results == {"call_1": "ok", "call_2": "error: failed: stuck", "call_3": "ok"}
    # The first call as the model made it, in its own coordinates (0-1).
    assert json.loads(calls[0].arguments)["actions"][0] == {
        "action": "left_click",
        "coordinate": [0.1, 0.2],
    }
