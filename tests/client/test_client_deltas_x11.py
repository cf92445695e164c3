"""Delta frames in a real run: X11 on Xvfb, the real client, a real daemon, a Tk app.

Steps that leave the screen alone must go out as deltas without patches, a step
that types into the app as a delta with patches, and the policy must still see,
at every step, exactly the client's full downsized frame of the screen it grabbed.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from holodesk.client.capture import downsize, fit_size
from holodesk.client.events import Outcome
from holodesk.client.session import SessionOptions, run_session
from holodesk.daemon import frame_pixels
from holodesk.daemon.config import ServerConfig
from holodesk.daemon.dialects import get_dialect
from holodesk.daemon.engines.scripted import ScriptedEngine
from holodesk.daemon.frames import EncodedFrame, FrameSpec, ImageEncoding
from holodesk.daemon.geometry import Size
from holodesk.daemon.policies.base import Decision
from holodesk.daemon.policies.model import ModelPolicy
from holodesk.daemon.rpc.server import serve
from holodesk.daemon.steps import StepContext
from holodesk.platform.base import DisplayInfo, Grab, Region, ScreenSource
from holodesk.platform.select import open_backend
from tests.support.probe import ProbeApp

pytestmark = [pytest.mark.x11, pytest.mark.e2e]

SCREEN = (1280, 800)
# A box that makes the client shrink frames (regions are recomputed, not copied).
BOX = 1000


class RecordingScreen(ScreenSource):
    """The X11 screen source, keeping a copy of every grab: the ground truth."""

    def __init__(self, inner: ScreenSource) -> None:
        self.inner = inner
        self.grabs: list[Image.Image] = []

    def displays(self) -> list[DisplayInfo]:
        return self.inner.displays()

    def grab(self, region: Region) -> Image.Image:
        image = self.inner.grab(region)
        self.grabs.append(image.convert("RGB"))
        return image

    def grab_since(self, region: Region, previous: Grab | None = None) -> Grab:
        # The X11 source's incremental path (its images equal full grabs:
        # tests/platform/test_x11_grab_since.py).
        grab = self.inner.grab_since(region, previous)
        self.grabs.append(grab.image.convert("RGB"))
        return grab

    def virtual_desktop(self) -> Region:
        return self.inner.virtual_desktop()

    def close(self) -> None:
        self.inner.close()


class LosslessPolicy(ModelPolicy):
    """A scripted Holo policy that asks for PNG frames and keeps what it was given."""

    def __init__(self, outputs: list[str]) -> None:
        super().__init__(get_dialect("holo"), ScriptedEngine(outputs), name="scripted")
        self.contexts: list[StepContext] = []

    def frame_spec(
        self, accepted: tuple[ImageEncoding, ...], screen: Size | None = None
    ) -> FrameSpec:
        return FrameSpec(max_width=BOX, max_height=BOX, encoding=ImageEncoding.PNG)

    async def decide(self, context: StepContext) -> Decision:
        self.contexts.append(context)
        return await super().decide(context)


@pytest.fixture
def probe(xvfb: str, tmp_path: Path) -> Iterator[ProbeApp]:
    app = ProbeApp.start(xvfb, tmp_path / "probe.jsonl")
    yield app
    app.stop()


def _step(*actions: dict[str, object]) -> str:
    return json.dumps({"note": "", "thought": "", "actions": list(actions)})


def _decoded(frame: EncodedFrame) -> np.ndarray:
    """What a frame the daemon holds shows (a rebuilt one: its base and its patches)."""
    return np.asarray(frame_pixels.decode(frame).convert("RGB"))


async def test_unchanged_screens_go_as_deltas_and_the_policy_sees_exact_pixels(
    xvfb: str, probe: ProbeApp, caplog: pytest.LogCaptureFixture
) -> None:
    ok_x, ok_y = probe.widgets["label"].center  # a label: clicking it changes nothing
    entry_x, entry_y = probe.widgets["entry"].center

    def at(x: int, y: int) -> dict[str, float]:
        return {"x": x / SCREEN[0] * 1000, "y": y / SCREEN[1] * 1000}

    outputs = [
        _step({"action": "wait", "duration": 0.05}),
        _step({"action": "click", **at(ok_x, ok_y)}),
        _step({"action": "click", **at(entry_x, entry_y)}, {"action": "write", "content": "abc"}),
        _step({"action": "wait", "duration": 0.05}),
        _step({"action": "answer", "content": "done"}),
    ]
    policy = LosslessPolicy(outputs)
    backend = open_backend("x11", display=xvfb)
    screen = RecordingScreen(backend.screen)
    caplog.set_level(logging.DEBUG, logger="holodesk.daemon.session.frame_deltas")
    try:
        async with serve(ServerConfig(listen="127.0.0.1:0"), policies=[policy]) as running:
            outcome = await run_session(
                running.address,
                "exercise deltas",
                replace(backend, screen=screen),
                SessionOptions(),
            )
    finally:
        backend.close()

    assert outcome.outcome is Outcome.SUCCEEDED, outcome.reason
    assert probe.wait_for_entry("abc") == "abc"
    # One grab per frame sent, one frame per step decided.
    assert len(screen.grabs) == len(policy.contexts) == len(outputs)
    deltas = {
        match["frame"]: int(match["patches"])
        for record in caplog.records
        if (
            match := re.match(
                r"frame (?P<frame>\w+): delta on \w+, (?P<patches>\d+) patch", record.getMessage()
            )
        )
    }
    size = fit_size(*SCREEN, BOX, BOX)
    assert size == (1000, 625)
    unchanged = 0
    for index, (grab, context) in enumerate(zip(screen.grabs, policy.contexts, strict=True)):
        frame_id = context.frame.frame_id
        expected = np.asarray(downsize(grab, size))
        np.testing.assert_array_equal(_decoded(context.frame), expected)
        if index == 0:
            assert frame_id not in deltas  # a stream's first frame is full
            continue
        assert frame_id in deltas, f"frame {index} was sent in full"
        if np.array_equal(np.asarray(grab), np.asarray(screen.grabs[index - 1])):
            unchanged += 1
            assert deltas[frame_id] == 0, f"frame {index}: unchanged screen, but patches"
        else:
            assert deltas[frame_id] > 0
    # The first wait and the click on a label left the screen as it was.
    assert unchanged >= 2
    # Typing changed it: at least one step carried patches.
    assert any(count > 0 for count in deltas.values())
