"""The hdesktop dialect on the openai engine, against a stand-in OpenAI-compatible
server: the format's schema goes out as response_format, the harness's conversation
(tool outputs as user turns, earlier steps as assistant JSON, screenshots as image
parts) reaches the server as chat messages, and the server's tool calls drive the
session."""

from __future__ import annotations

import json
from typing import Any

from holodesk.daemon.dialects import get_dialect
from holodesk.daemon.engines.openai_engine import OpenAIEngine
from holodesk.daemon.policies.model import ModelPolicy
from holodesk.proto.v1 import agent_pb2
from tests.daemon.support import make_frame, ok_results, running_daemon
from tests.support.openai_server import OpenAIServer, Reply


def answer(call: dict[str, Any]) -> str:
    return json.dumps({"note": None, "thought": "t", "tool_call": call})


async def test_a_session_in_the_hdesktop_format_on_the_openai_engine() -> None:
    script = [
        Reply(text=answer({"tool_name": "click_desktop", "element": "box", "x": 500, "y": 250})),
        Reply(text=answer({"tool_name": "answer", "content": "clicked"})),
    ]
    dialect = get_dialect("hdesktop")
    async with OpenAIServer(models=["holo"], script=script) as server:
        policy = ModelPolicy(dialect, OpenAIEngine(server.base_url, "holo"))
        async with running_daemon([policy]) as daemon:
            stream = daemon.stream()
            await stream.start("click the box", max_steps=5)
            first = await stream.observe(make_frame("f1", 1280, 720))
            (click,) = first.actions.actions
            assert (click.click.point.x, click.click.point.y) == (640.0, 180.0)
            ended = await stream.observe(make_frame("f2", 1280, 720), ok_results(first.actions))
            assert ended.ended.outcome == agent_pb2.SESSION_OUTCOME_SUCCEEDED
            assert ended.ended.answer == "clicked"
            await stream.finished_ok()
    first_body, second_body = (seen.body for seen in server.seen)
    sent = first_body["response_format"]
    assert sent["type"] == "json_schema"
    assert sent["json_schema"]["schema"] == dialect.step_schema()
    roles = [m["role"] for m in second_body["messages"]]
    assert roles == ["system", "user", "user", "assistant", "user", "user"]
    _, task, obs1, step1, output1, now = second_body["messages"]
    assert _text(task) == "Task: click the box"
    assert json.loads(_text(step1))["tool_call"]["tool_name"] == "click_desktop"
    assert _text(output1) == '<tool_output tool="click_desktop">\n\n</tool_output>'
    for observation in (obs1, now):
        kinds = [p["type"] for p in observation["content"]]
        assert kinds == ["text", "image_url", "text"]
        assert observation["content"][0]["text"] == "<observation>\n"


def _text(message: dict[str, Any]) -> str:
    content = message["content"]
    if isinstance(content, str):
        return content
    return "".join(p["text"] for p in content if p["type"] == "text")
