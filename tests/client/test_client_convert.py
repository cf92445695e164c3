"""protobuf <-> client dataclasses."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from holodesk.client import actions as a
from holodesk.client import convert
from holodesk.client.events import Outcome
from holodesk.client.frames import FrameSpec, SentFrame
from holodesk.platform.backends import fake
from holodesk.platform.base import DisplayInfo, MouseButton, Region
from holodesk.proto.v1 import action_pb2, agent_pb2, frame_pb2
from holodesk.values.encoding import ImageEncoding
from tests.support import client_wire

P = a.FramePoint
ACTIONS: list[a.Action] = [
    a.Click(action_id="1", frame_id="f", point=P(1.5, 2.25), button=MouseButton.RIGHT, count=3,
            modifiers=("ctrl", "shift")),
    a.Move(action_id="2", frame_id="f", point=P(0, 0)),
    a.MouseDown(action_id="3", frame_id="f", button=MouseButton.MIDDLE, point=P(4, 5)),
    a.MouseDown(action_id="3b", button=MouseButton.LEFT),
    a.Click(action_id="3c", frame_id="f", point=P(7, 8), button=MouseButton.BACK),
    a.MouseUp(action_id="3d", button=MouseButton.FORWARD),
    a.MouseUp(action_id="4", frame_id="f", point=P(4, 6)),
    a.Drag(action_id="5", frame_id="f", path=(P(1, 1), P(2, 2), P(3, 5)), modifiers=("alt",),
           duration_ms=250),
    a.Scroll(action_id="6", frame_id="f", point=P(9, 9), dx=-2, dy=5),
    a.TypeText(action_id="7", text="Grüße, 世界 🙂"),
    a.KeyChord(action_id="8", keys=("meta", "shift", "t")),
    a.KeyDown(action_id="9", key="shift"),
    a.KeyUp(action_id="10", key="shift"),
    a.Wait(action_id="11", duration_ms=1500),
    a.Done(action_id="12", answer="the answer"),
    a.Fail(action_id="13", reason="cannot"),
    a.AskUser(action_id="14", question="which one?"),
    a.Navigate(action_id="15", url="https://example.org/a?q=grüße#x"),
]  # fmt: skip


@pytest.mark.parametrize("action", ACTIONS, ids=lambda x: type(x).__name__)
def test_actions_round_trip(action: a.Action) -> None:
    wire = action_pb2.Action.FromString(client_wire.action_to_pb(action).SerializeToString())
    assert convert.action_from_pb(wire) == action


def test_proto_defaults_become_explicit_values() -> None:
    pb = action_pb2.Action(action_id="c", frame_id="f", click=action_pb2.ClickAction())
    assert convert.action_from_pb(pb) == a.Click(
        action_id="c", frame_id="f", point=P(0, 0), button=MouseButton.LEFT, count=1
    )


@pytest.mark.parametrize(
    ("pb", "reason"),
    [
        (action_pb2.Action(action_id="x"), "no kind this client knows"),
        (
            action_pb2.Action(action_id="x", click=action_pb2.ClickAction(button=9)),  # type: ignore[arg-type]
            "unknown mouse button 9",
        ),
        (
            action_pb2.Action(action_id="x", drag=action_pb2.DragAction(modifiers=[7])),  # type: ignore[list-item]
            "unknown modifier",
        ),
    ],
)
def test_unreadable_actions_become_unsupported(pb: action_pb2.Action, reason: str) -> None:
    action = convert.action_from_pb(pb)
    assert isinstance(action, a.Unsupported)
    assert action.action_id == "x"
    assert reason in action.reason


def test_frame_round_trip() -> None:
    frame = SentFrame(
        frame_id="abc",
        width=1280,
        height=800,
        encoding=ImageEncoding.WEBP,
        data=b"\x00\x01 bytes",
        display_id="retina",
        source=Region(-2560, -200, 2560, 1600),
        scale_factor=2.0,
        captured_at=datetime(2026, 3, 1, 12, 30, 15, 123456, tzinfo=UTC),
    )
    pb = convert.frame_to_pb(frame)
    assert pb.source.x == -2560
    assert pb.size.width == 1280
    assert pb.encoding == frame_pb2.IMAGE_ENCODING_WEBP
    assert client_wire.frame_from_pb(frame_pb2.Frame.FromString(pb.SerializeToString())) == frame


@pytest.mark.parametrize("status", list(a.ActionStatus))
def test_result_round_trip(status: a.ActionStatus) -> None:
    result = a.ActionResult("id", status, "why", 17)
    assert client_wire.result_from_pb(convert.result_to_pb(result)) == result


def test_display_round_trip() -> None:
    display = DisplayInfo("DP-1", Region(-1920, 0, 1920, 1080), 1.25, primary=False, name="left")
    assert client_wire.display_from_pb(convert.display_to_pb(display)) == display


def test_frame_spec_defaults_and_round_trip() -> None:
    assert convert.frame_spec_from_pb(frame_pb2.FrameSpec()) == FrameSpec()
    spec = FrameSpec(1280, 720, ImageEncoding.JPEG, 70, 1_000_000)
    assert convert.frame_spec_from_pb(client_wire.frame_spec_to_pb(spec)) == spec
    with pytest.raises(convert.ConversionError, match="quality"):
        convert.frame_spec_from_pb(frame_pb2.FrameSpec(quality=101))


def test_session_start_carries_client_and_displays() -> None:
    backend = fake.create(os="linux")
    request = convert.session_start(
        "do it",
        backend,
        backend.screen.displays(),
        encodings=(ImageEncoding.PNG, ImageEncoding.JPEG),
        max_steps=7,
        policy="p",
    )
    start = request.start
    assert start.task == "do it"
    assert start.client.os == "linux"
    assert start.client.backend == "fake"
    assert start.client.hostname
    assert start.client.client_version
    assert [d.display_id for d in start.displays] == ["fake-0"]
    assert list(start.encodings) == [frame_pb2.IMAGE_ENCODING_PNG, frame_pb2.IMAGE_ENCODING_JPEG]
    assert (start.max_steps, start.policy) == (7, "p")


def test_observation_without_frame_for_terminal_actions() -> None:
    request = convert.observation([a.ActionResult("d", a.ActionStatus.OK)], None)
    assert not request.observation.HasField("frame")
    assert request.observation.results[0].status == action_pb2.ACTION_STATUS_OK


def test_ended_outcomes() -> None:
    ended = agent_pb2.SessionEnded(
        outcome=agent_pb2.SESSION_OUTCOME_STEP_LIMIT, reason="limit", steps=3
    )
    assert convert.ended_from_pb(ended).outcome is Outcome.STEP_LIMIT
    timed_out = agent_pb2.SessionEnded(outcome=agent_pb2.SESSION_OUTCOME_TIME_LIMIT)
    assert convert.ended_from_pb(timed_out).outcome is Outcome.TIME_LIMIT
    with pytest.raises(convert.ConversionError, match="unknown outcome"):
        convert.ended_from_pb(agent_pb2.SessionEnded())
