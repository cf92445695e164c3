"""SendInput's structures have Windows x64's exact layout, byte for byte.

SendInput takes cbSize and rejects (or misreads) anything else, so the sizes and
offsets below are the ones winuser.h gives on x64; checked here on a 64-bit host.
"""

from __future__ import annotations

import ctypes
import struct

import pytest

from holodesk.platform.windows import structs as s

pytestmark = pytest.mark.skipif(
    ctypes.sizeof(ctypes.c_void_p) != 8, reason="the x64 layout needs a 64-bit Python"
)


def test_sizes_match_windows_x64() -> None:
    assert ctypes.sizeof(s.MOUSEINPUT) == 32
    assert ctypes.sizeof(s.KEYBDINPUT) == 24
    assert ctypes.sizeof(s.HARDWAREINPUT) == 8
    assert ctypes.sizeof(s.INPUT_UNION) == 32
    assert ctypes.sizeof(s.INPUT) == 40
    assert ctypes.alignment(s.INPUT) == 8


@pytest.mark.parametrize(
    ("structure", "offsets"),
    [
        (
            s.MOUSEINPUT,
            {"dx": 0, "dy": 4, "mouseData": 8, "dwFlags": 12, "time": 16, "dwExtraInfo": 24},
        ),
        (s.KEYBDINPUT, {"wVk": 0, "wScan": 2, "dwFlags": 4, "time": 8, "dwExtraInfo": 16}),
        (s.HARDWAREINPUT, {"uMsg": 0, "wParamL": 4, "wParamH": 6}),
        (s.INPUT, {"type": 0, "u": 8}),
    ],
)
def test_field_offsets_match_windows_x64(
    structure: type[ctypes.Structure], offsets: dict[str, int]
) -> None:
    assert {name: getattr(structure, name).offset for name in offsets} == offsets


def test_field_widths_are_windows_not_host_c_types() -> None:
    # LONG is 32 bits on Windows even where the host's C long is 64 (Linux x64).
    assert s.MOUSEINPUT.dx.size == 4
    assert s.MOUSEINPUT.dwExtraInfo.size == 8
    assert s.KEYBDINPUT.wVk.size == 2


def test_a_mouse_input_serialises_as_windows_reads_it() -> None:
    event = s.mouse_input(dx=-5, dy=70000, data=-120, flags=s.MOUSEEVENTF_WHEEL)
    # DWORD type, 4 bytes padding, LONG dx, LONG dy, DWORD mouseData, DWORD dwFlags,
    # DWORD time, 4 bytes padding, ULONG_PTR dwExtraInfo.
    expected = struct.pack("<I4xiiIII4xQ", s.INPUT_MOUSE, -5, 70000, 0xFFFFFF88, 0x0800, 0, 0)
    assert bytes(event) == expected
    assert s.signed_mouse_data(event) == -120


def test_a_keyboard_input_serialises_as_windows_reads_it() -> None:
    event = s.keyboard_input(vk=0x41, scan=0x1E, flags=s.KEYEVENTF_KEYUP)
    expected = struct.pack("<I4xHHII4xQ8x", s.INPUT_KEYBOARD, 0x41, 0x1E, 0x2, 0, 0)
    assert len(expected) == 40
    assert bytes(event) == expected


def test_unicode_units_fit_the_scan_field() -> None:
    event = s.keyboard_input(scan=0xDE00, flags=s.KEYEVENTF_UNICODE)
    assert event.ki.wScan == 0xDE00
    assert event.ki.wVk == 0
