"""What the daemon sends back as it came in (ComputerService hands a desktop's client,
displays, frames and results to its caller): convert/'s `*_to_pb` undo its `*_from_pb`,
every field of the message set, so a field added to the contract and missed on one
side fails here."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from google.protobuf import timestamp_pb2
from google.protobuf.message import Message

from holodesk.daemon import convert
from holodesk.daemon.errors import InvalidArgument
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
        # Nanoseconds too: the capture time comes back exactly as the client sent it.
        captured_at=timestamp_pb2.Timestamp(seconds=1_780_000_000, nanos=123_456_789),
    )
    # A delta's fields are refused here (a delta goes out painted into one image).
    not_kept = {"base_frame_id", "patches"}
    declared = {f.name for f in sent.DESCRIPTOR.fields} - not_kept
    assert {f.name for f, _ in sent.ListFields()} == declared
    assert convert.frame_to_pb(convert.frame_from_pb(sent, "frame")) == sent


@pytest.mark.parametrize(
    "stamp",
    [
        timestamp_pb2.Timestamp(seconds=-62_135_596_800),  # 0001-01-01, the first
        timestamp_pb2.Timestamp(seconds=-1, nanos=999_999_999),  # before the epoch
        timestamp_pb2.Timestamp(seconds=253_402_300_799, nanos=999_999_999),  # the last
    ],
)
def test_a_capture_time_at_the_edges_of_the_contract_comes_back_exactly(
    stamp: timestamp_pb2.Timestamp,
) -> None:
    sent = frame_pb2.Frame(
        frame_id="f1",
        size=geometry_pb2.Size(width=4, height=3),
        encoding=frame_pb2.IMAGE_ENCODING_PNG,
        data=b"png bytes",
        captured_at=stamp,
    )
    assert convert.frame_to_pb(convert.frame_from_pb(sent, "frame")).captured_at == stamp


def test_a_frame_without_a_capture_time_goes_out_without_one() -> None:
    sent = frame_pb2.Frame(
        frame_id="f1",
        size=geometry_pb2.Size(width=4, height=3),
        encoding=frame_pb2.IMAGE_ENCODING_PNG,
        data=b"png bytes",
    )
    kept = convert.frame_from_pb(sent, "frame")
    assert kept.captured_at_ns is None
    assert not convert.frame_to_pb(kept).HasField("captured_at")


@pytest.mark.parametrize(
    "stamp",
    [
        timestamp_pb2.Timestamp(seconds=253_402_300_800),  # year 10000
        timestamp_pb2.Timestamp(seconds=-62_135_596_801),  # year 0
        timestamp_pb2.Timestamp(seconds=1, nanos=-1),
        timestamp_pb2.Timestamp(seconds=1, nanos=1_000_000_000),
    ],
)
@pytest.mark.parametrize("delta", [False, True])
def test_a_capture_time_no_timestamp_can_hold_is_refused_naming_the_field(
    stamp: timestamp_pb2.Timestamp, delta: bool
) -> None:
    sent = frame_pb2.Frame(frame_id="f2", size=geometry_pb2.Size(width=4, height=3))
    sent.captured_at.CopyFrom(stamp)
    read: Callable[[frame_pb2.Frame, str], object] = convert.frame_from_pb
    if delta:
        sent.base_frame_id = "f1"
        read = convert.frame_delta_from_pb
    else:
        sent.encoding = frame_pb2.IMAGE_ENCODING_PNG
        sent.data = b"png bytes"
    with pytest.raises(InvalidArgument) as raised:
        read(sent, "observation.frame")
    assert raised.value.field == "observation.frame.captured_at"


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
