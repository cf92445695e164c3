"""The Windows calls the `win32` backend makes, as an interface.

`holodesk.platform.windows.user32` implements it with ctypes on Windows; tests
implement it with a recording fake. Each method is one OS call (or a tight group of
them) with no decisions in it: every decision lives in the pure modules beside this
one, where it can be tested on any OS.
"""

from __future__ import annotations

import enum
from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass

from PIL import Image

from holodesk.platform.base import Grab, Region
from holodesk.platform.windows.structs import INPUT

# 96 DPI is 100% scaling: Windows' definition of one logical pixel.
BASE_DPI = 96


class DpiAwareness(enum.IntEnum):
    """How much of the real geometry Windows shows this process, in increasing order."""

    UNAWARE = 0  # everything scaled to 96 DPI: coordinates are not pixels
    SYSTEM = 1  # one DPI (the primary's at logon) for every monitor
    PER_MONITOR = 2  # physical pixels on every monitor (Windows 8.1)
    PER_MONITOR_V2 = 3  # the same, plus correct non-client scaling (Windows 10 1703)


@dataclass(frozen=True)
class Monitor:
    """One monitor as EnumDisplayMonitors / GetMonitorInfoW / GetDpiForMonitor report it."""

    device: str  # MONITORINFOEXW.szDevice, e.g. r"\\.\DISPLAY1": stable while plugged in
    bounds: Region  # rcMonitor: physical pixels of the virtual screen when per-monitor aware
    primary: bool
    dpi: int | None  # effective DPI; None where GetDpiForMonitor is missing (before 8.1)
    name: str = ""  # the monitor's friendly name, when Windows gives one


class WinApi(ABC):
    """One method per Windows call the backend needs."""

    # -- DPI awareness: each returns True (set), False (refused: already set), None (missing)
    @abstractmethod
    def set_dpi_awareness_context_per_monitor_v2(self) -> bool | None:
        """SetProcessDpiAwarenessContext(DPI_AWARENESS_CONTEXT_PER_MONITOR_AWARE_V2 = -4)."""

    @abstractmethod
    def set_process_dpi_awareness_per_monitor(self) -> bool | None:
        """shcore SetProcessDpiAwareness(PROCESS_PER_MONITOR_DPI_AWARE = 2)."""

    @abstractmethod
    def set_process_dpi_aware(self) -> bool | None:
        """SetProcessDPIAware(): system awareness, all Vista and later offer."""

    @abstractmethod
    def dpi_awareness(self) -> DpiAwareness:
        """The awareness this process (its calling thread) has now."""

    @abstractmethod
    def system_dpi(self) -> int:
        """GetDpiForSystem, or the screen DC's LOGPIXELSX where that is missing."""

    # -- geometry --------------------------------------------------------------------
    @abstractmethod
    def monitors(self) -> list[Monitor]:
        """Every monitor (EnumDisplayMonitors), in enumeration order."""

    @abstractmethod
    def virtual_screen(self) -> Region:
        """SM_XVIRTUALSCREEN, SM_YVIRTUALSCREEN, SM_CXVIRTUALSCREEN, SM_CYVIRTUALSCREEN."""

    @abstractmethod
    def cursor_position(self) -> tuple[int, int]:
        """GetCursorPos."""

    # -- input -------------------------------------------------------------------------
    @abstractmethod
    def send_input(self, events: Sequence[INPUT]) -> int:
        """SendInput: the number of events Windows inserted into the input stream."""

    @abstractmethod
    def last_error(self) -> int:
        """GetLastError right after the previous call."""

    @abstractmethod
    def vk_key_scan(self, char: str) -> tuple[int, int] | None:
        """VkKeyScanW: (virtual key, shift-state bits) typing `char`, or None if no key does."""

    @abstractmethod
    def scan_code(self, vk: int) -> int:
        """MapVirtualKeyW(vk, MAPVK_VK_TO_VSC): the key's scan code in the current layout."""

    # -- why input may be refused ----------------------------------------------------
    @abstractmethod
    def input_desktop(self) -> str | None:
        """The name of the desktop receiving input ("Default" normally), or None when this
        process cannot open it (OpenInputDesktop fails on the secure desktop)."""

    @abstractmethod
    def foreground_elevated(self) -> bool | None:
        """Whether the foreground window's process runs elevated; None when unknown."""

    @abstractmethod
    def process_elevated(self) -> bool:
        """Whether this process runs elevated."""

    # -- capture -----------------------------------------------------------------------
    @abstractmethod
    def capture(self, region: Region) -> Image.Image:
        """An RGB image of a region of the virtual screen, one pixel per physical pixel."""

    def capture_since(self, region: Region, previous: Grab | None) -> Grab:
        """`capture`, saying which rows changed since `previous` where the API can."""
        return Grab(region, self.capture(region))

    def close(self) -> None:  # noqa: B027 - optional hook
        """Release what the API holds (capture handles)."""
