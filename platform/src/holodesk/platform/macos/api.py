"""The macOS calls the `quartz` backend makes, as an interface, and the events it posts.

`holodesk.platform.macos.quartz_api` implements it with pyobjc on macOS; tests
implement it with a recording fake. The events are plain values: the pure modules
decide every field (type, location, button, click state, flags, text), and posting
one is a direct translation into CGEventCreate* / CGEventSet* / CGEventPost.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping
from dataclasses import dataclass

from PIL import Image


@dataclass(frozen=True)
class PointRect:
    """A rectangle of Quartz's global display space, in points (y grows downwards)."""

    x: float
    y: float
    width: float
    height: float

    @property
    def right(self) -> float:
        return self.x + self.width

    @property
    def bottom(self) -> float:
        return self.y + self.height

    def contains(self, x: float, y: float) -> bool:
        return self.x <= x < self.right and self.y <= y < self.bottom


@dataclass(frozen=True)
class QuartzDisplay:
    """One active display, as CoreGraphics reports it."""

    display_id: int  # CGDirectDisplayID: stable for a given monitor on a given Mac
    bounds: PointRect  # CGDisplayBounds: origin at the main display's top-left
    pixel_width: int  # the mode's backing pixels (CGDisplayModeGetPixelWidth)
    pixel_height: int
    main: bool  # CGMainDisplayID: the display with the menu bar, at (0, 0)
    name: str = ""


@dataclass(frozen=True)
class MouseEvent:
    """CGEventCreateMouseEvent + the click-state field + flags."""

    type: int  # a cg.*_MOUSE_* event type
    x: float  # global points
    y: float
    button: int  # cg.BUTTON_*
    click_state: int  # kCGMouseEventClickState: 1 single, 2 double, 3 triple (0 for moves)
    flags: int  # held modifiers


@dataclass(frozen=True)
class KeyEvent:
    """CGEventCreateKeyboardEvent + flags (+ CGEventKeyboardSetUnicodeString when text)."""

    keycode: int
    down: bool
    flags: int
    text: str = ""  # at most 20 UTF-16 units: what the event types instead of its key's character


@dataclass(frozen=True)
class ScrollEvent:
    """CGEventCreateScrollWheelEvent2(kCGScrollEventUnitLine, 2 wheels) at a location."""

    x: float
    y: float
    vertical: int  # wheel 1, in lines: positive scrolls up (Quartz's sign)
    horizontal: int  # wheel 2, in lines: positive scrolls left (Quartz's sign)
    flags: int


QuartzEvent = MouseEvent | KeyEvent | ScrollEvent


class QuartzApi(ABC):
    """One method per macOS call (or tight group of calls) the backend needs."""

    @abstractmethod
    def displays(self) -> list[QuartzDisplay]:
        """Active displays (CGGetActiveDisplayList), one per mirror set."""

    @abstractmethod
    def post(self, event: QuartzEvent) -> None:
        """Create the event and post it at the HID tap (CGEventPost(kCGHIDEventTap, ...))."""

    @abstractmethod
    def cursor_location(self) -> tuple[float, float]:
        """The pointer's location in global points (CGEventGetLocation of a new event)."""

    @abstractmethod
    def double_click_interval(self) -> float:
        """Seconds within which presses count as one multi-click (NSEvent.doubleClickInterval)."""

    @abstractmethod
    def screen_capture_allowed(self) -> bool:
        """CGPreflightScreenCaptureAccess(): Screen Recording permission."""

    @abstractmethod
    def accessibility_trusted(self) -> bool:
        """AXIsProcessTrusted(): Accessibility permission, which posting events needs."""

    @abstractmethod
    def request_access(self, screen_capture: bool, accessibility: bool) -> None:
        """Show the system's permission prompts (and list this app in System Settings)."""

    @abstractmethod
    def capture(self, rect: PointRect) -> Image.Image:
        """An RGB image of a rectangle of points, at the displays' full (backing) resolution."""

    @abstractmethod
    def keyboard_layout(self) -> Mapping[str, tuple[int, int]] | None:
        """character -> (keycode, flags needed) for the current keyboard layout, or None
        when it cannot be read (the backend then assumes the US layout)."""

    def close(self) -> None:  # noqa: B027 - optional hook
        """Release what the API holds."""
