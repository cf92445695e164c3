"""The uinput route on the kernel's real /dev/uinput, read back through evdev.

The other uinput tests (test_wayland_uinput*.py) write to a fake device, which
runs anywhere; these create the two real virtual devices, open the event nodes
the kernel made for them, and read back what a compositor's libinput would read.
Where /dev/uinput is missing or not writable (most containers, this project's CI
among them), each test is skipped with the cause and the fix in its message, from
the route's own check (`uinput_problems`): never silently.
"""

from __future__ import annotations

import select
import time
from collections.abc import Iterator

import pytest
from evdev import InputDevice, ecodes, list_devices

from holodesk.platform.base import MouseButton, Region
from holodesk.platform.wayland.uinput import (
    DEFAULT_DEVNODE,
    KEYBOARD_NAME,
    POINTER_NAME,
    UinputInput,
    uinput_problems,
)

DESKTOP = Region(0, 0, 1280, 800)
TIMEOUT_S = 10.0
Event = tuple[int, int, int]


def _require_uinput() -> None:
    problems = uinput_problems(DEFAULT_DEVNODE)
    if problems:
        causes = "; ".join(f"{cause} (fix: {fix})" for cause, fix in problems)
        pytest.skip(f"the real uinput device cannot be tested here: {causes}")


def _node(name: str) -> InputDevice[str]:
    """The event node the kernel made for our device called `name` (polled: udev or
    devtmpfs makes it a moment after the device exists)."""
    deadline = time.monotonic() + TIMEOUT_S
    while True:
        for path in list_devices():
            device = InputDevice(path)
            if device.name == name:
                return device
            device.close()
        if time.monotonic() > deadline:
            raise AssertionError(f"no /dev/input/event* node is named {name!r}")
        time.sleep(0.05)


class Reader:
    """Reads one device's events, SYN reports left out."""

    def __init__(self, device: InputDevice[str]) -> None:
        self.device = device
        self.events: list[Event] = []

    def wait_for(self, count: int) -> list[Event]:
        deadline = time.monotonic() + TIMEOUT_S
        while len(self.events) < count:
            left = deadline - time.monotonic()
            if left <= 0:
                raise AssertionError(f"read {self.events}, waiting for {count} events")
            ready, _, _ = select.select([self.device.fd], [], [], left)
            if ready:
                self.events += [
                    (e.type, e.code, e.value) for e in self.device.read() if e.type != ecodes.EV_SYN
                ]
        return self.events


@pytest.fixture
def driver() -> Iterator[UinputInput]:
    _require_uinput()
    opened = UinputInput(DESKTOP, device_settle_s=0)
    yield opened
    opened.close()


@pytest.fixture
def pointer(driver: UinputInput) -> Iterator[Reader]:
    device = _node(POINTER_NAME)
    yield Reader(device)
    device.close()


@pytest.fixture
def keyboard(driver: UinputInput) -> Iterator[Reader]:
    device = _node(KEYBOARD_NAME)
    yield Reader(device)
    device.close()


def test_the_pointer_device_is_absolute_over_the_desktop(pointer: Reader) -> None:
    """Proves: the kernel's device has ABS_X/ABS_Y spanning the desktop's pixels, the
    five buttons and both wheels, as libinput needs to map it onto the outputs."""
    capabilities = pointer.device.capabilities(absinfo=False)
    x_axis, y_axis = pointer.device.absinfo(ecodes.ABS_X), pointer.device.absinfo(ecodes.ABS_Y)
    assert (x_axis.min, x_axis.max, y_axis.min, y_axis.max) == (0, 1279, 0, 799)
    assert {ecodes.BTN_LEFT, ecodes.BTN_RIGHT, ecodes.BTN_MIDDLE} <= set(
        capabilities[ecodes.EV_KEY]
    )
    assert {ecodes.REL_WHEEL, ecodes.REL_HWHEEL} <= set(capabilities[ecodes.EV_REL])


def test_a_click_and_a_scroll_come_out_of_the_real_device(
    driver: UinputInput, pointer: Reader
) -> None:
    """Proves: a right click at (640, 400) is an absolute move there, then the
    button down and up; a scroll down 2, right 1 there is two wheel notches and one
    tilt (its move to where the pointer already is the kernel drops: same values)."""
    driver.click(640, 400, button=MouseButton.RIGHT)
    driver.scroll(640, 400, 1, 2)
    assert pointer.wait_for(7) == [
        (ecodes.EV_ABS, ecodes.ABS_X, 640),
        (ecodes.EV_ABS, ecodes.ABS_Y, 400),
        (ecodes.EV_KEY, ecodes.BTN_RIGHT, 1),
        (ecodes.EV_KEY, ecodes.BTN_RIGHT, 0),
        (ecodes.EV_REL, ecodes.REL_WHEEL, -1),
        (ecodes.EV_REL, ecodes.REL_WHEEL, -1),
        (ecodes.EV_REL, ecodes.REL_HWHEEL, 1),
    ]


def test_typed_text_comes_out_as_us_keys(driver: UinputInput, keyboard: Reader) -> None:
    """Proves: "aB" is KEY_A down/up, then Shift down, KEY_B down/up, Shift up."""
    driver.type_text("aB")
    assert keyboard.wait_for(6) == [
        (ecodes.EV_KEY, ecodes.KEY_A, 1),
        (ecodes.EV_KEY, ecodes.KEY_A, 0),
        (ecodes.EV_KEY, ecodes.KEY_LEFTSHIFT, 1),
        (ecodes.EV_KEY, ecodes.KEY_B, 1),
        (ecodes.EV_KEY, ecodes.KEY_B, 0),
        (ecodes.EV_KEY, ecodes.KEY_LEFTSHIFT, 0),
    ]


def test_without_a_usable_device_the_reason_is_the_routes_own() -> None:
    """Proves: the check that gates these tests names the cause and its fix, for a
    device node that cannot be there (so it runs everywhere)."""
    [(cause, fix)] = uinput_problems("/nonexistent/uinput")
    assert cause == "/nonexistent/uinput does not exist, so no virtual input device can be made"
    assert "modprobe uinput" in fix
