"""The OCR policy fills in the demo's real Tk form on a real X server.

Screens come from the X11 backend's capture and actions go through its XTest
input, so this checks OCR on what Tk actually draws (fonts, relief borders) and
that the policy's pixel coordinates hit the real widgets.
"""

from __future__ import annotations

import asyncio
import io
import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from holodesk.daemon.actions import (
    Action,
    ActionKind,
    ActionResult,
    ActionStatus,
    Click,
    Done,
    Fail,
    HistoryStep,
    KeyChord,
    TypeText,
    Wait,
)
from holodesk.daemon.frames import EncodedFrame, ImageEncoding
from holodesk.daemon.geometry import Size
from holodesk.daemon.policies.ocr.planner import PlannerConfig
from holodesk.daemon.policies.ocr.policy import OcrPolicy, OcrPolicyConfig
from holodesk.daemon.steps import StepContext
from holodesk.platform.base import Backend, MouseButton
from holodesk.platform.x11 import backend as x11

pytestmark = pytest.mark.x11

NAME = "héllo wörld ñ € 日本"
TASK = f'type "{NAME}" into "Name"; click "Submit"; answer "signed up"'


@pytest.fixture
def form_app(xvfb: str, tmp_path: Path) -> Iterator[Path]:
    """The demo's form app on the test display; yields its state file."""
    state = tmp_path / "state.json"
    process = subprocess.Popen(
        [sys.executable, "-m", "holodesk.client.demo.form_app", str(state)],
        stderr=subprocess.PIPE,
    )
    try:
        yield state
    finally:
        process.terminate()
        process.wait(timeout=10)


@pytest.fixture
def backend(xvfb: str) -> Iterator[Backend]:
    opened = x11.create(xvfb)
    try:
        yield opened
    finally:
        opened.close()


async def _execute(backend: Backend, kind: ActionKind) -> None:
    if isinstance(kind, Click):
        button = MouseButton(kind.button.value)
        backend.input.click(round(kind.point.x), round(kind.point.y), button, kind.count)
    elif isinstance(kind, TypeText):
        backend.input.type_text(kind.text)
    elif isinstance(kind, KeyChord):
        backend.input.key_chord(kind.keys)
    elif isinstance(kind, Wait):
        await asyncio.sleep(kind.duration_ms / 1000)
    else:
        raise AssertionError(f"unexpected action {kind!r}")


async def test_ocr_policy_fills_in_the_tk_form(form_app: Path, backend: Backend) -> None:
    # Generous retries: the first frames may be taken before Tk has painted.
    policy = OcrPolicy(OcrPolicyConfig(planner=PlannerConfig(max_retries=20, retry_wait_s=0.5)))
    await policy.start()
    screen = backend.screen.displays()[0].bounds
    history: list[HistoryStep] = []
    final: ActionKind | None = None
    for step in range(1, 40):
        buffer = io.BytesIO()
        backend.screen.grab(screen).save(buffer, format="PNG")
        frame = EncodedFrame(
            f"f{step}", Size(screen.width, screen.height), ImageEncoding.PNG, buffer.getvalue()
        )
        decision = await policy.decide(StepContext("tk", TASK, step, (frame,), tuple(history)))
        final = decision.actions[-1]
        if isinstance(final, Done | Fail):
            break
        actions = tuple(
            Action(f"{step}.{i}", frame.frame_id, kind) for i, kind in enumerate(decision.actions)
        )
        for action in actions:
            await _execute(backend, action.kind)
        results = tuple(ActionResult(a.action_id, ActionStatus.OK) for a in actions)
        history.append(HistoryStep(step, actions, decision.thought, decision.note, results))
    assert final == Done("signed up"), decision.thought
    state = json.loads(await asyncio.to_thread(form_app.read_text))
    assert state == {"name": NAME, "submitted": NAME}
