"""The platform interface: what every OS backend provides.

Coordinates here are always physical pixels of the virtual desktop (the union of
all displays, negative origins allowed). Backends whose OS speaks in logical points
(macOS) or needs per-monitor DPI handling (Windows) convert inside the backend, so
nothing above this layer ever sees an OS-specific unit.

This module never imports a backend; `holodesk.platform.select` chooses one.
"""

from __future__ import annotations

import contextlib
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import TypeVar

from PIL import Image

from holodesk.platform.errors import InputError, InputInterruptedError
from holodesk.platform.interrupt import NEVER, StopSignal
from holodesk.platform.keys import normalize_key

# The contract's mouse buttons, defined once in holodesk.values (the daemon's dialects
# name the same ones); named here with the input driver that presses them.
from holodesk.values.actions import MouseButton as MouseButton
from holodesk.values.keys import MODIFIERS

T = TypeVar("T")


@dataclass(frozen=True)
class Region:
    """A rectangle of the virtual desktop, in physical pixels."""

    x: int
    y: int
    width: int
    height: int

    def __post_init__(self) -> None:
        if self.width < 0 or self.height < 0:
            raise ValueError(f"a region cannot have a negative size: {self}")

    @property
    def right(self) -> int:
        """One past the last column."""
        return self.x + self.width

    @property
    def bottom(self) -> int:
        """One past the last row."""
        return self.y + self.height

    def contains(self, x: float, y: float) -> bool:
        return self.x <= x < self.right and self.y <= y < self.bottom

    def contains_region(self, other: Region) -> bool:
        """True when `other` lies entirely inside this region."""
        return (
            self.x <= other.x
            and self.y <= other.y
            and other.right <= self.right
            and other.bottom <= self.bottom
        )


@dataclass(frozen=True)
class DisplayInfo:
    """One physical display."""

    display_id: str
    bounds: Region
    scale_factor: float = 1.0
    primary: bool = False
    name: str = ""


MODIFIER_KEYS = MODIFIERS
BUTTONS_PER_CLICK = range(1, 4)
# Wheel notches sent between two checks of the stop signal (a scroll may ask for millions).
SCROLL_CHUNK_NOTCHES = 10


RowBands = tuple[tuple[int, int], ...]


def check_grab(region: Region, bounds: Region) -> None:
    """ValueError unless `region` is non-empty and inside `bounds` (what a source
    can capture)."""
    if region.width == 0 or region.height == 0 or not bounds.contains_region(region):
        raise ValueError(f"cannot grab {region}: it must be non-empty and inside {bounds}")


@dataclass(frozen=True)
class Grab:
    """A capture of a region, and what changed since the capture it was compared with.

    `image` is shared, not copied, when nothing changed: treat it as read-only.
    """

    region: Region
    image: Image.Image
    # Bands of rows [top, bottom) of `image`, in order and apart, outside which it
    # equals the previous grab's image; (): nothing changed; None: not known
    # (compare the images).
    changed_rows: RowBands | None = None
    # The source's own record of this capture, for the next comparison.
    token: object = field(default=None, repr=False, compare=False)


class ScreenSource(ABC):
    """Reads the screen."""

    @abstractmethod
    def displays(self) -> list[DisplayInfo]:
        """Every display, primary first."""

    @abstractmethod
    def grab(self, region: Region) -> Image.Image:
        """An RGB image of the region, one image pixel per physical pixel."""

    def grab_since(self, region: Region, previous: Grab | None = None) -> Grab:
        """`grab`, also saying which rows changed since `previous` (a Grab of this
        source) where the source can tell cheaply; by default it cannot."""
        return Grab(region, self.grab(region))

    def virtual_desktop(self) -> Region:
        """The bounding box of all displays."""
        bounds = [d.bounds for d in self.displays()]
        left = min(b.x for b in bounds)
        top = min(b.y for b in bounds)
        right = max(b.x + b.width for b in bounds)
        bottom = max(b.y + b.height for b in bounds)
        return Region(left, top, right - left, bottom - top)

    @property
    def capture_note(self) -> str:
        """How captures are made here when it is not the usual way, and why (say, a
        fallback that a server's quirk forced); "" when nothing is worth saying."""
        return ""

    def close(self) -> None:  # noqa: B027 - optional hook, most sources hold nothing
        """Release OS resources."""


class InputDriver(ABC):
    """Injects pointer and keyboard input.

    Backends implement the primitives; composite actions (click counts, drags,
    chords) are built here once, so every backend behaves the same. The driver
    tracks what it holds down so `release_all` can always undo it: a stop,
    error or disconnect must never leave a key or button stuck.

    Key names are normalised here (`holodesk.platform.keys`), so `_key` only
    ever sees canonical names and aliases such as "Control" release the same
    key as "ctrl".

    Every action is interruptible: inside `stoppable(signal)`, each press, move
    and bounded piece of text or scrolling first checks the signal, and waits
    sleep on it, so once it is set the action raises InputInterruptedError before its
    next event. Releases never check it: a stop must still let go of what is held.
    """

    def __init__(self) -> None:
        self._held_keys: list[str] = []
        self._held_buttons: list[MouseButton] = []
        self._stop: StopSignal = NEVER

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

    # -- stopping ---------------------------------------------------------------------
    @contextlib.contextmanager
    def stoppable(self, signal: StopSignal) -> Iterator[None]:
        """Run the body's input so that setting `signal` (from any thread) stops it
        before its next event, with InputInterruptedError."""
        previous, self._stop = self._stop, signal
        try:
            yield
        finally:
            self._stop = previous

    def _checkpoint(self) -> None:
        """Raise InputInterruptedError if the stop signal is set: called before new input."""
        if self._stop.is_set():
            raise InputInterruptedError("input stopped: the action was interrupted")

    def _pause(self, seconds: float) -> None:
        """Sleep, unless the stop signal comes first (then InputInterruptedError)."""
        if seconds > 0 and self._stop.wait(seconds):
            raise InputInterruptedError("input stopped: the action was interrupted")
        self._checkpoint()

    def _checked(self, pieces: Iterable[T]) -> Iterator[T]:
        """The pieces of one action (text chunks, event batches), checking the stop
        signal before each: a backend sends input in `for piece in self._checked(...)`."""
        for piece in pieces:
            self._checkpoint()
            yield piece

    # -- composite actions, shared ------------------------------------------------
    def move(self, x: int, y: int) -> None:
        self._checkpoint()
        self._move(x, y)
        self._sync()

    def key_down(self, key: str) -> None:
        key = normalize_key(key)
        self._checkpoint()
        self._key(key, True)
        # A second key_down is an auto-repeat, not a second key to release.
        if key not in self._held_keys:
            self._held_keys.append(key)
        self._sync()

    def key_up(self, key: str) -> None:
        key = normalize_key(key)
        self._key(key, False)
        if key in self._held_keys:
            self._held_keys.remove(key)
        self._sync()

    def mouse_down(self, button: MouseButton) -> None:
        self._checkpoint()
        self._button(button, True)
        if button not in self._held_buttons:
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
        if count not in BUTTONS_PER_CLICK:
            raise ValueError(f"click count must be 1, 2 or 3, not {count}")
        keys = [normalize_key(key) for key in modifiers]
        self.move(x, y)
        with self._holding(keys), self._click_series():
            for _ in range(count):
                self.mouse_down(button)
                self.mouse_up(button)

    def drag(
        self,
        path: Sequence[tuple[int, int]],
        button: MouseButton = MouseButton.LEFT,
        modifiers: Sequence[str] = (),
        duration_s: float = 0.3,
    ) -> None:
        if len(path) < 2:
            raise ValueError("a drag needs at least two points")
        if duration_s < 0:
            raise ValueError(f"a drag cannot take negative time: {duration_s}")
        keys = [normalize_key(key) for key in modifiers]
        self.move(*path[0])
        with self._holding(keys):
            self.mouse_down(button)
            try:
                pause = duration_s / (len(path) - 1)
                for x, y in path[1:]:
                    self._pause(pause)
                    self.move(x, y)
            finally:
                # Released even when a move fails: a stuck button drags forever.
                self.mouse_up(button)

    def scroll(self, x: int, y: int, dx: int, dy: int) -> None:
        self.move(x, y)
        for part_x, part_y in self._checked(_scroll_parts(dx, dy)):
            self._scroll(part_x, part_y)
            self._sync()

    def key_chord(self, keys: Sequence[str]) -> None:
        if not keys:
            raise ValueError("a key chord needs at least one key")
        with self._holding([normalize_key(key) for key in keys]):
            pass

    def _click_series(self) -> contextlib.AbstractContextManager[None]:
        """Held around the presses of one click(count=n). Backends that count clicks
        themselves (holodesk.platform.clicks) make those presses one series here."""
        return contextlib.nullcontext()

    @contextlib.contextmanager
    def _holding(self, keys: Sequence[str]) -> Iterator[None]:
        """Press keys in order, run the body, release them in reverse order."""
        pressed: list[str] = []
        try:
            for key in keys:
                self.key_down(key)
                pressed.append(key)
            yield
        finally:
            for key in reversed(pressed):
                self.key_up(key)

    def release_all(self) -> None:
        """Release every key and button this driver holds down.

        Tries every release even when one fails, then reports the first failure.
        """
        failures: list[Exception] = []
        for button in reversed(self._held_buttons):
            try:
                self._button(button, False)
            except Exception as error:  # keep releasing the rest
                failures.append(error)
        for key in reversed(self._held_keys):
            try:
                self._key(key, False)
            except Exception as error:
                failures.append(error)
        self._held_buttons.clear()
        self._held_keys.clear()
        try:
            self._sync()
        except Exception as error:
            failures.append(error)
        if failures:
            raise InputError(f"releasing held input failed: {failures[0]}") from failures[0]

    def held(self) -> tuple[tuple[str, ...], tuple[MouseButton, ...]]:
        """Keys and buttons currently held down by this driver."""
        return tuple(self._held_keys), tuple(self._held_buttons)

    def close(self) -> None:
        self.release_all()


def _scroll_parts(dx: int, dy: int) -> Iterator[tuple[int, int]]:
    """(dx, dy) as parts of at most SCROLL_CHUNK_NOTCHES notches per axis, both axes
    together while both have some left (a small scroll is one part, as asked; a scroll
    of nothing is still one, as it always was)."""
    if not dx and not dy:
        yield 0, 0
    while dx or dy:
        part_x = max(-SCROLL_CHUNK_NOTCHES, min(SCROLL_CHUNK_NOTCHES, dx))
        part_y = max(-SCROLL_CHUNK_NOTCHES, min(SCROLL_CHUNK_NOTCHES, dy))
        yield part_x, part_y
        dx -= part_x
        dy -= part_y


class Navigator(ABC):
    """Optional capability: load a URL directly, without a browser's address bar.

    Only targets that are a browser page (the web backend) have one; on a desktop
    the client types the URL into the focused browser instead.
    """

    @abstractmethod
    def navigate(self, url: str) -> None:
        """Load `url` and return once the page has loaded; NavigationError if it cannot."""

    @abstractmethod
    def current_url(self) -> str:
        """The URL of the page shown now."""


@dataclass
class Backend:
    """A screen source and an input driver for one target."""

    name: str
    os: str
    screen: ScreenSource
    input: InputDriver
    # Present only where the target can load a URL itself (a web page).
    navigator: Navigator | None = None
    # Whether cursor_position() reports a pointer a person can move too. The client's
    # fail-safe corner watches it; a web page's or a VNC session's pointer is only
    # what the client itself last sent, so there is nothing to watch.
    observes_user_pointer: bool = True
    # Re-checks the OS permissions this target needs, as (problem, fix) pairs, empty when
    # all are granted; None where the OS asks for none (`holodesk doctor` reports it).
    permission_check: Callable[[], list[tuple[str, str]]] | None = None
    # What an all-black capture most likely means on this target, and how to fix it.
    blank_capture_fix: str = (
        "wake the display and unlock the session; if it stays black, the capture is "
        "refused: check the OS's screen-capture permission for this program"
    )

    @property
    def primary_modifier(self) -> str:
        """The modifier of the target's everyday shortcuts (copy, the address bar):
        Command ("meta") on macOS, Ctrl elsewhere. The platform layer knows the OS so
        that callers never have to."""
        return "meta" if self.os == "darwin" else "ctrl"

    def close(self) -> None:
        try:
            self.input.close()
        finally:
            self.screen.close()
