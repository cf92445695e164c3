"""Structured logs: every line of a session names it (and its step and actions), in
text or JSON, with credentials still redacted."""

from __future__ import annotations

import asyncio
import io
import json
import logging
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import grpc
import pytest

from holodesk.daemon import logs
from holodesk.daemon.logredact import REDACTED
from tests.daemon.support import (
    GUARD_S,
    HOLODESKD,
    RecordingPolicy,
    Stream,
    holo,
    make_frame,
    ok_results,
    running_daemon,
    scripted_policy,
)

CLICK = holo({"action": "click", "x": 500, "y": 500})
ANSWER = holo({"action": "answer", "content": "done"})
TOKEN = "hdk_" + "s3cretT0kenValue" * 2


@pytest.fixture
def json_log() -> Iterator[io.StringIO]:
    """The root logger's records as JSON lines, while the test runs."""
    stream = io.StringIO()
    handler = logs.make_handler("json", stream)
    root = logging.getLogger()
    level = root.level
    root.addHandler(handler)
    root.setLevel(logging.INFO)
    try:
        yield stream
    finally:
        root.removeHandler(handler)
        root.setLevel(level)


def entries(stream: io.StringIO) -> list[dict[str, Any]]:
    lines = stream.getvalue().splitlines()
    assert lines, "nothing was logged"
    return [json.loads(line) for line in lines]


async def test_each_sessions_lines_carry_its_own_id_step_and_actions(
    json_log: io.StringIO,
) -> None:
    # Each session's step 1 starts with "oops": the policy logs the retry from its own task.
    policies = [scripted_policy(["oops", CLICK, ANSWER])]
    async with running_daemon(policies) as daemon:
        one, two = daemon.stream(), daemon.stream()
        first = await one.start("first task")
        second = await two.start("second task")
        # Interleaved: both sessions are live in the same process at once.
        a1 = await one.observe(make_frame("a1"))
        b1 = await two.observe(make_frame("b1"))
        await one.call.done_writing()  # the client leaves after step 1: CANCELLED
        assert (await one.recv()).ended.reason == "the client closed its stream"
        b2 = await two.observe(make_frame("b2"), ok_results(b1.actions))
        assert b2.ended.answer == "done"
    found = entries(json_log)
    ids = {first.session_id: "first task", second.session_id: "second task"}
    mentioning = [e for e in found if any(i in e["message"] for i in ids)]
    assert len(mentioning) >= 4
    for entry in mentioning:
        (named,) = (i for i in ids if i in entry["message"])
        assert entry.get("session_id") == named, entry

    retries = [e for e in found if e["message"].startswith("unusable output")]
    assert len(retries) == 2
    for retry in retries:
        assert retry["logger"] == "holodesk.daemon.policies.model"
        assert retry["step"] == 1
    assert {r["session_id"] for r in retries} == set(ids)

    left = next(e for e in found if "ended cancelled" in e["message"])
    assert left["session_id"] == first.session_id
    assert left["step"] == 1
    assert left["action_ids"] == [a.action_id for a in a1.actions.actions]

    done = next(e for e in found if "ended succeeded" in e["message"])
    assert done["session_id"] == second.session_id
    assert done["step"] == 2
    assert "action_ids" not in done  # step 2 sent none: it ended the session
    # Lines outside any session carry no session fields.
    listening = next(e for e in found if e["message"].startswith("holodeskd listening"))
    assert not {"session_id", "step", "action_ids"} & listening.keys()


async def test_a_step_timeout_warning_names_the_session_and_step(json_log: io.StringIO) -> None:
    policy = RecordingPolicy([CLICK], block=True)
    async with running_daemon([policy], step_timeout_s=0.2) as daemon:
        stream = daemon.stream()
        started = await stream.start()
        ended = await stream.observe(make_frame("f1"))
        assert "step timeout" in ended.ended.reason
    warning = next(e for e in entries(json_log) if e["level"] == "WARNING")
    assert warning["session_id"] == started.session_id
    assert warning["step"] == 1


def test_json_lines_redact_credentials_in_messages_and_tracebacks() -> None:
    stream = io.StringIO()
    logger = logging.getLogger("holodesk.test.redaction")
    logger.propagate = False
    logger.setLevel(logging.INFO)
    logger.addHandler(logs.make_handler("json", stream))
    try:
        logger.info("header was %s", f"Bearer {TOKEN}")
        try:
            raise RuntimeError(f"bad token {TOKEN}")
        except RuntimeError:
            logger.exception("call failed")
        logger.info('unicode ✓ and "quotes"\nand a newline')
    finally:
        logger.handlers.clear()
        logger.propagate = True
    text = stream.getvalue()
    assert TOKEN not in text
    lines = [json.loads(line) for line in text.splitlines()]
    assert len(lines) == 3  # the newline stayed inside its JSON string
    assert lines[0]["message"] == f"header was Bearer {REDACTED}"
    assert lines[1]["message"] == "call failed"
    assert f"RuntimeError: bad token hdk_{REDACTED}" in lines[1]["exception"]
    assert lines[2]["message"] == 'unicode ✓ and "quotes"\nand a newline'
    assert lines[0]["level"] == "INFO"
    assert lines[1]["level"] == "ERROR"


def test_text_lines_append_the_session_context() -> None:
    stream = io.StringIO()
    handler = logs.make_handler("text", stream)
    record = logging.LogRecord("holodesk.x", logging.INFO, __file__, 1, "hello", None, None)
    record.session_id, record.step, record.action_ids = "abc", 3, ("abc-3-0", "abc-3-1")
    handler.handle(record)
    handler.handle(logging.LogRecord("holodesk.x", logging.INFO, __file__, 1, "bare", None, None))
    first, second = stream.getvalue().splitlines()
    assert first.endswith("INFO holodesk.x: hello [session=abc step=3 actions=abc-3-0,abc-3-1]")
    assert second.endswith("INFO holodesk.x: bare")


def test_unknown_format_is_refused() -> None:
    with pytest.raises(ValueError, match="unknown log format 'xml'"):
        logs.formatter("xml")  # type: ignore[arg-type]


async def _run_holodeskd(tmp_path: Path, log_format: str) -> tuple[str, list[str]]:
    """One session against a real holodeskd; its session id and stderr lines."""
    script = tmp_path / "script.json"
    script.write_text(json.dumps([CLICK, ANSWER]))
    process = await asyncio.create_subprocess_exec(
        str(HOLODESKD),
        *("--listen", "127.0.0.1:0", "--policy", "scripted", "--script", str(script)),
        *("--log-format", log_format),
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    assert process.stdout is not None
    assert process.stderr is not None
    try:
        line = (await asyncio.wait_for(process.stdout.readline(), GUARD_S)).decode()
        address = line.removeprefix("holodeskd listening on ").strip()
        async with grpc.aio.insecure_channel(address) as channel:
            stream = Stream(channel)
            started = await stream.start("log me")
            first = await stream.observe(make_frame("f1"))
            ended = await stream.observe(make_frame("f2"), ok_results(first.actions))
            assert ended.ended.answer == "done"
    finally:
        process.terminate()
        _, stderr = await asyncio.wait_for(process.communicate(), GUARD_S)
    return started.session_id, stderr.decode().splitlines()


async def test_holodeskd_json_lines_all_parse_and_name_the_session(tmp_path: Path) -> None:
    session_id, lines = await _run_holodeskd(tmp_path, "json")
    parsed = [json.loads(line) for line in lines]  # every line, not just the session's
    started = next(e for e in parsed if "started by" in e["message"])
    assert started["session_id"] == session_id
    assert started["logger"] == "holodesk.daemon.session.session_runner"
    ended = next(e for e in parsed if "ended succeeded" in e["message"])
    assert (ended["session_id"], ended["step"]) == (session_id, 2)


async def test_holodeskd_text_lines_name_the_session(tmp_path: Path) -> None:
    session_id, lines = await _run_holodeskd(tmp_path, "text")
    started = next(line for line in lines if "started by" in line)
    assert re.search(rf"\[session={session_id}\]$", started), started
    assert not lines[0].startswith("{")
