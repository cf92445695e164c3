"""The uinput route: event sequences for every action, against a fake evdev.UInput.

/dev/uinput does not exist on these machines, so the devices are fakes that keep
what they were created with and every event written (evdev's own syn()). The
errors for a missing or forbidden /dev/uinput are checked for real.
"""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import pytest
from evdev import UInput, ecodes

from holodesk.platform.base import MouseButton, Region
from holodesk.platform.errors import InputError
from holodesk.platform.wayland.uinput import (
    KEYBOARD_NAME,
    POINTER_NAME,
    UinputInput,
    UinputUnavailableError,
    uinput_problems,
)
from tests.platform.wayland.fake_uinput import Event, FakeDevices

KEY, ABS, REL = ecodes.EV_KEY, ecodes.EV_ABS, ecodes.EV_REL
SHIFT = ecodes.KEY_LEFTSHIFT
DESKTOP = Region(-1280, 0, 3200, 1080)  # a monitor left of the primary: negative origin


@pytest.fixture
def devices() -> FakeDevices:
    return FakeDevices()


@pytest.fixture
def driver(devices: FakeDevices) -> UinputInput:
    return UinputInput(DESKTOP, factory=devices, device_settle_s=0)


def _pointer(devices: FakeDevices) -> list[list[Event]]:
    return devices.named(POINTER_NAME).reports()


def _keyboard(devices: FakeDevices) -> list[list[Event]]:
    return devices.named(KEYBOARD_NAME).reports()


def _taps(*codes: int) -> list[list[Event]]:
    return [report for code in codes for report in ([(KEY, code, 1)], [(KEY, code, 0)])]


def shifted(code: int) -> list[list[Event]]:
    return [[(KEY, SHIFT, 1)], *_taps(code), [(KEY, SHIFT, 0)]]


def test_devices_are_an_absolute_pointer_and_a_keyboard(devices: FakeDevices) -> None:
    UinputInput(DESKTOP, factory=devices, device_settle_s=0, devnode="/dev/custom-uinput")
    pointer, keyboard = devices.named(POINTER_NAME), devices.named(KEYBOARD_NAME)
    assert pointer.devnode == keyboard.devnode == "/dev/custom-uinput"
    caps = pointer.capabilities_requested
    axes = dict(caps[ABS])
    # One unit per physical pixel across the whole desktop.
    assert (axes[ecodes.ABS_X].min, axes[ecodes.ABS_X].max) == (0, 3199)
    assert (axes[ecodes.ABS_Y].min, axes[ecodes.ABS_Y].max) == (0, 1079)
    assert set(caps[REL]) == {ecodes.REL_WHEEL, ecodes.REL_HWHEEL}
    assert {ecodes.BTN_LEFT, ecodes.BTN_RIGHT, ecodes.BTN_MIDDLE} <= set(caps[KEY])
    # No BTN_TOUCH or INPUT_PROP_DIRECT: libinput must see a pointer, not a touchscreen.
    assert ecodes.BTN_TOUCH not in caps[KEY]
    assert "input_props" not in pointer.options
    assert {ecodes.KEY_A, ecodes.KEY_LEFTCTRL, ecodes.KEY_F24} <= set(
        keyboard.capabilities_requested[KEY]
    )


def test_move_is_one_absolute_report_relative_to_the_desktop(
    driver: UinputInput, devices: FakeDevices
) -> None:
    driver.move(-1280, 0)
    driver.move(1919, 1079)
    assert _pointer(devices) == [
        [(ABS, ecodes.ABS_X, 0), (ABS, ecodes.ABS_Y, 0)],
        [(ABS, ecodes.ABS_X, 3199), (ABS, ecodes.ABS_Y, 1079)],
    ]
    assert driver.cursor_position() == (1919, 1079)


def test_move_off_the_desktop_is_refused(driver: UinputInput, devices: FakeDevices) -> None:
    with pytest.raises(ValueError, match="outside the desktop"):
        driver.move(1920, 10)
    assert _pointer(devices) == []


BUTTON_CODES = [
    (MouseButton.LEFT, ecodes.BTN_LEFT),
    (MouseButton.RIGHT, ecodes.BTN_RIGHT),
    (MouseButton.MIDDLE, ecodes.BTN_MIDDLE),
    (MouseButton.BACK, ecodes.BTN_SIDE),
    (MouseButton.FORWARD, ecodes.BTN_EXTRA),
]


@pytest.mark.parametrize(("button", "code"), BUTTON_CODES, ids=[b.name for b, _ in BUTTON_CODES])
@pytest.mark.parametrize("count", [1, 2, 3])
def test_clicks(
    driver: UinputInput, devices: FakeDevices, button: MouseButton, code: int, count: int
) -> None:
    driver.click(100, 200, button=button, count=count)
    assert _pointer(devices) == [
        [(ABS, ecodes.ABS_X, 1380), (ABS, ecodes.ABS_Y, 200)],
        *([[(KEY, code, 1)], [(KEY, code, 0)]] * count),
    ]
    assert code in devices.named(POINTER_NAME).capabilities_requested[KEY]


def test_click_with_modifiers_holds_them_around_the_click(
    driver: UinputInput, devices: FakeDevices
) -> None:
    driver.click(0, 0, modifiers=["ctrl", "Shift", "alt", "cmd"])
    order = [ecodes.KEY_LEFTCTRL, SHIFT, ecodes.KEY_LEFTALT, ecodes.KEY_LEFTMETA]
    assert _keyboard(devices) == [[(KEY, c, 1)] for c in order] + [
        [(KEY, c, 0)] for c in reversed(order)
    ]
    assert driver.held() == ((), ())


def test_drag_holds_the_button_along_the_path(driver: UinputInput, devices: FakeDevices) -> None:
    path = [(0, 0), (10, 5), (20, 10)]
    driver.drag(path, button=MouseButton.RIGHT, duration_s=0)
    assert _pointer(devices) == [
        [(ABS, ecodes.ABS_X, 1280), (ABS, ecodes.ABS_Y, 0)],
        [(KEY, ecodes.BTN_RIGHT, 1)],
        [(ABS, ecodes.ABS_X, 1290), (ABS, ecodes.ABS_Y, 5)],
        [(ABS, ecodes.ABS_X, 1300), (ABS, ecodes.ABS_Y, 10)],
        [(KEY, ecodes.BTN_RIGHT, 0)],
    ]


@pytest.mark.parametrize(
    ("dx", "dy", "notches"),
    [
        (0, 2, [(ecodes.REL_WHEEL, -1)] * 2),  # down: the wheel turns towards the user
        (0, -3, [(ecodes.REL_WHEEL, 1)] * 3),
        (2, 0, [(ecodes.REL_HWHEEL, 1)] * 2),
        (-1, 0, [(ecodes.REL_HWHEEL, -1)]),
        (1, -1, [(ecodes.REL_WHEEL, 1), (ecodes.REL_HWHEEL, 1)]),
    ],
    ids=str,
)
def test_scroll_is_one_report_per_notch(
    driver: UinputInput, devices: FakeDevices, dx: int, dy: int, notches: list[tuple[int, int]]
) -> None:
    driver.scroll(0, 0, dx, dy)
    assert _pointer(devices)[1:] == [[(REL, axis, value)] for axis, value in notches]


def test_key_chord_and_named_keys(driver: UinputInput, devices: FakeDevices) -> None:
    driver.key_chord(["ctrl", "shift", "Escape"])
    driver.key_chord(["PgDn"])
    driver.key_chord(["f13"])
    driver.key_chord(["menu"])
    ctrl, esc = ecodes.KEY_LEFTCTRL, ecodes.KEY_ESC
    assert _keyboard(devices) == [
        [(KEY, ctrl, 1)],
        [(KEY, SHIFT, 1)],
        [(KEY, esc, 1)],
        [(KEY, esc, 0)],
        [(KEY, SHIFT, 0)],
        [(KEY, ctrl, 0)],
        *_taps(ecodes.KEY_PAGEDOWN, ecodes.KEY_F13, ecodes.KEY_COMPOSE),
    ]


def test_key_down_of_a_capital_holds_shift_until_key_up(
    driver: UinputInput, devices: FakeDevices
) -> None:
    driver.key_down("A")
    driver.key_down("A")  # auto-repeat
    assert driver.held() == (("A",), ())
    driver.key_up("A")
    a = ecodes.KEY_A
    assert _keyboard(devices) == [
        [(KEY, SHIFT, 1)],
        [(KEY, a, 1)],
        [(KEY, a, 2)],
        [(KEY, a, 0)],
        [(KEY, SHIFT, 0)],
    ]


def test_shift_held_by_the_agent_is_not_pressed_twice(
    driver: UinputInput, devices: FakeDevices
) -> None:
    driver.key_down("shift")
    driver.type_text("A")
    driver.key_up("shift")
    assert _keyboard(devices) == [[(KEY, SHIFT, 1)], *_taps(ecodes.KEY_A), [(KEY, SHIFT, 0)]]


def test_type_text_shifted_ascii_and_line_breaks(driver: UinputInput, devices: FakeDevices) -> None:
    driver.type_text("Hi!\r\n~ a\tb")
    assert _keyboard(devices) == [
        *shifted(ecodes.KEY_H),
        *_taps(ecodes.KEY_I),
        *shifted(ecodes.KEY_1),
        *_taps(ecodes.KEY_ENTER),  # "\r\n" is one Enter
        *shifted(ecodes.KEY_GRAVE),
        *_taps(ecodes.KEY_SPACE, ecodes.KEY_A, ecodes.KEY_TAB, ecodes.KEY_B),
    ]


def test_shell_hostile_text_maps_every_character(driver: UinputInput, devices: FakeDevices) -> None:
    text = "rm -rf / && echo $HOME `id` \"q\" 'z' ; | > < * ? ~ \\ ! %s {x}"
    driver.type_text(text)
    presses = [e for report in _keyboard(devices) for e in report if e[2] == 1]
    assert len([e for e in presses if e[1] != SHIFT]) == len(text)


def test_unicode_without_a_key_is_refused_before_typing(
    driver: UinputInput, devices: FakeDevices
) -> None:
    with pytest.raises(InputError) as raised:
        driver.type_text("abc é")
    message = str(raised.value)
    # No keymap given: the US layout is assumed, and the refusal says so.
    assert "could not read that layout (no keymap was given to the driver), so it assumes US" in (
        message
    ), message
    assert (
        "; the US layout has no key for: 'é' (U+00E9). Nothing of this input was sent." in message
    )
    assert "run holodesk inside the Wayland session" in message
    assert _keyboard(devices) == []  # nothing half-typed
    with pytest.raises(InputError, match="U\\+65E5"):
        driver.key_down("日")
    assert driver.held() == ((), ())


def test_control_characters_are_refused(driver: UinputInput) -> None:
    with pytest.raises(InputError, match="control character U\\+0007"):
        driver.type_text("a\x07")


def test_close_releases_everything_then_destroys_the_devices(
    driver: UinputInput, devices: FakeDevices
) -> None:
    driver.move(0, 0)
    driver.key_down("ctrl")
    driver.key_down("Z")
    driver.mouse_down(MouseButton.LEFT)
    for device in devices.made:
        device.clear()
    driver.close()
    assert _pointer(devices) == [[(KEY, ecodes.BTN_LEFT, 0)]]
    assert _keyboard(devices) == [
        [(KEY, ecodes.KEY_Z, 0)],
        [(KEY, SHIFT, 0)],
        [(KEY, ecodes.KEY_LEFTCTRL, 0)],
    ]
    assert all(device.closed for device in devices.made)


def test_a_keyboard_that_cannot_be_made_closes_the_pointer() -> None:
    made: list[object] = []

    def factory(**options: object) -> UInput:
        if options["name"] == KEYBOARD_NAME:
            raise OSError(13, "Permission denied")
        device = FakeDevices()(**options)
        made.append(device)
        return device

    with pytest.raises(UinputUnavailableError, match="Permission denied"):
        UinputInput(DESKTOP, factory=factory, device_settle_s=0)
    assert [getattr(d, "closed", None) for d in made] == [True]


# -- real /dev/uinput errors ------------------------------------------------------------------
def test_missing_dev_uinput_is_explained_for_real(tmp_path: Path) -> None:
    devnode = "/dev/uinput"
    if os.path.exists(devnode):
        devnode = str(tmp_path / "uinput")  # this machine has one: use a path that does not
    with pytest.raises(UinputUnavailableError) as raised:
        UinputInput(DESKTOP, devnode=devnode, device_settle_s=0)  # evdev's real UInput
    [(cause, fix)] = raised.value.problems
    assert f"{devnode} does not exist" in cause
    assert "modprobe uinput" in fix
    assert "HOLODESK_WAYLAND_INPUT=portal" in fix


def test_a_file_that_is_not_a_device_is_explained(tmp_path: Path) -> None:
    devnode = tmp_path / "uinput"
    devnode.write_text("")
    [(cause, _)] = uinput_problems(str(devnode))
    assert "not a character device" in cause


def _unwritable_char_device() -> str | None:
    """A character device that user nobody may not write to."""
    for name in ("kmsg", "console", "kvm", "mem", "fuse", "autofs", "cpu_dma_latency"):
        path = Path("/dev") / name
        try:
            mode = path.stat().st_mode
        except OSError:
            continue
        if stat.S_ISCHR(mode) and not mode & stat.S_IWOTH:
            return str(path)
    return None


_PERMISSION_PROBE = """
import sys
from holodesk.platform.base import Region
from holodesk.platform.wayland.uinput import UinputInput, UinputUnavailableError
try:
    UinputInput(Region(0, 0, 10, 10), devnode=sys.argv[1], device_settle_s=0)
except UinputUnavailableError as error:
    for cause, fix in error.problems:
        print(cause)
        print(fix)
"""


def test_no_permission_is_explained_for_real(tmp_path: Path) -> None:
    """Opening a device node the process may not write fails with the fix."""
    if os.geteuid() == 0:
        # Root ignores file modes; without CAP_DAC_OVERRIDE (dropped by setpriv) it is
        # held to them, like any user. Staying uid 0 keeps the interpreter reachable
        # even in a private (0700) checkout, which an unprivileged uid could not enter.
        setpriv = shutil.which("setpriv")
        assert setpriv, "setpriv (util-linux) is missing"
        devnode = str(tmp_path / "uinput")
        os.mknod(devnode, stat.S_IFCHR | 0o400, os.makedev(1, 3))  # /dev/null's numbers
        drop = "-dac_override,-dac_read_search"
        prefix = [setpriv, f"--bounding-set={drop}", f"--inh-caps={drop}"]
    else:
        found = _unwritable_char_device()
        if found is None:
            pytest.skip("no character device here that this user may not write")
        devnode, prefix = found, []
    result = subprocess.run(
        [*prefix, sys.executable, "-c", _PERMISSION_PROBE, devnode],
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)},
        cwd="/",
    )
    cause, fix = result.stdout.splitlines()
    assert f"may not write to {devnode}" in cause
    assert 'KERNEL=="uinput", GROUP="input", MODE="0660"' in fix
    assert "usermod -aG input" in fix


def test_evdev_codes_written_out_match_evdev() -> None:
    from holodesk.platform.wayland import buttons

    for name in ("BTN_LEFT", "BTN_RIGHT", "BTN_MIDDLE", "BTN_SIDE", "BTN_EXTRA"):
        assert getattr(buttons, name) == getattr(ecodes, name)
