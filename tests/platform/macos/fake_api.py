"""FakeQuartzApi: a stand-in for the macOS calls, which cannot run on this Linux host.

It implements the real `QuartzApi` interface and records every event posted. Like
the HID system, mouse events move its pointer. Captures come back at each display's
backing resolution with pixels that encode where they are on their display (red:
which display, green/blue: the pixel's column/row on it), so a test can check that a
grab put every pixel where it belongs without trusting the layout code under test.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

from PIL import Image

from holodesk.platform.macos.api import (
    MouseEvent,
    PointRect,
    QuartzApi,
    QuartzDisplay,
    QuartzEvent,
)


def pattern(display_index: int, column: int, row: int) -> tuple[int, int, int]:
    """The colour of a display's backing pixel in a fake capture."""
    return (40 * display_index + 10, column % 251, row % 241)


class FakeQuartzApi(QuartzApi):
    def __init__(
        self,
        displays: Sequence[QuartzDisplay],
        screen_capture: bool = True,
        accessibility: bool = True,
        layout: Mapping[str, tuple[int, int]] | None = None,
        double_click_s: float = 0.5,
        nominal_capture: bool = False,
    ) -> None:
        self._displays = list(displays)
        self._screen_capture = screen_capture
        self._accessibility = accessibility
        self._layout = layout
        self._double_click_s = double_click_s
        self._nominal = nominal_capture  # capture one pixel per point, as mss does by default
        self.events: list[QuartzEvent] = []
        self.location = (10.0, 10.0)
        self.captures: list[PointRect] = []
        self.requests: list[tuple[bool, bool]] = []
        self.closed = False

    def displays(self) -> list[QuartzDisplay]:
        return list(self._displays)

    def post(self, event: QuartzEvent) -> None:
        self.events.append(event)
        if isinstance(event, MouseEvent):
            self.location = (event.x, event.y)

    def cursor_location(self) -> tuple[float, float]:
        return self.location

    def double_click_interval(self) -> float:
        return self._double_click_s

    def screen_capture_allowed(self) -> bool:
        return self._screen_capture

    def accessibility_trusted(self) -> bool:
        return self._accessibility

    def request_access(self, screen_capture: bool, accessibility: bool) -> None:
        self.requests.append((screen_capture, accessibility))

    def capture(self, rect: PointRect) -> Image.Image:
        self.captures.append(rect)
        index, display = next(
            (i, d)
            for i, d in enumerate(self._displays)
            if d.bounds.contains(rect.x, rect.y)
            and rect.right <= d.bounds.right
            and rect.bottom <= d.bounds.bottom
        )
        scale_x = 1.0 if self._nominal else display.pixel_width / display.bounds.width
        scale_y = 1.0 if self._nominal else display.pixel_height / display.bounds.height
        first_column = round((rect.x - display.bounds.x) * scale_x)
        first_row = round((rect.y - display.bounds.y) * scale_y)
        width, height = math.ceil(rect.width * scale_x), math.ceil(rect.height * scale_y)
        red = bytes([pattern(index, 0, 0)[0]]) * (width * height)
        green = bytes(pattern(index, first_column + i, 0)[1] for i in range(width)) * height
        blue = b"".join(bytes([pattern(index, 0, first_row + j)[2]]) * width for j in range(height))
        channels = [Image.frombytes("L", (width, height), data) for data in (red, green, blue)]
        return Image.merge("RGB", channels)

    def keyboard_layout(self) -> Mapping[str, tuple[int, int]] | None:
        return self._layout

    def close(self) -> None:
        self.closed = True
