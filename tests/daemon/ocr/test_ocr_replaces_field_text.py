"""`type X into F` leaves F holding X, and succeeds only when it does (issue 30, item 2).

On the demo's form with "Ada Lovelace" already in its Name field, the baseline
used to click the field's middle and type there; it read "la LovelacGrace Hopper"
back, found "Grace Hopper" somewhere in it and ended `succeeded`, while the app
received "Ada LovelacGrace Hoppere". Now it selects the field's text before
typing (replace.py) and passes its check only when the field shows the text as a
whole (typing_check.py).

Real parts: the daemon (gRPC on 127.0.0.1:0, the OCR policy with Tesseract), the
client's run_session on the X11 backend of an Xvfb, and real Tk apps: the demo's
form app, and a form whose field refuses the keys that select its text. What the
apps received (their state files) is asserted, not only what OCR read.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from holodesk.client.events import Outcome
from holodesk.client.outcome import SessionOutcome
from holodesk.client.session import SessionOptions, run_session
from holodesk.daemon.config import ServerConfig
from holodesk.daemon.policies.ocr.fields import find_field
from holodesk.daemon.policies.ocr.matching import find_text
from holodesk.daemon.policies.ocr.planner import PlannerConfig
from holodesk.daemon.policies.ocr.policy import OcrPolicy, OcrPolicyConfig
from holodesk.daemon.policies.ocr.reader import read_text
from holodesk.daemon.rpc.server import serve
from holodesk.platform.select import open_backend

pytestmark = [pytest.mark.x11, pytest.mark.e2e]

NEW = "Grace Hopper"
TASK = f'type "{NEW}" into "Name"; click "Submit"; answer "signed up"'

# A form like the demo's whose field ignores every key that selects its text, as a
# field of an unknown toolkit might: typing then adds to the old text.
STUBBORN_APP = """
import json, sys, tkinter as tk
state = sys.argv[1]
root = tk.Tk(); root.geometry("900x400+60+60"); root.configure(background="white")
name = tk.StringVar(root, value=sys.argv[2])
def save(*_):
    open(state + ".tmp", "w").write(json.dumps({"name": name.get()}))
    __import__("os").replace(state + ".tmp", state)
name.trace_add("write", save)
tk.Label(root, text="Name", font=("DejaVu Sans", 20), bg="white").place(x=40, y=60)
entry = tk.Entry(root, textvariable=name, font=("DejaVu Sans", 20), width=24, insertofftime=0)
entry.place(x=180, y=54)
entry.bind("<Button-1>", lambda _e: entry.focus_force())
for keys in ("<Control-a>", "<Control-Home>", "<Control-Shift-End>", "<Control-slash>"):
    entry.bind(keys, lambda _e: "break")
tk.Button(root, text="Submit", font=("DejaVu Sans", 20)).place(x=180, y=140)
save(); root.wait_visibility(root); root.update(); print("ready", flush=True); root.mainloop()
"""


def received(state: Path) -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads(state.read_text(encoding="utf-8"))
    return loaded


def prefill(display: str, label: str, text: str) -> None:
    """Type `text` into the field beside `label`, as a user filled it in before."""
    backend = open_backend("x11", display=display)
    try:
        screen = backend.screen.grab(backend.screen.displays()[0].bounds).convert("RGB")
        found = find_text(label, read_text(screen))
        assert found is not None, f"no {label!r} on the screen"
        field = find_field(screen, found.box)
        assert field is not None, f"no field beside {label!r}"
        backend.input.click((field[0] + field[2]) // 2, (field[1] + field[3]) // 2)
        backend.input.type_text(text)
    finally:
        backend.close()


def wait_for(state: Path, key: str, value: str, timeout_s: float = 5.0) -> None:
    deadline = time.monotonic() + timeout_s
    while received(state).get(key) != value:
        assert time.monotonic() < deadline, f"the app holds {received(state)}, not {value!r}"
        time.sleep(0.05)


@pytest.fixture
def form_app(xvfb: str, tmp_path: Path) -> Iterator[Path]:
    """The demo's form app, drawn; yields its state file."""
    state = tmp_path / "state.json"
    env = {**os.environ, "DISPLAY": xvfb}
    command = [sys.executable, "-m", "holodesk.client.demo.form_app", str(state)]
    process = subprocess.Popen(command, env=env)
    try:
        deadline = time.monotonic() + 20
        while not state.exists():  # it writes its state once the form is built
            assert process.poll() is None, "the form app exited"
            assert time.monotonic() < deadline, "the form app did not start"
            time.sleep(0.05)
        time.sleep(0.5)  # and drawn
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
                await asyncio.shield(running.policies_started)
                return await run_session(running.address, task, backend, SessionOptions())
        finally:
            backend.close()

    return asyncio.run(session())


@pytest.mark.parametrize(
    "before",
    ["Ada Lovelace", "Rear Admiral Grace Brewster Murray Hopper", NEW],
    ids=["another-name", "a-longer-text", "the-same-text"],
)
def test_typing_into_a_filled_field_replaces_its_text(
    xvfb: str, form_app: Path, before: str
) -> None:
    prefill(xvfb, "Name", before)
    wait_for(form_app, "name", before)

    outcome = run(xvfb, TASK)

    state = received(form_app)
    assert outcome.outcome is Outcome.SUCCEEDED, (outcome.reason, state)
    assert state == {"name": NEW, "submitted": NEW}
    # The step was judged on the whole field, not on a stretch of it.
    thoughts = " | ".join(step.thought for step in outcome.history)
    assert "the field shows" in thoughts, thoughts


def test_a_field_whose_text_cannot_be_replaced_fails_and_says_what_it_shows(
    xvfb: str, tmp_path: Path
) -> None:
    state = tmp_path / "state.json"
    env = {**os.environ, "DISPLAY": xvfb}
    command = [sys.executable, "-c", STUBBORN_APP, str(state), "Ada Lovelace"]
    process = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, text=True)
    try:
        assert process.stdout is not None
        assert process.stdout.readline().strip() == "ready", f"exit {process.poll()}"
        outcome = run(xvfb, TASK)
        held = received(state)["name"]
    finally:
        process.terminate()
        process.wait(timeout=10)
    # The text arrived, beside the old one: that is no success.
    assert NEW in held, held
    assert held != NEW
    assert outcome.outcome is Outcome.FAILED, (outcome.reason, held)
    assert "not replaced" in outcome.reason, outcome.reason
