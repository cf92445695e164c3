"""The platform interface: what every OS backend provides.

Coordinates here are always physical pixels of the virtual desktop (the union of
all displays, negative origins allowed). Backends whose OS speaks in logical points
(macOS) or needs per-monitor DPI handling (Windows) convert inside the backend, so
nothing above this layer ever sees an OS-specific unit.

This module never imports a backend; `holodesk.platform.select` chooses one.
"""

from __future__ import annotations

import enum
import time
from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass

from PIL import Image


@dataclass(frozen=True)
class Region:
    """A rectangle of the virtual desktop, in physical pixels."""

    x: int
    y: int
    width: int
    height: int

    def contains(self, x: float, y: float) -> bool:
        return self.x <= x < self.x + self.width and self.y <= y < self.y + self.height


@dataclass(frozen=True)
class DisplayInfo:
    """One physical display."""

    display_id: str
    bounds: Region
    scale_factor: float = 1.0
    primary: bool = False
    name: str = ""


class MouseButton(enum.Enum):
    LEFT = "left"
    RIGHT = "right"
    MIDDLE = "middle"


MODIFIER_KEYS = ("ctrl", "shift", "alt", "meta")


class ScreenSource(ABC):
    """Reads the screen."""

    @abstractmethod
    def displays(self) -> list[DisplayInfo]:
        """Every display, primary first."""

    @abstractmethod
    def grab(self, region: Region) -> Image.Image:
        """An RGB image of the region, one image pixel per physical pixel."""

    def virtual_desktop(self) -> Region:
        """The bounding box of all displays."""
        bounds = [d.bounds for d in self.displays()]
        left = min(b.x for b in bounds)
        top = min(b.y for b in bounds)
        right = max(b.x + b.width for b in bounds)
        bottom = max(b.y + b.height for b in bounds)
        return Region(left, top, right - left, bottom - top)

    def close(self) -> None:  # noqa: B027 - optional hook, most sources hold nothing
        """Release OS resources."""


class InputDriver(ABC):
    """Injects pointer and keyboard input.

    Backends implement the primitives; composite actions (click counts, drags,
    chords) are built here once, so every backend behaves the same. The driver
    tracks what it holds down so `release_all` can always undo it: a stop,
    error or disconnect must never leave a key or button stuck.
    """

    def __init__(self) -> None:
        self._held_keys: list[str] = []
        self._held_buttons: list[MouseButton] = []

    # -- primitives, one per OS -------------------------------------------------
    @abstractmethod
    def _move(self, x: int, y: int) -> None: ...

    @abstractmethod
    def _button(self, button: MouseButton, down: bool) -> None: ...

    @abstractmethod
    def _key(self, key: str, down: bool) -> None:
        """Press or release one key named in the contract's vocabulary."""

    @abstractmethod
    def _scroll(self, dx: int, dy: int) -> None:
        """Wheel notches at the current pointer position; dy > 0 scrolls down."""

    @abstractmethod
    def type_text(self, text: str) -> None:
        """Type any Unicode text, whatever the keyboard layout."""

    @abstractmethod
    def cursor_position(self) -> tuple[int, int]: ...

    def _sync(self) -> None:  # noqa: B027 - optional hook
        """Flush queued events to the OS (X11 batches requests)."""

    # -- composite actions, shared ------------------------------------------------
    def move(self, x: int, y: int) -> None:
        self._move(x, y)
        self._sync()

    def key_down(self, key: str) -> None:
        self._key(key, True)
        self._held_keys.append(key)
        self._sync()

    def key_up(self, key: str) -> None:
        self._key(key, False)
        if key in self._held_keys:
            self._held_keys.remove(key)
        self._sync()

    def mouse_down(self, button: MouseButton) -> None:
        self._button(button, True)
        self._held_buttons.append(button)
        self._sync()

    def mouse_up(self, button: MouseButton) -> None:
        self._button(button, False)
        if button in self._held_buttons:
            self._held_buttons.remove(button)
        self._sync()

    def click(
        self,
        x: int,
        y: int,
        button: MouseButton = MouseButton.LEFT,
        count: int = 1,
        modifiers: Sequence[str] = (),
    ) -> None:
        self.move(x, y)
        for key in modifiers:
            self.key_down(key)
        try:
            for _ in range(count):
                self.mouse_down(button)
                self.mouse_up(button)
        finally:
            for key in reversed(modifiers):
                self.key_up(key)

    def drag(
        self,
        path: Sequence[tuple[int, int]],
        button: MouseButton = MouseButton.LEFT,
        modifiers: Sequence[str] = (),
        duration_s: float = 0.3,
    ) -> None:
        if len(path) < 2:
            raise ValueError("a drag needs at least two points")
        self.move(*path[0])
        for key in modifiers:
            self.key_down(key)
        try:
            self.mouse_down(button)
            pause = duration_s / (len(path) - 1)
            for x, y in path[1:]:
                time.sleep(pause)
                self.move(x, y)
            self.mouse_up(button)
        finally:
            for key in reversed(modifiers):
                self.key_up(key)

    def scroll(self, x: int, y: int, dx: int, dy: int) -> None:
        self.move(x, y)
        self._scroll(dx, dy)
        self._sync()

    def key_chord(self, keys: Sequence[str]) -> None:
        pressed: list[str] = []
        try:
            for key in keys:
                self.key_down(key)
                pressed.append(key)
        finally:
            for key in reversed(pressed):
                self.key_up(key)

    def release_all(self) -> None:
        """Release every key and button this driver holds down."""
        for button in reversed(self._held_buttons):
            self._button(button, False)
        for key in reversed(self._held_keys):
            self._key(key, False)
        self._held_buttons.clear()
        self._held_keys.clear()
        self._sync()

    def held(self) -> tuple[tuple[str, ...], tuple[MouseButton, ...]]:
        """Keys and buttons currently held down by this driver."""
        return tuple(self._held_keys), tuple(self._held_buttons)

    def close(self) -> None:
        self.release_all()


@dataclass
class Backend:
    """A screen source and an input driver for one target."""

    name: str
    os: str
    screen: ScreenSource
    input: InputDriver

    def close(self) -> None:
        try:
            self.input.close()
        finally:
            self.screen.close()
