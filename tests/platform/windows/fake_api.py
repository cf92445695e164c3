"""FakeWinApi: a stand-in for the Windows calls, which cannot run on this Linux host.

It implements the real `WinApi` interface, records every call and every INPUT it is
sent, and answers like Windows would for a configured set of monitors: the virtual
screen is their bounding box, absolute moves move its cursor (decoded the way
Windows is measured to decode them), VkKeyScan answers for a US layout.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from PIL import Image

from holodesk.platform.base import Region
from holodesk.platform.windows import structs as s
from holodesk.platform.windows.api import DpiAwareness, Monitor, WinApi
from holodesk.platform.windows.coords import from_normalized_floor

# VkKeyScanW on a US layout: character -> (virtual key, shift state).
_SHIFTED_DIGITS = ")!@#$%^&*("
_PUNCTUATION = {
    0xBA: (";", ":"),
    0xBB: ("=", "+"),
    0xBC: (",", "<"),
    0xBD: ("-", "_"),
    0xBE: (".", ">"),
    0xBF: ("/", "?"),
    0xC0: ("`", "~"),
    0xDB: ("[", "{"),
    0xDC: ("\\", "|"),
    0xDD: ("]", "}"),
    0xDE: ("'", '"'),
}
US_LAYOUT: dict[str, tuple[int, int]] = {
    **{chr(c): (c - 32, 0) for c in range(ord("a"), ord("z") + 1)},
    **{chr(c): (c, 1) for c in range(ord("A"), ord("Z") + 1)},
    **{str(d): (0x30 + d, 0) for d in range(10)},
    **{_SHIFTED_DIGITS[d]: (0x30 + d, 1) for d in range(10)},
    **{plain: (vk, 0) for vk, (plain, _) in _PUNCTUATION.items()},
    **{shifted: (vk, 1) for vk, (_, shifted) in _PUNCTUATION.items()},
    " ": (0x20, 0),
    # A German-layout AltGr character (Ctrl+Alt+E), to exercise the Unicode fallback.
    "€": (0x45, 0x06),
}
# MapVirtualKey(vk, MAPVK_VK_TO_VSC) for the keys the tests use (set-1 scan codes).
SCAN_CODES: dict[int, int] = {
    0x10: 0x2A,  # shift (left)
    0x11: 0x1D,  # ctrl
    0x12: 0x38,  # alt
    0x5B: 0x5B,  # left Windows
    0x0D: 0x1C,  # enter
    0x09: 0x0F,  # tab
    0x08: 0x0E,  # backspace
    0x1B: 0x01,  # escape
    0x25: 0x4B,  # left
    0x26: 0x48,  # up
    0x27: 0x4D,  # right
    0x28: 0x50,  # down
    0x24: 0x47,  # home
    0x23: 0x4F,  # end
    0x21: 0x49,  # page up
    0x22: 0x51,  # page down
    0x2D: 0x52,  # insert
    0x2E: 0x53,  # delete
    0x41: 0x1E,  # A
    0x43: 0x2E,  # C
    0x56: 0x2F,  # V
    0x70: 0x3B,  # F1
}


@dataclass
class DpiBehaviour:
    """How the DPI calls answer: True set, False refused (already set), None missing."""

    v2: bool | None = True
    v1: bool | None = True
    system: bool | None = True
    initial: DpiAwareness = DpiAwareness.UNAWARE


class FakeWinApi(WinApi):
    def __init__(
        self,
        monitors: Sequence[Monitor],
        dpi: DpiBehaviour | None = None,
        system_dpi: int = 96,
    ) -> None:
        self._monitors = list(monitors)
        self._dpi = dpi or DpiBehaviour()
        self.awareness = self._dpi.initial
        self._system_dpi = system_dpi
        self.calls: list[str] = []
        self.sent: list[s.INPUT] = []
        self.batches: list[int] = []
        self.accept: int | None = None  # events accepted per batch; None: all
        self.error = 0
        self.cursor = (0, 0)
        self.desktop: str | None = "Default"
        self.foreground_is_elevated: bool | None = False
        self.elevated = False
        self.captures: list[Region] = []
        self.closed = False

    # -- DPI --------------------------------------------------------------------------
    def set_dpi_awareness_context_per_monitor_v2(self) -> bool | None:
        self.calls.append("SetProcessDpiAwarenessContext")
        return self._set(self._dpi.v2, DpiAwareness.PER_MONITOR_V2)

    def set_process_dpi_awareness_per_monitor(self) -> bool | None:
        self.calls.append("SetProcessDpiAwareness")
        return self._set(self._dpi.v1, DpiAwareness.PER_MONITOR)

    def set_process_dpi_aware(self) -> bool | None:
        self.calls.append("SetProcessDPIAware")
        return self._set(self._dpi.system, DpiAwareness.SYSTEM)

    def _set(self, outcome: bool | None, level: DpiAwareness) -> bool | None:
        if outcome:
            self.awareness = level
        return outcome

    def dpi_awareness(self) -> DpiAwareness:
        self.calls.append("dpi_awareness")
        return self.awareness

    def system_dpi(self) -> int:
        self.calls.append("system_dpi")
        return self._system_dpi

    # -- geometry -----------------------------------------------------------------------
    def monitors(self) -> list[Monitor]:
        self.calls.append("monitors")
        return list(self._monitors)

    def virtual_screen(self) -> Region:
        self.calls.append("virtual_screen")
        bounds = [m.bounds for m in self._monitors]
        left, top = min(b.x for b in bounds), min(b.y for b in bounds)
        right, bottom = max(b.right for b in bounds), max(b.bottom for b in bounds)
        return Region(left, top, right - left, bottom - top)

    def cursor_position(self) -> tuple[int, int]:
        self.calls.append("cursor_position")
        return self.cursor

    # -- input --------------------------------------------------------------------------
    def send_input(self, events: Sequence[s.INPUT]) -> int:
        self.calls.append("send_input")
        accepted = len(events) if self.accept is None else min(self.accept, len(events))
        self.batches.append(len(events))
        screen = self.virtual_screen()
        for event in events[:accepted]:
            self.sent.append(s.INPUT.from_buffer_copy(event))
            if event.type == s.INPUT_MOUSE and event.mi.dwFlags & s.MOUSEEVENTF_ABSOLUTE:
                self.cursor = (
                    from_normalized_floor(event.mi.dx, screen.x, screen.width),
                    from_normalized_floor(event.mi.dy, screen.y, screen.height),
                )
        return accepted

    def last_error(self) -> int:
        return self.error

    def vk_key_scan(self, char: str) -> tuple[int, int] | None:
        return US_LAYOUT.get(char)

    def scan_code(self, vk: int) -> int:
        return SCAN_CODES.get(vk, 0)

    def input_desktop(self) -> str | None:
        return self.desktop

    def foreground_elevated(self) -> bool | None:
        return self.foreground_is_elevated

    def process_elevated(self) -> bool:
        return self.elevated

    # -- capture --------------------------------------------------------------------------
    def capture(self, region: Region) -> Image.Image:
        self.calls.append("capture")
        self.captures.append(region)
        # A colour that encodes the region, so a test sees which one was captured.
        return Image.new("RGB", (region.width, region.height), (region.x % 256, region.y % 256, 7))

    def close(self) -> None:
        self.closed = True


def describe(event: s.INPUT) -> tuple[object, ...]:
    """A readable form of one INPUT, for assertions."""
    if event.type == s.INPUT_MOUSE:
        return (
            "mouse",
            int(event.mi.dx),
            int(event.mi.dy),
            s.signed_mouse_data(event),
            int(event.mi.dwFlags),
        )
    flags = int(event.ki.dwFlags)
    if flags & s.KEYEVENTF_UNICODE:
        return ("unicode", int(event.ki.wScan), "up" if flags & s.KEYEVENTF_KEYUP else "down")
    return (
        "key",
        int(event.ki.wVk),
        int(event.ki.wScan),
        "up" if flags & s.KEYEVENTF_KEYUP else "down",
        "extended" if flags & s.KEYEVENTF_EXTENDEDKEY else "",
    )
