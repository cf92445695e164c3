"""The OCR baseline checks what its typing did, on a real Tk form through the real stack.

Daemon (gRPC on 127.0.0.1:0, the OCR policy), the client's run_session on the X11
backend, and a Tk form on Xvfb whose "Message" label is centred above its field
(tests/daemon/ocr/message_app.py). Clicking that label focuses nothing, so text
typed after it reaches no widget: the baseline used to report success anyway.
Every assertion about the app reads what the app itself received.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from holodesk.client.events import Outcome
from holodesk.client.outcome import SessionOutcome
from holodesk.client.session import SessionOptions, run_session
from holodesk.daemon.config import ServerConfig
from holodesk.daemon.policies.ocr.planner import PlannerConfig
from holodesk.daemon.policies.ocr.policy import OcrPolicy, OcrPolicyConfig
from holodesk.daemon.rpc.server import serve
from holodesk.platform.select import open_backend

pytestmark = [pytest.mark.x11, pytest.mark.e2e]

APP = Path(__file__).resolve().parent / "message_app.py"


@pytest.fixture
def message_app(xvfb: str, tmp_path: Path) -> Iterator[Path]:
    """The form, drawn before this yields; yields its state file."""
    state = tmp_path / "state.json"
    env = {**os.environ, "DISPLAY": xvfb}
    process = subprocess.Popen(
        [sys.executable, str(APP), str(state)], env=env, stdout=subprocess.PIPE, text=True
    )
    try:
        assert process.stdout is not None
        assert process.stdout.readline().strip() == "ready", f"exit {process.poll()}"
        yield state
    finally:
        process.terminate()
        process.wait(timeout=10)


def run(display: str, task: str) -> SessionOutcome:
    async def session() -> SessionOutcome:
        policy = OcrPolicy(OcrPolicyConfig(planner=PlannerConfig(retry_wait_s=0.3)))
        backend = open_backend("x11", display=display)
        try:
            async with serve(ServerConfig(listen="127.0.0.1:0"), policies=[policy]) as running:
                # Tesseract's start-up check runs in the background; sessions wait for it.
                await asyncio.shield(running.policies_started)
                return await run_session(running.address, task, backend, SessionOptions())
        finally:
            backend.close()

    return asyncio.run(session())


def received(state: Path) -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads(state.read_text(encoding="utf-8"))
    return loaded


def test_typing_under_a_centred_label_lands_in_the_field_or_does_not_succeed(
    xvfb: str, message_app: Path
) -> None:
    outcome = run(xvfb, 'type "hello eco" into "Message"; click "Send"; answer "sent"')
    state = received(message_app)
    # Whatever the outcome, it must agree with what the app received.
    if outcome.outcome is Outcome.SUCCEEDED:
        assert state["message"] == "hello eco", (outcome.reason, state)
        assert state["sent"] == "hello eco"
    # And the baseline is expected to find the field: the label is not a field.
    assert outcome.outcome is Outcome.SUCCEEDED, (outcome.reason, state)
    assert state["to"] == ""
    # It got there by checking: the first place showed nothing, the field below did.
    thoughts = " | ".join(step.thought for step in outcome.history)
    assert 'does not show "hello eco" near "Message"' in thoughts
    assert "try 2" in thoughts


def test_typing_into_a_field_beside_its_label_still_succeeds(xvfb: str, message_app: Path) -> None:
    outcome = run(xvfb, 'type "zoe@example.org" into "To"; answer "addressed"')
    assert outcome.outcome is Outcome.SUCCEEDED, outcome.reason
    assert received(message_app)["to"] == "zoe@example.org"


def test_typing_that_reaches_no_field_fails_and_says_so(xvfb: str, message_app: Path) -> None:
    # A button is no field, and nothing beside it is one: the text goes nowhere.
    outcome = run(xvfb, 'type "hello eco" into "Send"; answer "typed"')
    assert outcome.outcome is Outcome.FAILED, outcome.reason
    assert 'does not show "hello eco" near "Send"' in outcome.reason
    assert received(message_app)["message"] == ""
