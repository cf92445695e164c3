"""Every mouse button crosses the contract by name: daemon value -> wire -> client -> platform."""

from __future__ import annotations

import pytest

from holodesk.client import convert as client_convert
from holodesk.client.actions import Click as ClientClick
from holodesk.daemon import actions as daemon
from holodesk.daemon import convert as daemon_convert
from holodesk.daemon.geometry import Point
from holodesk.platform.base import MouseButton
from holodesk.proto.v1 import action_pb2


@pytest.mark.parametrize("button", list(daemon.MouseButton), ids=lambda b: b.value)
def test_a_daemon_button_reaches_the_platform_as_itself(button: daemon.MouseButton) -> None:
    action = daemon.Action("a1", "f1", daemon.Click(Point(3, 4), button=button))
    wire = action_pb2.Action.FromString(daemon_convert.action_to_pb(action).SerializeToString())
    assert action_pb2.MouseButton.Name(wire.click.button) == f"MOUSE_BUTTON_{button.name}"
    received = client_convert.action_from_pb(wire)
    assert isinstance(received, ClientClick)
    assert received.button == MouseButton(button.value)


def test_both_sides_know_the_same_buttons() -> None:
    wire = set(action_pb2.MouseButton.keys()) - {"MOUSE_BUTTON_UNSPECIFIED"}
    assert {f"MOUSE_BUTTON_{b.name}" for b in daemon.MouseButton} == wire
    assert {b.value for b in daemon.MouseButton} == {b.value for b in MouseButton}
