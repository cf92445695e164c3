"""An in-memory backend for tests: a picture for a screen, a list for input.

It subclasses the real interface, so composite actions (click counts, drags,
chords, release_all) run the same shared code as on a real OS.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from PIL import Image

from holodesk.platform.base import (
    Backend,
    DisplayInfo,
    InputDriver,
    MouseButton,
    Region,
    ScreenSource,
    check_grab,
)
from holodesk.platform.errors import InputError


@dataclass(frozen=True)
class Move:
    x: int
    y: int


@dataclass(frozen=True)
class Button:
    button: MouseButton
    down: bool


@dataclass(frozen=True)
class Key:
    key: str
    down: bool


@dataclass(frozen=True)
class Scroll:
    dx: int
    dy: int


@dataclass(frozen=True)
class Text:
    text: str


FakeEvent = Move | Button | Key | Scroll | Text

DEFAULT_DISPLAYS = (DisplayInfo("fake-0", Region(0, 0, 1280, 800), primary=True, name="fake"),)


class FakeScreen(ScreenSource):
    """Displays as configured; grab crops a picture of the whole virtual desktop."""

    def __init__(self, displays: Sequence[DisplayInfo], image: Image.Image | None = None) -> None:
        if not displays:
            raise ValueError("a fake screen needs at least one display")
        self._displays = list(displays)
        desktop = self.virtual_desktop()
        if image is None:
            image = _test_pattern(desktop.width, desktop.height)
        if image.size != (desktop.width, desktop.height):
            raise ValueError(
                f"the image is {image.size[0]}x{image.size[1]} but the virtual desktop "
                f"is {desktop.width}x{desktop.height}"
            )
        self.image = image.convert("RGB")
        self.grabs: list[Region] = []

    def displays(self) -> list[DisplayInfo]:
        return sorted(self._displays, key=lambda display: not display.primary)

    def grab(self, region: Region) -> Image.Image:
        desktop = self.virtual_desktop()
        check_grab(region, desktop)
        self.grabs.append(region)
        left, top = region.x - desktop.x, region.y - desktop.y
        return self.image.crop((left, top, left + region.width, top + region.height))


class FakeInput(InputDriver):
    """Records every primitive in `events`; `fail_on` names kinds that raise InputError."""

    def __init__(self, desktop: Region) -> None:
        super().__init__()
        self.events: list[FakeEvent] = []
        self.fail_on: set[type[FakeEvent]] = set()
        self._desktop = desktop
        self._cursor = (desktop.x + desktop.width // 2, desktop.y + desktop.height // 2)

    def _record(self, event: FakeEvent) -> None:
        if type(event) in self.fail_on:
            raise InputError(f"fake failure injected for {event}")
        self.events.append(event)

    def _move(self, x: int, y: int) -> None:
        # As strict as the real backends: a point off the desktop is a caller bug.
        if not self._desktop.contains(x, y):
            raise ValueError(f"point ({x}, {y}) is outside the virtual desktop {self._desktop}")
        self._record(Move(x, y))
        self._cursor = (x, y)

    def _button(self, button: MouseButton, down: bool) -> None:
        self._record(Button(button, down))

    def _key(self, key: str, down: bool) -> None:
        self._record(Key(key, down))

    def _scroll(self, dx: int, dy: int) -> None:
        self._record(Scroll(dx, dy))

    def type_text(self, text: str) -> None:
        # One Text event per action, so the stop signal is checked once, before it.
        self._checkpoint()
        self._record(Text(text))

    def cursor_position(self) -> tuple[int, int]:
        return self._cursor

    def clear(self) -> None:
        """Forget recorded events (held keys and buttons stay held)."""
        self.events.clear()


class FakeBackend(Backend):
    """A Backend whose parts are typed as the fakes, for tests to inspect."""

    screen: FakeScreen
    input: FakeInput


def create(
    displays: Sequence[DisplayInfo] = DEFAULT_DISPLAYS,
    image: Image.Image | None = None,
    os: str = "fake",
) -> FakeBackend:
    """A fake backend; `image` covers the whole virtual desktop (default: a test pattern)."""
    screen = FakeScreen(displays, image)
    return FakeBackend(name="fake", os=os, screen=screen, input=FakeInput(screen.virtual_desktop()))


def _test_pattern(width: int, height: int) -> Image.Image:
    """A picture whose pixels vary in x and y, so a wrong crop shows."""
    red = bytes((x * 7) % 256 for x in range(width)) * height
    green = b"".join(bytes([(y * 13) % 256]) * width for y in range(height))
    diagonal = bytes((i * 3) % 256 for i in range(width + height))
    blue = b"".join(diagonal[y : y + width] for y in range(height))
    channels = [Image.frombytes("L", (width, height), data) for data in (red, green, blue)]
    return Image.merge("RGB", channels)
