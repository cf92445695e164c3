"""Safety rules seen from the daemon's side, through whole sessions.

A rejection is an answer, not an ending: the daemon gets REJECTED with the reason
and the session goes on. A fail-safe stop ends the session as cancelled. Held input
is released however a session ends.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

from holodesk.client import actions as a
from holodesk.client.cli import main
from holodesk.client.events import Outcome
from holodesk.client.exit_codes import ExitCode
from holodesk.client.safety import SafetySettings
from holodesk.client.session import SessionOptions, run_session
from holodesk.platform.backends import fake
from holodesk.proto.v1 import action_pb2, agent_pb2

from .scripted import (
    Conversation,
    Script,
    ScriptedDaemon,
    click,
    done,
    key_down,
    type_text,
)

Daemon = Callable[[Script], ScriptedDaemon]
OK = action_pb2.ACTION_STATUS_OK
REJECTED = action_pb2.ACTION_STATUS_REJECTED
SKIPPED = action_pb2.ACTION_STATUS_SKIPPED


def _chord(action_id: str, *keys: str) -> action_pb2.Action:
    return action_pb2.Action(
        action_id=action_id, key_chord=action_pb2.KeyChordAction(keys=list(keys))
    )


async def test_a_refusal_is_reported_and_the_session_goes_on(
    daemon: Daemon, backend: fake.FakeBackend
) -> None:
    observations: list[agent_pb2.Observation] = []

    async def script(conv: Conversation) -> None:
        await conv.open()
        await conv.send_actions(1, type_text("t1", "rm -rf ~"), type_text("t2", "more"))
        observations.append(await conv.recv_observation())
        await conv.send_actions(2, type_text("t3", "hello"), _chord("k", "ctrl", "alt", "del"))
        observations.append(await conv.recv_observation())
        await conv.send_actions(3, done("d", "ok"))
        await conv.recv_observation()
        await conv.end(agent_pb2.SESSION_OUTCOME_SUCCEEDED, answer="ok")

    def confirm(action: a.Action) -> bool:
        return not (isinstance(action, a.TypeText) and action.text.startswith("rm"))

    server = daemon(script)
    safety = SafetySettings(emergency_stop=None, confirm=confirm)
    outcome = await run_session(server.target, "t", backend, SessionOptions(safety=safety))

    assert outcome.outcome is Outcome.SUCCEEDED
    first, second = observations
    assert [r.status for r in first.results] == [REJECTED, SKIPPED]
    assert first.results[0].error == "refused by the user (confirm mode)"
    assert first.HasField("frame")  # the daemon decides again from a fresh frame
    assert [r.status for r in second.results] == [OK, REJECTED]
    assert "ctrl+alt+delete is denied" in second.results[1].error
    assert backend.input.events == [fake.Text("hello")]


async def test_the_fail_safe_corner_cancels_the_session(
    daemon: Daemon, backend: fake.FakeBackend
) -> None:
    cancels: list[str] = []

    async def script(conv: Conversation) -> None:
        frame = await conv.open()
        await conv.send_actions(1, click("c", frame.frame_id, 10, 10))
        message = await conv.recv()
        cancels.append(message.cancel.reason)
        await conv.end(agent_pb2.SESSION_OUTCOME_CANCELLED, reason=message.cancel.reason)

    backend.input.move(1279, 799)  # the user pushes the pointer into a corner
    backend.input.clear()
    server = daemon(script)
    outcome = await run_session(
        server.target, "t", backend, SessionOptions(safety=SafetySettings(emergency_stop=None))
    )
    assert outcome.outcome is Outcome.CANCELLED
    assert outcome.reason.startswith("fail-safe: the pointer is in the bottom-right corner")
    assert cancels == [outcome.reason]
    assert backend.input.events == []
    (step,) = outcome.history
    assert step.results[0].status is a.ActionStatus.REJECTED


def test_fail_safe_exits_3_and_can_be_turned_off(
    daemon: Daemon, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The CLI's fake backend starts with the pointer in the middle; a pointer the
    daemon's first click leaves in a corner is the client's own and does not stop it,
    so the corner is made the user's doing by a backend whose pointer starts there."""
    original = fake.create

    def cornered(*args: object, **kwargs: object) -> fake.FakeBackend:
        backend = original(*args, **kwargs)  # type: ignore[arg-type]
        backend.input.move(0, 0)
        return backend

    monkeypatch.setattr(fake, "create", cornered)

    async def script(conv: Conversation) -> None:
        await conv.open()
        await conv.send_actions(1, type_text("t", "x"))
        message = await conv.recv()
        if message.WhichOneof("event") == "cancel":
            await conv.end(agent_pb2.SESSION_OUTCOME_CANCELLED, reason=message.cancel.reason)
            return
        await conv.send_actions(2, done("d", "ok"))
        await conv.recv_observation()
        await conv.end(agent_pb2.SESSION_OUTCOME_SUCCEEDED, answer="ok")

    target = daemon(script).target
    base = ["run", "--server", target, "--backend", "fake", "--no-estop"]
    assert main([*base, "t"]) == ExitCode.CANCELLED
    assert "fail-safe: the pointer is in the top-left corner" in capsys.readouterr().err
    assert main([*base, "--no-fail-safe", "t"]) == ExitCode.SUCCEEDED


def test_cli_allowlist_and_denylist_flags(
    daemon: Daemon, capsys: pytest.CaptureFixture[str]
) -> None:
    results: list[list[int]] = []

    async def script(conv: Conversation) -> None:
        await conv.open()
        await conv.send_actions(1, _chord("k", "alt", "F4"))
        results.append([r.status for r in (await conv.recv_observation()).results])
        await conv.send_actions(2, type_text("t", "x"))
        results.append([r.status for r in (await conv.recv_observation()).results])
        await conv.send_actions(3, done("d", "ok"))
        await conv.recv_observation()
        await conv.end(agent_pb2.SESSION_OUTCOME_SUCCEEDED, answer="ok")

    target = daemon(script).target
    flags = ["--no-estop", "--deny-chord", "alt+f4", "--allow", "key_chord,click"]
    code = main(["run", "--server", target, "--backend", "fake", *flags, "t"])
    assert code == ExitCode.SUCCEEDED, capsys.readouterr().err
    assert results == [[REJECTED], [REJECTED]]


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (["--redact", "1,2,3"], "expected X,Y,WIDTH,HEIGHT"),
        (["--redact", "0,0,0,10"], "needs a positive size"),
        (["--allow", "click,teleport"], "unknown action kind(s) teleport"),
        (["--deny-chord", "ctrl+nokey"], "unknown key 'nokey'"),
        (["--estop-hotkey", "escape"], "one or more modifiers and exactly one other key"),
        (["--max-rate", "-1"], "must be 0 or more"),
        (["--reconnect-attempts", "x"], "expected a whole number"),
    ],
)
def test_bad_safety_flags_are_usage_errors(
    flags: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["run", "--server", "127.0.0.1:1", "--backend", "fake", *flags, "t"]) == 2
    assert message in capsys.readouterr().err


# -- held input is released on every ending -------------------------------------------------


async def _hold_then(conv: Conversation, ending: str) -> None:
    await conv.open()
    await conv.send_actions(1, key_down("k", "shift"))
    await conv.recv_observation()
    if ending == "done":
        await conv.send_actions(2, done("d", "ok"))
        await conv.recv_observation()
        await conv.end(agent_pb2.SESSION_OUTCOME_SUCCEEDED, answer="ok")
    elif ending == "step_limit":
        await conv.end(agent_pb2.SESSION_OUTCOME_STEP_LIMIT, reason="limit")
    elif ending == "protocol_error":
        await conv.send(
            agent_pb2.RunSessionResponse(started=agent_pb2.SessionStarted(session_id="again"))
        )
        await conv.recv()
    elif ending == "closed":
        return


@pytest.mark.parametrize(
    ("ending", "outcome"),
    [
        ("done", Outcome.SUCCEEDED),
        ("step_limit", Outcome.STEP_LIMIT),
        ("protocol_error", Outcome.ERROR),
        ("closed", Outcome.ERROR),
    ],
)
async def test_held_keys_are_released_however_the_session_ends(
    daemon: Daemon, backend: fake.FakeBackend, ending: str, outcome: Outcome
) -> None:
    async def script(conv: Conversation) -> None:
        await _hold_then(conv, ending)

    server = daemon(script)
    result = await run_session(
        server.target, "t", backend, SessionOptions(safety=SafetySettings(emergency_stop=None))
    )
    assert result.outcome is outcome, result.reason
    assert backend.input.held() == ((), ())
    assert backend.input.events == [fake.Key("shift", True), fake.Key("shift", False)]
