"""Input injection through SendInput (pure logic over a `WinApi`)."""

from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import dataclass

from holodesk.platform.base import InputDriver, MouseButton
from holodesk.platform.errors import InputError
from holodesk.platform.keys import holds
from holodesk.platform.text import KeyPress, plan_text
from holodesk.platform.windows import events
from holodesk.platform.windows.api import WinApi
from holodesk.platform.windows.blocked import BlockedInput, explain
from holodesk.platform.windows.structs import INPUT
from holodesk.platform.windows.vkeys import (
    NAMED_VKS,
    SHIFT_STATE_ALT,
    SHIFT_STATE_CTRL,
    SHIFT_STATE_SHIFT,
    VK_SHIFT,
    vk_for_named_key,
)

# Text goes in batches: SendInput is atomic per call (nothing interleaves inside a
# batch), but a very long batch can outrun what some applications read per message.
TEXT_BATCH = 64


@dataclass(frozen=True)
class _Stroke:
    """The events that press a key, repeat it while held, and release it."""

    press: list[INPUT]
    repeat: list[INPUT]
    release: list[INPUT]


class WinInput(InputDriver):
    """SendInput with absolute virtual-desktop moves, virtual keys and Unicode text.

    A character key is pressed through its virtual key when the keyboard layout has
    one (so chords like ctrl+c work), with Shift added when the layout needs it; a
    character no key types without Ctrl/Alt (AltGr) goes as a Unicode key event.
    """

    def __init__(self, api: WinApi) -> None:
        super().__init__()
        self._api = api
        self._lock = threading.RLock()
        self._pressed: dict[str, _Stroke] = {}

    # -- pointer ---------------------------------------------------------------------
    def _move(self, x: int, y: int) -> None:
        with self._lock:
            monitors = self._api.monitors()
            if not any(monitor.bounds.contains(x, y) for monitor in monitors):
                bounds = ", ".join(f"{m.device} {m.bounds}" for m in monitors)
                raise ValueError(f"point ({x}, {y}) is on no monitor: {bounds}")
            self._send([events.move(x, y, self._api.virtual_screen())])

    def _button(self, button: MouseButton, down: bool) -> None:
        with self._lock:
            self._send([events.button(events.CONTRACT_BUTTONS[button], down)])

    def _scroll(self, dx: int, dy: int) -> None:
        with self._lock:
            wheel = events.wheel(dx, dy)
            if wheel:
                self._send(wheel)

    def cursor_position(self) -> tuple[int, int]:
        with self._lock:
            return self._api.cursor_position()

    # -- keyboard ------------------------------------------------------------------------
    def _key(self, key: str, down: bool) -> None:
        with self._lock:
            if down:
                self._key_down(key)
            else:
                self._key_up(key)

    def _key_down(self, key: str) -> None:
        held = self._pressed.get(key)
        if held is not None:
            # Auto-repeat: the key again, without the Shift pressed for it.
            self._send(held.repeat)
            return
        stroke = self._stroke(key)
        self._send(stroke.press)
        self._pressed[key] = stroke

    def _key_up(self, key: str) -> None:
        stroke = self._pressed.pop(key, None)
        if stroke is None:
            # Released without our press (held before we started): release it anyway.
            stroke = self._stroke(key, add_shift=False)
        self._send(stroke.release)

    def _stroke(self, key: str, add_shift: bool = True) -> _Stroke:
        if key in NAMED_VKS:
            vk = vk_for_named_key(key)
            scan = self._api.scan_code(vk)
            down = [events.key(vk, scan, True, key)]
            return _Stroke(press=down, repeat=down, release=[events.key(vk, scan, False, key)])
        if len(key) != 1:
            raise InputError(f"{key!r} is not a canonical key name")
        found = self._api.vk_key_scan(key)
        if found is None or found[1] & (SHIFT_STATE_CTRL | SHIFT_STATE_ALT):
            down = events.unicode_key(key, True)
            return _Stroke(press=down, repeat=down, release=events.unicode_key(key, False))
        vk, shift_state = found
        scan = self._api.scan_code(vk)
        down, up = [events.key(vk, scan, True)], [events.key(vk, scan, False)]
        if add_shift and shift_state & SHIFT_STATE_SHIFT and not holds(self._pressed, "shift"):
            shift_scan = self._api.scan_code(VK_SHIFT)
            return _Stroke(
                press=[events.key(VK_SHIFT, shift_scan, True), *down],
                repeat=down,
                release=[*up, events.key(VK_SHIFT, shift_scan, False)],
            )
        return _Stroke(press=down, repeat=down, release=up)

    def type_text(self, text: str) -> None:
        batch: list[INPUT] = []
        for step in plan_text(text):
            if isinstance(step, KeyPress):
                stroke = self._stroke(step.key)
                batch += stroke.press + stroke.release
            else:
                batch += events.unicode_text(step.text)
        with self._lock:
            # The stop signal is checked before each batch.
            for start in self._checked(range(0, len(batch), TEXT_BATCH)):
                self._send(batch[start : start + TEXT_BATCH])

    # -- sending ------------------------------------------------------------------------
    def _send(self, inputs: Sequence[INPUT]) -> None:
        inserted = self._api.send_input(inputs)
        if inserted < len(inputs):
            facts = BlockedInput(
                requested=len(inputs),
                inserted=inserted,
                last_error=self._api.last_error(),
                input_desktop=self._api.input_desktop(),
                foreground_elevated=self._api.foreground_elevated(),
                process_elevated=self._api.process_elevated(),
            )
            raise InputError(explain(facts))
