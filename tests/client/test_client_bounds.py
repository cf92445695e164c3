"""The client bounds each step by default (issue 15 item 10): one type action's text,
one batch's length (never past the contract's), and typed characters count in the
rate limit.

Through a real session against the scripted daemon: what the daemon (and so the
model) gets back is read off the wire.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from dataclasses import replace

import pytest

from holodesk.client import actions as a
from holodesk.client.events import Outcome
from holodesk.client.halt import Halt
from holodesk.client.run import command as run_command
from holodesk.client.run.command import session_options
from holodesk.client.safety import SafetyGuard, SafetySettings
from holodesk.client.session import SessionOptions, run_session
from holodesk.platform.backends import fake
from holodesk.proto.v1 import action_pb2, agent_pb2

from .scripted import Conversation, Script, ScriptedDaemon, done, type_text, wait

pytestmark = pytest.mark.abuse

Daemon = Callable[[Script], ScriptedDaemon]
NO_HOTKEY = SessionOptions(safety=SafetySettings(emergency_stop=None, fail_safe=False))


def _one_step(batch: list[action_pb2.Action], seen: list[agent_pb2.Observation]) -> Script:
    async def script(conv: Conversation) -> None:
        await conv.open()
        await conv.send_actions(1, *batch)
        seen.append(await conv.recv_observation())
        await conv.send_actions(2, done("d", "ok"))
        await conv.recv_observation()
        await conv.end(agent_pb2.SESSION_OUTCOME_SUCCEEDED, answer="ok")

    return script


async def test_a_type_action_past_the_default_limit_is_refused(
    daemon: Daemon, backend: fake.FakeBackend
) -> None:
    """Proves: 20,000 characters in one type action are refused by default, before any
    is typed, with a reason the daemon receives; the action after it is skipped."""
    seen: list[agent_pb2.Observation] = []
    batch = [type_text("long", "x" * 20_000), type_text("after", "y")]
    server = daemon(_one_step(batch, seen))
    outcome = await run_session(server.target, "t", backend, NO_HOTKEY)
    assert outcome.outcome is Outcome.SUCCEEDED
    (observation,) = seen
    long, after = observation.results
    assert long.status == action_pb2.ACTION_STATUS_REJECTED
    assert long.error == (
        "this action types 20,000 characters; this client types at most 10,000 per "
        "action (--max-type-chars): send the text in smaller actions"
    )
    assert after.status == action_pb2.ACTION_STATUS_SKIPPED
    assert not [e for e in backend.input.events if isinstance(e, fake.Text)]


async def test_a_batch_past_the_limit_is_refused_whole(
    daemon: Daemon, backend: fake.FakeBackend
) -> None:
    """Proves: a batch longer than --max-batch is refused, none of it runs, and the
    daemon gets a result for every action (the first says why)."""
    seen: list[agent_pb2.Observation] = []
    batch = [type_text("t0", "hello")] + [wait(f"w{n}", 0) for n in range(1, 10)]
    server = daemon(_one_step(batch, seen))
    options = replace(NO_HOTKEY, safety=replace(NO_HOTKEY.safety, max_batch_actions=5))
    outcome = await run_session(server.target, "t", backend, options)
    assert outcome.outcome is Outcome.SUCCEEDED
    (observation,) = seen
    first, *rest = observation.results
    assert first.action_id == "t0"
    assert first.status == action_pb2.ACTION_STATUS_REJECTED
    assert first.error == (
        "this batch has 10 actions; this client runs at most 5 per batch "
        "(--max-batch): none of it ran, send fewer per step"
    )
    assert len(rest) == 9
    assert {r.status for r in rest} == {action_pb2.ACTION_STATUS_SKIPPED}
    assert backend.input.events == []


async def test_a_batch_past_the_contract_ends_the_session(
    daemon: Daemon, backend: fake.FakeBackend
) -> None:
    """Proves: by default a batch of 1,000 actions (the contract allows 64, and so
    many results could not be answered) runs none of them: the session ends as an
    error, saying why, and the daemon is told (it used to run them all)."""
    cancels: list[str] = []

    async def script(conv: Conversation) -> None:
        await conv.open()
        await conv.send_actions(
            1, type_text("t0", "hello"), *(wait(f"w{n}", 0) for n in range(1, 1_000))
        )
        cancels.append((await conv.recv()).cancel.reason)

    server = daemon(script)
    outcome = await run_session(server.target, "t", backend, NO_HOTKEY)
    reason = (
        "the daemon sent 1,000 actions in one batch; the contract allows at most 64: "
        "none of them ran"
    )
    assert outcome.outcome is Outcome.ERROR
    assert outcome.reason == reason
    assert cancels == [reason]
    assert backend.input.events == []


def test_typed_characters_count_in_the_rate_limit(backend: fake.FakeBackend) -> None:
    """Proves: past one action's worth of characters, typing waits for the typing rate,
    per character, however few actions carry them (the action rate alone let any
    amount of text through)."""
    now = [0.0]
    pauses: list[float] = []

    def pause(seconds: float, halt: Halt) -> bool:
        pauses.append(seconds)
        return False

    settings = SafetySettings(
        emergency_stop=None,
        fail_safe=False,
        max_actions_per_second=1_000,
        max_chars_per_second=100,
        max_type_chars=200,
    )
    guard = SafetyGuard(settings, backend, pause=pause, clock=lambda: now[0])
    halt = Halt()
    assert guard.admit(a.TypeText(action_id="1", text="x" * 200), halt) == ""
    assert pauses == []  # one action's worth goes at once
    assert guard.admit(a.TypeText(action_id="2", text="x" * 50), halt) == ""
    assert pauses == [pytest.approx(0.5)]  # 50 characters at 100 per second
    assert guard.admit(a.Navigate(action_id="3", url="https://example.org/"), halt) == ""
    assert pauses[-1] == pytest.approx(0.7)  # a URL typed into the address bar counts too


def test_the_limits_are_on_by_default_and_can_be_changed() -> None:
    """Proves: `holodesk run` applies the bounds unless told otherwise (0 turns the
    text and typing-rate ones off; a batch stays within the contract's 64)."""
    parser = argparse.ArgumentParser()
    run_command.configure(parser)
    defaults = session_options(parser.parse_args(["--server", "x:1", "t"])).safety
    assert (defaults.max_type_chars, defaults.max_batch_actions) == (10_000, 64)
    assert defaults.max_chars_per_second == 1_000
    argv = ["--server", "x:1", "--max-type-chars", "0", "--max-batch", "5"]
    argv += ["--max-type-rate", "0", "t"]
    changed = session_options(parser.parse_args(argv)).safety
    assert (changed.max_type_chars, changed.max_batch_actions) == (0, 5)
    assert changed.max_chars_per_second == 0
