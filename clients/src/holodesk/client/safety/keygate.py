"""The chord denylist, applied to the key events that really reach the desktop.

A denylist that looks at actions misses the chords they make together: key_down
ctrl, key_down alt, then a navigate (which presses ctrl+L itself) is ctrl+alt+l at
the OS. So the executor sends all its input through a KeyGate wrapped around the
backend's driver: each call that presses keys is judged, before any of its events
is sent, against what the driver holds down at that very moment, and refused
whole with ChordDeniedError. Navigate's shortcut, the Enter after a URL, a line
break in typed text and a click's modifiers all pass through here like any key.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterable, Iterator, Sequence
from typing import TYPE_CHECKING, Any

from holodesk.client.executor import RefusedError
from holodesk.client.safety.chords import Chord, describe, key_of
from holodesk.platform.base import InputDriver, MouseButton
from holodesk.platform.errors import UnknownKeyError

if TYPE_CHECKING:
    from holodesk.platform.interrupt import StopSignal


class ChordDeniedError(RefusedError):
    """Sending this call's input would complete a denied chord; none of it was sent
    (the executor reports the action REJECTED)."""

    def __init__(self, chord: Chord) -> None:
        super().__init__(f"the key chord {describe(chord)} is denied on this client")
        self.chord = chord


class KeyGate(InputDriver):
    """An input driver that judges every key press, then passes the call on.

    Every public method of InputDriver is forwarded to the wrapped driver (a test
    checks that none is missed), so the backend's own composites, held-state
    tracking and release_all stay the only ones; attributes a backend adds beyond
    the interface are forwarded too.
    """

    def __init__(self, driver: InputDriver, chords: Sequence[Chord]) -> None:
        super().__init__()
        self._driver = driver
        self._chords = tuple(chords)

    @property
    def driver(self) -> InputDriver:
        """The backend's driver this gate sends through."""
        return self._driver

    # -- what presses keys: judged first ------------------------------------------
    def key_down(self, key: str) -> None:
        self._judge_sequence([key])
        self._driver.key_down(key)

    def key_chord(self, keys: Sequence[str]) -> None:
        self._judge_sequence(keys)
        self._driver.key_chord(keys)

    def click(
        self,
        x: int,
        y: int,
        button: MouseButton = MouseButton.LEFT,
        count: int = 1,
        modifiers: Sequence[str] = (),
    ) -> None:
        self._judge_sequence(modifiers)
        self._driver.click(x, y, button, count, modifiers)

    def drag(
        self,
        path: Sequence[tuple[int, int]],
        button: MouseButton = MouseButton.LEFT,
        modifiers: Sequence[str] = (),
        duration_s: float = 0.3,
    ) -> None:
        self._judge_sequence(modifiers)
        self._driver.drag(path, button, modifiers, duration_s)

    def type_text(self, text: str) -> None:
        # Held keys stay down for the whole text, so each distinct character is one
        # press against the same held set; a line break or a DEL is its key (Enter,
        # Delete), as every backend types it.
        held = self._held_keys_now()
        for character in set(text):
            self._judge(held, _typed_keys(character))
        self._driver.type_text(text)

    # -- everything else: passed on as it is ---------------------------------------
    def move(self, x: int, y: int) -> None:
        self._driver.move(x, y)

    def key_up(self, key: str) -> None:
        self._driver.key_up(key)

    def mouse_down(self, button: MouseButton) -> None:
        self._driver.mouse_down(button)

    def mouse_up(self, button: MouseButton) -> None:
        self._driver.mouse_up(button)

    def scroll(self, x: int, y: int, dx: int, dy: int) -> None:
        self._driver.scroll(x, y, dx, dy)

    @contextlib.contextmanager
    def stoppable(self, signal: StopSignal) -> Iterator[None]:
        # The backend's driver checks the signal between its events.
        with self._driver.stoppable(signal):
            yield

    def cursor_position(self) -> tuple[int, int]:
        return self._driver.cursor_position()

    def release_all(self) -> None:
        self._driver.release_all()

    def held(self) -> tuple[tuple[str, ...], tuple[MouseButton, ...]]:
        return self._driver.held()

    def close(self) -> None:
        self._driver.close()

    def __getattr__(self, name: str) -> Any:
        # Only reached for names the interface does not define (a backend's extras).
        return getattr(self._driver, name)

    # The primitives are never reached: every composite above goes to the driver.
    def _move(self, x: int, y: int) -> None:
        raise AssertionError("KeyGate forwards move()")

    def _button(self, button: MouseButton, down: bool) -> None:
        raise AssertionError("KeyGate forwards button presses")

    def _key(self, key: str, down: bool) -> None:
        raise AssertionError("KeyGate forwards key presses")

    def _scroll(self, dx: int, dy: int) -> None:
        raise AssertionError("KeyGate forwards scroll()")

    # -- the judgement ---------------------------------------------------------------
    def _held_keys_now(self) -> set[str]:
        return {key for key in map(_safe_key, self._driver.held()[0]) if key}

    def _judge_sequence(self, keys: Iterable[str]) -> None:
        """Keys pressed in order, each while the ones before it stay down."""
        held = self._held_keys_now()
        for name in keys:
            key = _safe_key(name)
            if key:
                self._judge(held, {key})
                held.add(key)

    def _judge(self, held: set[str], pressed: set[str]) -> None:
        """ChordDeniedError when pressing `pressed` with `held` down completes a chord.

        A chord counts when this press adds one of its keys and all of them are then
        down: a superset counts too (ctrl+alt+shift+delete is ctrl+alt+delete).
        """
        if not pressed:
            return
        down = held | pressed
        for chord in self._chords:
            if chord & pressed and chord <= down:
                raise ChordDeniedError(chord)


def _typed_keys(character: str) -> set[str]:
    """The keys typing one character presses: its key, and shift for a capital letter
    (the X11 backend presses shift for it; elsewhere it is a superset at worst)."""
    key = _safe_key(character)
    if not key:
        return set()
    if character != character.lower() and character.lower() == key:
        return {key, "shift"}
    return {key}


def _safe_key(name: str) -> str:
    # An unknown key fails in the backend, which sends nothing for it; here it
    # matches no chord.
    try:
        return key_of(name)
    except UnknownKeyError:
        return ""
