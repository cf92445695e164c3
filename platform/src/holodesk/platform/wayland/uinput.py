"""Input through kernel uinput devices: for compositors without a RemoteDesktop portal.

Two virtual devices, as libinput expects one job per device: a pointer with
absolute ABS_X/ABS_Y axes over the whole virtual desktop (libinput maps an
absolute pointer onto the compositor's full output layout, so a value is a
fraction of the desktop and the compositor's own scale does not matter), the
five buttons, REL_WHEEL and REL_HWHEEL; and a keyboard with the keys of the
contract's vocabulary and of the US layout.

uinput works below the compositor, on any of them, but types keycodes, not
characters: the compositor's keymap (the desktop's keyboard layout) decides what
they mean. So the characters' keys come from that keymap (`uinput_strokes`,
read once the devices exist; the US layout is assumed where it cannot be read),
and text with a character no key of it types is refused before any of it is
sent (InputError naming them, the layout and the fix). Named keys are the
keyboard's own evdev codes, whatever the layout. Needs write access to
/dev/uinput.
"""

from __future__ import annotations

import errno
import os
import stat
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from evdev import AbsInfo, UInput, UInputError, ecodes

from holodesk.platform.base import InputDriver, MouseButton, Region
from holodesk.platform.errors import InputError
from holodesk.platform.keys import holds
from holodesk.platform.text import TEXT_CHUNK_CHARS, KeyPress, plan_text
from holodesk.platform.wayland.buttons import EVDEV_BUTTONS, evdev_button
from holodesk.platform.wayland.keycodes import NAMED_KEYCODES
from holodesk.platform.wayland.uinput_strokes import (
    MAX_EVDEV_KEYCODE,
    CharStrokes,
    Stroke,
    UsStrokes,
)

DEFAULT_DEVNODE = "/dev/uinput"
# Time for udev and the compositor (libinput hotplug) to adopt new devices: events
# sent before then are lost.
DEFAULT_DEVICE_SETTLE_S = 1.0
POINTER_NAME = "holodesk virtual pointer"
KEYBOARD_NAME = "holodesk virtual keyboard"
# Every key a keymap may type with, up to X11's last keycode: a key the device did
# not declare is dropped by the kernel, and which ones the layout needs is known
# only once the device exists.
KEYBOARD_KEYCODES = tuple(range(1, MAX_EVDEV_KEYCODE + 1))
NO_KEYMAP_GIVEN = "no keymap was given to the driver"

Problem = tuple[str, str]
DeviceFactory = Callable[..., UInput]

PORTAL_ROUTE = "the portal route (HOLODESK_WAYLAND_INPUT=portal, on GNOME or KDE Plasma)"


def access_fix(devnode: str) -> str:
    return (
        f"give your user write access to {devnode}: a udev rule such as "
        '\'KERNEL=="uinput", GROUP="input", MODE="0660", OPTIONS+="static_node=uinput"\' '
        "in /etc/udev/rules.d/60-holodesk-uinput.rules, then `sudo usermod -aG input $USER` and "
        f"log in again; or use {PORTAL_ROUTE}"
    )


def missing_fix(devnode: str) -> str:
    return (
        f"load the uinput kernel module (`sudo modprobe uinput`, and add 'uinput' to "
        f"/etc/modules-load.d/uinput.conf to keep it), or in a container pass the device in "
        f"(--device {devnode}); or use {PORTAL_ROUTE}"
    )


def uinput_problems(devnode: str = DEFAULT_DEVNODE) -> list[Problem]:
    """Why uinput devices cannot be created here (empty when they can, as far as we can tell)."""
    path = Path(devnode)
    try:
        mode = path.stat().st_mode
    except FileNotFoundError:
        return [
            (
                f"{devnode} does not exist, so no virtual input device can be made",
                missing_fix(devnode),
            )
        ]
    except OSError as error:
        return [(f"cannot inspect {devnode}: {error}", access_fix(devnode))]
    if not stat.S_ISCHR(mode):
        return [(f"{devnode} is not a character device", missing_fix(devnode))]
    if not os.access(devnode, os.W_OK):
        return [(f"this user (uid {os.getuid()}) may not write to {devnode}", access_fix(devnode))]
    return []


def open_device(factory: DeviceFactory, devnode: str, **options: Any) -> UInput:
    """A uinput device, or UinputUnavailableError with the fix."""
    try:
        return factory(devnode=devnode, **options)
    except UInputError as error:
        found = uinput_problems(devnode) or [
            (f"creating a uinput device failed: {error}", access_fix(devnode))
        ]
        raise UinputUnavailableError(found) from error
    except OSError as error:
        if error.errno in (errno.EACCES, errno.EPERM):
            fix = access_fix(devnode)
        elif error.errno in (errno.ENOENT, errno.ENODEV, errno.ENOTTY):
            fix = missing_fix(devnode)
        else:
            fix = access_fix(devnode)
        raise UinputUnavailableError(
            [(f"creating a uinput device on {devnode} failed: {error}", fix)]
        ) from error


class UinputUnavailableError(Exception):
    """uinput cannot be used here; `problems` holds (cause, fix) pairs."""

    def __init__(self, problems: list[Problem]) -> None:
        self.problems = problems
        super().__init__("; ".join(cause for cause, _ in problems))


class UinputInput(InputDriver):
    """InputDriver over a virtual absolute pointer and a virtual keyboard."""

    def __init__(
        self,
        desktop: Region,
        *,
        devnode: str = DEFAULT_DEVNODE,
        factory: DeviceFactory = UInput,
        device_settle_s: float = DEFAULT_DEVICE_SETTLE_S,
        strokes: Callable[[], CharStrokes] | None = None,
    ) -> None:
        """`strokes` gives the characters' keys once the devices exist (a compositor
        with no keyboard before has no keymap to read); default: the US layout's."""
        super().__init__()
        if desktop.width < 1 or desktop.height < 1:
            raise ValueError(f"the desktop must be at least 1x1 pixels: {desktop}")
        if device_settle_s < 0:
            raise ValueError(f"device_settle_s cannot be negative: {device_settle_s}")
        self._desktop = desktop
        self._lock = threading.RLock()
        self._position: tuple[int, int] | None = None
        # key name -> the stroke it went down with, and the modifiers we pressed for it
        self._down: dict[str, tuple[Stroke, tuple[int, ...]]] = {}
        axis = AbsInfo(value=0, min=0, max=0, fuzz=0, flat=0, resolution=0)
        self._pointer = open_device(
            factory,
            devnode,
            name=POINTER_NAME,
            events={
                ecodes.EV_KEY: sorted(EVDEV_BUTTONS.values()),
                ecodes.EV_ABS: [
                    (ecodes.ABS_X, axis._replace(max=desktop.width - 1)),
                    (ecodes.ABS_Y, axis._replace(max=desktop.height - 1)),
                ],
                ecodes.EV_REL: [ecodes.REL_WHEEL, ecodes.REL_HWHEEL],
            },
        )
        try:
            self._keyboard = open_device(
                factory,
                devnode,
                name=KEYBOARD_NAME,
                events={ecodes.EV_KEY: list(KEYBOARD_KEYCODES)},
            )
        except BaseException:
            self._pointer.close()
            raise
        time.sleep(device_settle_s)
        try:
            self._strokes = strokes() if strokes is not None else UsStrokes(NO_KEYMAP_GIVEN)
        except BaseException:
            self._pointer.close()
            self._keyboard.close()
            raise

    # -- pointer -------------------------------------------------------------------
    def _move(self, x: int, y: int) -> None:
        if not self._desktop.contains(x, y):
            raise ValueError(f"point ({x}, {y}) is outside the desktop {self._desktop}")
        with self._lock:
            self._emit(
                self._pointer,
                (ecodes.EV_ABS, ecodes.ABS_X, x - self._desktop.x),
                (ecodes.EV_ABS, ecodes.ABS_Y, y - self._desktop.y),
            )
            self._position = (x, y)

    def _button(self, button: MouseButton, down: bool) -> None:
        with self._lock:
            self._emit(self._pointer, (ecodes.EV_KEY, evdev_button(button), int(down)))

    def _scroll(self, dx: int, dy: int) -> None:
        # One report per notch, so each is one wheel click to the app. REL_WHEEL
        # counts up (away from the user) as positive: the opposite of dy.
        with self._lock:
            for _ in range(abs(dy)):
                self._emit(self._pointer, (ecodes.EV_REL, ecodes.REL_WHEEL, -1 if dy > 0 else 1))
            for _ in range(abs(dx)):
                self._emit(self._pointer, (ecodes.EV_REL, ecodes.REL_HWHEEL, 1 if dx > 0 else -1))

    def cursor_position(self) -> tuple[int, int]:
        """Where this driver last moved the pointer (uinput cannot read it back)."""
        with self._lock:
            if self._position is not None:
                return self._position
        return (
            self._desktop.x + self._desktop.width // 2,
            self._desktop.y + self._desktop.height // 2,
        )

    # -- keyboard ------------------------------------------------------------------
    def _key(self, key: str, down: bool) -> None:
        with self._lock:
            if down:
                self._key_down(key)
            else:
                self._key_up(key)

    def _key_down(self, key: str) -> None:
        if key in self._down:
            code = self._down[key][0].keycode
            self._emit(self._keyboard, (ecodes.EV_KEY, code, 2))  # auto-repeat
            return
        (stroke,) = self._strokes_for([key])
        pressed = self._modifiers_to_press(stroke)
        self._down[key] = (stroke, pressed)
        for modifier in pressed:
            self._emit(self._keyboard, (ecodes.EV_KEY, modifier, 1))
        self._emit(self._keyboard, (ecodes.EV_KEY, stroke.keycode, 1))

    def _key_up(self, key: str) -> None:
        down = self._down.pop(key, None)
        if down is None:  # never pressed here: the release cannot hurt
            (stroke,) = self._strokes_for([key])
            self._emit(self._keyboard, (ecodes.EV_KEY, stroke.keycode, 0))
            return
        stroke, pressed = down
        self._emit(self._keyboard, (ecodes.EV_KEY, stroke.keycode, 0))
        for modifier in reversed(pressed):
            self._emit(self._keyboard, (ecodes.EV_KEY, modifier, 0))

    def type_text(self, text: str) -> None:
        keys = [
            key
            for step in plan_text(text)
            for key in ([step.key] if isinstance(step, KeyPress) else step.text)
        ]
        with self._lock:
            strokes = self._strokes_for(keys)  # all checked before typing
            for index, stroke in enumerate(strokes):
                if index % TEXT_CHUNK_CHARS == 0:
                    self._checkpoint()  # before each bounded piece of the text
                pressed = self._modifiers_to_press(stroke)
                events = [
                    *((ecodes.EV_KEY, modifier, 1) for modifier in pressed),
                    (ecodes.EV_KEY, stroke.keycode, 1),
                    (ecodes.EV_KEY, stroke.keycode, 0),
                    *((ecodes.EV_KEY, modifier, 0) for modifier in reversed(pressed)),
                ]
                for event in events:
                    self._emit(self._keyboard, event)

    def _strokes_for(self, keys: list[str]) -> list[Stroke]:
        """Each key's stroke, in order: a named key's own code, a character's from the
        layout (InputError for every one it lacks, before anything is sent)."""
        chars = [key for key in keys if len(key) == 1]
        found = self._strokes.strokes(chars) if chars else {}
        strokes = []
        for key in keys:
            if len(key) == 1:
                strokes.append(found[key])
            elif key in NAMED_KEYCODES:
                strokes.append(Stroke(NAMED_KEYCODES[key]))
            else:
                raise InputError(f"the uinput route has no keycode for the key {key!r}")
        return strokes

    def _modifiers_to_press(self, stroke: Stroke) -> tuple[int, ...]:
        """The stroke's modifiers, less a Shift the agent holds already."""
        if holds(self._held_keys, "shift"):
            return tuple(m for m in stroke.modifiers if m != ecodes.KEY_LEFTSHIFT)
        return stroke.modifiers

    # -- plumbing --------------------------------------------------------------------
    def _emit(self, device: UInput, *events: tuple[int, int, int]) -> None:
        """Write events and a SYN_REPORT: one atomic report."""
        try:
            for event_type, code, value in events:
                device.write(event_type, code, value)
            device.syn()
        except OSError as error:
            raise InputError(f"writing to the uinput device failed: {error}") from error

    def close(self) -> None:
        try:
            super().close()
        finally:
            self._pointer.close()
            self._keyboard.close()
            self._strokes.close()
