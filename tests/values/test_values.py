"""The contract's values in one home: each rule has one definition, the client's and
the daemon's callers give the same answers through it, and the places that must still
spell a value (a type's Literal) agree with it."""

from __future__ import annotations

from typing import get_args

import pytest
from hypothesis import given
from hypothesis import strategies as st

from holodesk.client import actions as client_actions
from holodesk.client.capture import CaptureError, fit_size
from holodesk.daemon import actions as daemon_actions
from holodesk.daemon.dialects.coords import fit_in_box as daemon_fit_in_box
from holodesk.daemon.geometry import Size
from holodesk.data.format import ENCODINGS, ImageEncodingValue
from holodesk.platform import base as platform_base
from holodesk.values.actions import ActionResult, ActionStatus, MouseButton
from holodesk.values.encoding import ImageEncoding
from holodesk.values.fit import fit_in_box

sides = st.integers(1, 8000)
bounds = st.integers(0, 4000)


@given(width=sides, height=sides, max_width=bounds, max_height=bounds)
def test_client_and_daemon_fit_a_screen_to_the_same_size(
    width: int, height: int, max_width: int, max_height: int
) -> None:
    fitted = fit_in_box(width, height, max_width, max_height)
    assert fit_size(width, height, max_width, max_height) == fitted
    assert daemon_fit_in_box(Size(width, height), max_width, max_height) == Size(*fitted)
    if max_width:
        assert fitted[0] <= max(max_width, 1)
    if max_height:
        assert fitted[1] <= max(max_height, 1)
    assert 1 <= fitted[0] <= width
    assert 1 <= fitted[1] <= height


@pytest.mark.parametrize(("width", "height"), [(0, 10), (10, 0), (-1, 5)])
def test_an_empty_size_has_nothing_to_fit(width: int, height: int) -> None:
    with pytest.raises(ValueError, match="empty size"):
        fit_in_box(width, height, 100, 100)
    # The client's capture names what it could not capture.
    with pytest.raises(CaptureError, match="empty region"):
        fit_size(width, height, 100, 100)


def test_client_daemon_and_platform_share_one_definition_of_each_value() -> None:
    assert client_actions.ActionStatus is daemon_actions.ActionStatus is ActionStatus
    assert client_actions.ActionResult is daemon_actions.ActionResult is ActionResult
    assert platform_base.MouseButton is daemon_actions.MouseButton is MouseButton


def test_the_recording_formats_encodings_are_the_contracts() -> None:
    assert get_args(ImageEncodingValue) == ENCODINGS
    assert tuple(encoding.value for encoding in ImageEncoding) == ENCODINGS
    assert [e.mime_type for e in ImageEncoding] == ["image/png", "image/jpeg", "image/webp"]
