"""What the daemon sends back as it came in (ComputerService hands a desktop's client,
displays, frames and results to its caller): convert/'s `*_to_pb` undo its `*_from_pb`,
every field of the message set, so a field added to the contract and missed on one
side fails here."""

from __future__ import annotations

import pytest
from google.protobuf.message import Message

from holodesk.daemon import convert
from holodesk.proto.v1 import action_pb2, agent_pb2, frame_pb2, geometry_pb2


def every_field_set(message: Message) -> None:
    set_fields = {field.name for field, _ in message.ListFields()}
    declared = {field.name for field in message.DESCRIPTOR.fields}
    assert set_fields == declared, f"the test leaves {sorted(declared - set_fields)} unset"


def test_client_info_goes_back_out_as_it_came() -> None:
    sent = agent_pb2.ClientInfo(
        os="linux", os_version="6.1", hostname="desk-7", client_version="1.2.3", backend="x11"
    )
    every_field_set(sent)
    assert convert.client_info_to_pb(convert.client_info_from_pb(sent)) == sent


def test_a_display_goes_back_out_as_it_came() -> None:
    sent = geometry_pb2.Display(
        display_id="HDMI-1",
        bounds=geometry_pb2.Rect(x=-1920, y=0, width=1920, height=1080),
        scale_factor=1.5,
        primary=True,
        name="left",
    )
    every_field_set(sent)
    assert convert.display_to_pb(convert.display_from_pb(sent, "display")) == sent


def test_a_full_frame_goes_back_out_as_it_came() -> None:
    sent = frame_pb2.Frame(
        frame_id="f1",
        size=geometry_pb2.Size(width=4, height=3),
        encoding=frame_pb2.IMAGE_ENCODING_JPEG,
        data=b"jpeg bytes",
        display_id="HDMI-1",
        source=geometry_pb2.Rect(x=10, y=20, width=8, height=6),
        scale_factor=2.0,
    )
    # A delta's fields are refused here; captured_at the daemon does not keep (its
    # EncodedFrame has no such field), so a caller's GetFrame never carries it.
    not_kept = {"base_frame_id", "patches", "captured_at"}
    declared = {f.name for f in sent.DESCRIPTOR.fields} - not_kept
    assert {f.name for f, _ in sent.ListFields()} == declared
    assert convert.frame_to_pb(convert.frame_from_pb(sent, "frame")) == sent


@pytest.mark.parametrize(
    "status",
    [
        action_pb2.ACTION_STATUS_OK,
        action_pb2.ACTION_STATUS_FAILED,
        action_pb2.ACTION_STATUS_REJECTED,
        action_pb2.ACTION_STATUS_SKIPPED,
        action_pb2.ACTION_STATUS_NOT_DELIVERED,
    ],
)
def test_a_result_goes_back_out_as_it_came(status: action_pb2.ActionStatus.ValueType) -> None:
    sent = action_pb2.ActionResult(action_id="a1", status=status, error="why", duration_ms=12)
    every_field_set(sent)
    assert convert.result_to_pb(convert.result_from_pb(sent, "result")) == sent
