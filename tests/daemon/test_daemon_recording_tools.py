"""A tool-calling dialect's session, recorded and exported: its prompts keep the
calls the model made and the tool turns that answered them, and the dataset carries
them in the OpenAI chat form trainers read. Without them a recording of such a
session read as turns of text with no calls."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq

from holodesk.daemon.dialects import get_dialect
from holodesk.daemon.engines.scripted import ScriptedEngine
from holodesk.daemon.policies.model import ModelPolicy
from holodesk.data.export import ExportFormat, export
from holodesk.data.stepview import find_recordings
from holodesk.proto.v1 import agent_pb2
from tests.daemon.support import make_frame, ok_results, running_daemon
from tests.daemon.test_daemon_dialect_tools_grpc import call, computer
from tests.daemon.test_daemon_recording import recording_of

SCRIPT = [
    call("computer", computer({"action": "left_click", "coordinate": [0.1, 0.2]})),
    call("navigate", {"url": "https://example.com/"}),
    call("terminate", {"status": "success", "answer": "done"}),
]


async def test_a_tool_calling_session_is_recorded_and_exported_with_its_calls(
    tmp_path: Path,
) -> None:
    root = tmp_path / "recordings"
    policy = ModelPolicy(get_dialect("nemotron-tools"), ScriptedEngine(SCRIPT), name="tools")
    async with running_daemon([policy], record=True, record_dir=str(root)) as daemon:
        stream = daemon.stream()
        started = await stream.start("open the page", max_steps=10)
        reply = await stream.observe(make_frame("f1", 1000, 500))
        for index in (2, 3):
            reply = await stream.observe(
                make_frame(f"f{index}", 1000, 500), ok_results(reply.actions)
            )
        assert reply.ended.outcome == agent_pb2.SESSION_OUTCOME_SUCCEEDED
        await stream.finished_ok()

    actions = recording_of(root, started).steps()[-1].actions
    assert actions is not None
    prompt = actions.prompt
    assert prompt is not None
    made = [(m.role, [c.name for c in m.tool_calls]) for m in prompt if m.tool_calls]
    assert made == [("assistant", ["computer"]), ("assistant", ["navigate"])]
    assert [m.tool_call_id for m in prompt if m.role == "tool"] == ["call_1", "call_2"]
    first = next(m for m in prompt if m.tool_calls).tool_calls[0]
    assert json.loads(first.arguments) == computer(
        {"action": "left_click", "coordinate": [0.1, 0.2]}
    )

    kinds: tuple[tuple[ExportFormat, Callable[[Path], list[Any]]], ...] = (
        ("jsonl", _jsonl_rows),
        ("parquet", _parquet_rows),
    )
    for kind, read in kinds:
        out = tmp_path / kind
        export(find_recordings([root]), out, kind)
        messages = read(out)[-1]["messages"]
        calls = [m["tool_calls"][0] for m in messages if m.get("tool_calls")]
        assert [c["function"]["name"] for c in calls] == ["computer", "navigate"], kind
        assert {c["type"] for c in calls} == {"function"}
        assert [m["tool_call_id"] for m in messages if m["role"] == "tool"] == [
            "call_1",
            "call_2",
        ], kind


def _jsonl_rows(out: Path) -> list[Any]:
    lines = (out / "data.jsonl").read_text(encoding="utf-8").splitlines()
    return [json.loads(line) for line in lines]


def _parquet_rows(out: Path) -> list[Any]:
    rows: list[Any] = pq.read_table(out / "data.parquet").to_pylist()
    return rows
