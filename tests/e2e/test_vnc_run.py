"""One whole agent run on a remote desktop: daemon + client + the VNC backend + Xvnc.

The desktop is TigerVNC's Xvnc with a real Tk app on it; the client reaches it
only through RFB (nothing of holodesk runs "inside" it). The policy is
scripted model text in the holo dialect, so coordinates go through the
daemon's parser and mapping and the client's frame -> screen mapping.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from holodesk.client.events import Outcome
from holodesk.client.session import SessionOptions, run_session
from holodesk.daemon.config import ServerConfig
from holodesk.daemon.dialects import get_dialect
from holodesk.daemon.engines.scripted import ScriptedEngine
from holodesk.daemon.policies.model import ModelPolicy
from holodesk.daemon.rpc.server import serve
from holodesk.platform.select import open_backend
from tests.platform.vnc.servers import VncServer, xvnc
from tests.support.probe import ProbeApp

pytestmark = [pytest.mark.vnc, pytest.mark.e2e]

SCREEN = (1280, 800)
UNICODE_TEXT = "héllo wörld ñ € 日本"


@pytest.fixture
def desktop(tmp_path: Path) -> Iterator[tuple[VncServer, ProbeApp]]:
    with xvnc(*SCREEN, password="agent") as server:
        probe = ProbeApp.start(server.display, tmp_path / "probe.jsonl")
        try:
            yield server, probe
        finally:
            probe.stop()


def step(*actions: dict[str, Any]) -> str:
    return json.dumps({"note": "", "thought": "", "actions": list(actions)})


def at(x: float, y: float) -> dict[str, float]:
    """Holo2 coordinates: 0-1000 of the image, whatever its size."""
    return {"x": round(x / SCREEN[0] * 1000, 3), "y": round(y / SCREEN[1] * 1000, 3)}


async def test_an_agent_drives_a_remote_desktop_over_vnc(
    desktop: tuple[VncServer, ProbeApp],
) -> None:
    server, probe = desktop
    outputs = [
        step({"action": "click_element", "element": "OK", **at(*probe.widgets["ok"].center)}),
        step(
            {
                "action": "write_element_abs",
                "content": UNICODE_TEXT,
                **at(*probe.widgets["entry"].center),
            }
        ),
        step({"action": "answer", "content": "typed it"}),
    ]
    policy = ModelPolicy(get_dialect("holo"), ScriptedEngine(outputs), name="scripted")
    backend = open_backend("vnc", **server.options())
    try:
        async with serve(ServerConfig(listen="127.0.0.1:0"), policies=[policy]) as running:
            outcome = await run_session(running.address, "fill the form", backend, SessionOptions())
    finally:
        backend.close()

    assert outcome.outcome is Outcome.SUCCEEDED, outcome.reason
    assert outcome.answer == "typed it"
    assert outcome.steps == 3
    probe.wait_for_event("command", widget="ok")
    assert probe.wait_for_entry(UNICODE_TEXT) == UNICODE_TEXT
