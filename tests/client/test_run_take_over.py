"""The terminal of `holodesk run` says when an operator holds the session and when
it goes on: a line in text mode, an event in --json (paused, taken_over,
handed_back with the note, resumed). It once said nothing while the agent waited
for a person who had taken the desktop over in the live view.

A real daemon with its live view; `holodesk run` (main, in a thread) on the fake
backend; the hold comes from the live view's own HTTP API (Pause, Take over, Hand
back), as a person's clicks send it.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any

import aiohttp
import pytest

from holodesk.client.cli import main
from holodesk.client.exit_codes import ExitCode
from holodesk.daemon.session.sessions import Session
from tests.daemon.support import GUARD_S, RecordingPolicy, holo, running_daemon, wait_until

WAITS = 50
NOTE = "I closed the dialog myself"
SCRIPT = [holo({"action": "wait", "seconds": 0.05}, thought="look again")] * WAITS + [
    holo({"action": "answer", "content": "finished"}, thought="all done")
]


@asynccontextmanager
async def running_run(*flags: str) -> AsyncIterator[tuple[Any, Session, RecordingPolicy]]:
    """A daemon with its live view, `holodesk run FLAGS` against it, and its session
    once its first step was decided; yields (the live view's URL maker, the session,
    the policy) and waits for the run to end."""
    policy = RecordingPolicy(SCRIPT)
    async with running_daemon([policy], web="127.0.0.1:0") as daemon:
        argv = ["run", "--server", daemon.running.address, "--backend", "fake", "--no-estop"]
        run = asyncio.create_task(asyncio.to_thread(main, [*argv, *flags, "watch and wait"]))
        registry = daemon.running.registry
        await wait_until(lambda: len(registry) == 1 and policy.decisions >= 1, "a first step")
        (session,) = registry.list()
        web = daemon.running.web
        assert web is not None
        yield (lambda path: web.url.rstrip("/") + path), session, policy
        assert await asyncio.wait_for(run, GUARD_S) == ExitCode.SUCCEEDED


async def post(url: str, body: dict[str, str] | None = None) -> None:
    async with (
        aiohttp.ClientSession() as http,
        http.post(
            url, data=json.dumps(body or {}), headers={"Content-Type": "application/json"}
        ) as response,
    ):
        assert response.status == 200, await response.text()


async def until_printed(read: Callable[[], str], text: str) -> None:
    await wait_until(lambda: text in read(), repr(text))


async def test_json_says_paused_taken_over_and_handed_back_with_the_note(
    capsys: pytest.CaptureFixture[str],
) -> None:
    out: list[str] = []

    def read() -> str:
        out.append(capsys.readouterr().out)
        return "".join(out)

    async with running_run("--json") as (url, session, policy):
        control = url(f"/api/sessions/{session.session_id}")
        await post(control + "/pause")
        await until_printed(read, '"event": "paused"')
        await asyncio.wait_for(session.held.wait(), GUARD_S)
        await post(control + "/takeover")
        await until_printed(read, '"event": "taken_over"')
        decided = policy.decisions
        await asyncio.sleep(0.3)
        assert policy.decisions == decided  # held: the agent decides nothing
        await post(control + "/resume", {"note": NOTE})
        await until_printed(read, '"event": "handed_back"')
    events = [json.loads(line) for line in read().splitlines()]
    kinds = [e["event"] for e in events]
    held = [e for e in events if e["event"] in ("paused", "taken_over", "handed_back", "resumed")]
    assert [e["event"] for e in held] == ["paused", "taken_over", "handed_back"]
    assert held[-1]["note"] == NOTE
    assert kinds.index("taken_over") < kinds.index("handed_back") < kinds.index("outcome")
    # The fresh screen asked for after the hold is no step: steps stay one per number.
    steps = [e["step"] for e in events if e["event"] == "step"]
    assert steps == list(range(1, len(steps) + 1))
    (outcome,) = [e for e in events if e["event"] == "outcome"]
    assert outcome["steps"] == len(steps) == WAITS + 1


async def test_text_says_taken_over_and_handed_back(capsys: pytest.CaptureFixture[str]) -> None:
    err: list[str] = []

    def read() -> str:
        err.append(capsys.readouterr().err)
        return "".join(err)

    async with running_run() as (url, session, _):
        control = url(f"/api/sessions/{session.session_id}")
        await post(control + "/takeover")
        await until_printed(read, "taken over: an operator has the desktop")
        await post(control + "/resume", {"note": NOTE})
        await until_printed(read, f"handed back with a note: '{NOTE}'")
        await post(control + "/pause")
        await until_printed(read, "paused by an operator")
        await post(control + "/resume")
        await until_printed(read, "resumed; the agent goes on")
    assert "succeeded after" in read()
