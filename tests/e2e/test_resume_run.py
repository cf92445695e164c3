"""A real run survives a connection reset mid-session without repeating any action.

The real daemon (`serve`, a scripted ModelPolicy in the Holo dialect) and the real
client (`run_session`, X11 backend on Xvfb, driving the Tk probe app) talk through
the loopback fault proxy, which resets every connection at one of two points:

- results_lost: the client has executed step 1 (a click on OK), and its results are
  swallowed before they reach the daemon; the resumed daemon still waits for them,
  names the click as pending, and the client answers from its own record;
- while_thinking: the daemon is deciding step 2 (the step-1 results arrived); the
  policy's work is aborted and step 2 is decided afresh after the resume.

While the proxy refuses new connections, ListSessions (straight to the daemon)
shows the session DETACHED, with its principal. Then the client resumes, the
session ends SUCCEEDED, and the probe app saw the OK button's command exactly once
and the Unicode text typed exactly once: nothing ran twice, nothing was lost.

Every wait is on an event or a condition (no sleeps as synchronisation), with
generous deadlines so that it holds under CPU load.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import grpc
import grpc.aio
import pytest

from holodesk.client.events import Notice, Outcome, Resumed
from holodesk.client.outcome import StepRecord
from holodesk.client.reconnect import ReconnectPolicy
from holodesk.client.session import SessionOptions, run_session
from holodesk.daemon.config import ServerConfig
from holodesk.daemon.dialects import get_dialect
from holodesk.daemon.engines.base import GenerationRequest, GenerationResult
from holodesk.daemon.engines.scripted import ScriptedEngine
from holodesk.daemon.policies.model import ModelPolicy
from holodesk.daemon.rpc.server import serve
from holodesk.platform.select import open_backend
from holodesk.proto.v1 import control_pb2, control_pb2_grpc
from tests.support.fault_proxy import FaultProxy
from tests.support.probe import ProbeApp

pytestmark = [pytest.mark.x11, pytest.mark.e2e]

SCREEN = (1280, 800)
UNICODE_TEXT = "héllo wörld ñ € 日本"
# Generous: a loaded CI machine may be slow, but a hang must still fail the test.
GUARD_S = 60.0
# Reconnect quickly and keep trying for as long as the test may take.
RECONNECT = ReconnectPolicy(
    max_attempts=10_000, max_elapsed_s=GUARD_S, initial_backoff_s=0.05, max_backoff_s=0.5
)


class GatedEngine(ScriptedEngine):
    """The scripted engine, except that its `gate_call`-th generation (1-based) thinks
    until it is aborted: the daemon is mid-decision for as long as the test needs."""

    def __init__(self, outputs: list[str], gate_call: int | None) -> None:
        super().__init__(outputs)
        self.gate_call = gate_call
        self.calls = 0
        self.thinking = asyncio.Event()

    async def generate(self, request: GenerationRequest) -> GenerationResult:
        self.calls += 1
        if self.calls == self.gate_call:
            self.thinking.set()
            await asyncio.Event().wait()  # until the detach cancels it
        return await super().generate(request)


@pytest.fixture
def probe(xvfb: str, tmp_path: Path) -> Iterator[ProbeApp]:
    app = ProbeApp.start(xvfb, tmp_path / "probe.jsonl")
    yield app
    app.stop()


def _step(*actions: dict[str, Any]) -> str:
    return json.dumps({"note": "", "thought": "", "actions": list(actions)})


def _model_xy(x: float, y: float) -> dict[str, float]:
    """Holo2 coordinates: normalized 0-1000 of the image."""
    return {"x": round(x / SCREEN[0] * 1000, 3), "y": round(y / SCREEN[1] * 1000, 3)}


def _script(probe: ProbeApp) -> list[str]:
    return [
        _step(
            {"action": "click_element", "element": "OK", **_model_xy(*probe.widgets["ok"].center)}
        ),
        _step(
            {
                "action": "write_element_abs",
                "content": UNICODE_TEXT,
                **_model_xy(*probe.widgets["entry"].center),
            }
        ),
        _step({"action": "answer", "content": "done"}),
    ]


async def _wait_detached(
    control: control_pb2_grpc.ControlServiceStub,
) -> control_pb2.SessionInfo:
    """Poll ListSessions until the session shows DETACHED (the proxy refuses meanwhile,
    so the client cannot re-attach before this is seen)."""
    async with asyncio.timeout(GUARD_S):
        while True:
            listed: control_pb2.ListSessionsResponse = await control.ListSessions(
                control_pb2.ListSessionsRequest()
            )
            detached = [s for s in listed.sessions if s.state == control_pb2.SESSION_STATE_DETACHED]
            if detached:
                return detached[0]
            await asyncio.sleep(0.02)  # a poll interval, not a synchronisation


@pytest.mark.parametrize("fault", ["results_lost", "while_thinking"])
async def test_a_reset_mid_session_resumes_and_runs_every_action_exactly_once(
    xvfb: str, probe: ProbeApp, fault: str
) -> None:
    engine = GatedEngine(_script(probe), gate_call=2 if fault == "while_thinking" else None)
    policy = ModelPolicy(get_dialect("holo"), engine, name="scripted")
    step1_done = asyncio.Event()
    notices: list[Notice] = []

    def on_step(record: StepRecord) -> None:
        if record.step == 1 and fault == "results_lost" and not step1_done.is_set():
            # Runs before the client sends step 1's results: they go nowhere, and no
            # new connection may open until the test has seen the session detached.
            proxy.blackhole = True
            proxy.refuse = True
            step1_done.set()

    options = SessionOptions(on_step=on_step, on_notice=notices.append, reconnect=RECONNECT)
    backend = open_backend("x11", display=xvfb)
    try:
        async with (
            serve(ServerConfig(listen="127.0.0.1:0"), policies=[policy]) as running,
            FaultProxy("127.0.0.1", int(running.address.rsplit(":", 1)[1])) as proxy,
            grpc.aio.insecure_channel(running.address) as direct,
        ):
            control = control_pb2_grpc.ControlServiceStub(direct)
            session = asyncio.create_task(
                run_session(proxy.address, "press OK, type", backend, options)
            )
            try:
                async with asyncio.timeout(GUARD_S):
                    if fault == "while_thinking":
                        await engine.thinking.wait()
                        proxy.refuse = True
                    else:
                        await step1_done.wait()
                    assert await proxy.reset_all() >= 1
                info = await _wait_detached(control)
                assert info.principal == "anonymous"  # open mode on loopback
                assert info.step == 1
                proxy.blackhole = False
                proxy.refuse = False
                outcome = await asyncio.wait_for(session, GUARD_S)
            finally:
                session.cancel()
    finally:
        backend.close()

    assert outcome.outcome is Outcome.SUCCEEDED, outcome.reason
    assert (outcome.answer, outcome.steps) == ("done", 3)
    resumed = [n for n in notices if isinstance(n, Resumed)]
    assert len(resumed) == 1
    # results_lost: the daemon never got the click's result, so it asked for it once
    # and the client answered from its record instead of clicking again.
    assert resumed[0].reported == (1 if fault == "results_lost" else 0)

    # X events reach Tk in order: once the entry holds the text (step 2), the click
    # of step 1 was processed long before, so the counts below are final.
    assert await asyncio.to_thread(probe.wait_for_entry, UNICODE_TEXT, GUARD_S) == UNICODE_TEXT
    commands = [e for e in probe.events("command") if e["widget"] == "ok"]
    assert len(commands) == 1, commands
