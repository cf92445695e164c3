"""`WinApi` on a real Windows, through ctypes (no pywin32): the only module here that
calls the OS. Imported by `windows.backend` on Windows only.

NOT RUN in this project's CI (Linux): it is type-checked and linted there, and every
decision it feeds is tested against a fake, but the calls themselves have yet to run
on a real Windows machine. Every function gets explicit argtypes/restype: the ctypes
default (C int) would truncate 64-bit handles.
"""

from __future__ import annotations

import ctypes
import sys
from collections.abc import Sequence
from ctypes import wintypes
from typing import Any

from PIL import Image

from holodesk.platform.base import Grab, Region
from holodesk.platform.errors import CaptureError, InputError
from holodesk.platform.mss_grabber import MssGrabber
from holodesk.platform.windows.api import DpiAwareness, Monitor, WinApi
from holodesk.platform.windows.structs import INPUT

DPI_AWARENESS_CONTEXT_PER_MONITOR_AWARE_V2 = -4
PROCESS_PER_MONITOR_DPI_AWARE = 2
MDT_EFFECTIVE_DPI = 0
MONITORINFOF_PRIMARY = 0x1
MAPVK_VK_TO_VSC = 0
LOGPIXELSX = 88
SM_XVIRTUALSCREEN, SM_YVIRTUALSCREEN, SM_CXVIRTUALSCREEN, SM_CYVIRTUALSCREEN = 76, 77, 78, 79
DESKTOP_READOBJECTS = 0x0001
UOI_NAME = 2
PROCESS_QUERY_LIMITED_INFORMATION = 0x1000
TOKEN_QUERY = 0x0008
TOKEN_ELEVATION_CLASS = 20  # TOKEN_INFORMATION_CLASS.TokenElevation
ERROR_ACCESS_DENIED = 5
S_OK = 0


class MONITORINFOEXW(ctypes.Structure):
    _fields_ = (
        ("cbSize", wintypes.DWORD),
        ("rcMonitor", wintypes.RECT),
        ("rcWork", wintypes.RECT),
        ("dwFlags", wintypes.DWORD),
        ("szDevice", wintypes.WCHAR * 32),
    )


class DISPLAY_DEVICEW(ctypes.Structure):  # noqa: N801 - the Windows name
    _fields_ = (
        ("cb", wintypes.DWORD),
        ("DeviceName", wintypes.WCHAR * 32),
        ("DeviceString", wintypes.WCHAR * 128),
        ("StateFlags", wintypes.DWORD),
        ("DeviceID", wintypes.WCHAR * 128),
        ("DeviceKey", wintypes.WCHAR * 128),
    )


def _dll(name: str) -> Any:
    if sys.platform == "win32":
        return ctypes.WinDLL(name, use_last_error=True)
    raise OSError(f"{name}.dll exists on Windows only")


def _winfunctype(restype: Any, *argtypes: Any) -> Any:
    if sys.platform == "win32":
        return ctypes.WINFUNCTYPE(restype, *argtypes)
    raise OSError("WINFUNCTYPE exists on Windows only")


def _get_last_error() -> int:
    if sys.platform == "win32":
        return ctypes.get_last_error()
    return 0


def _function(dll: Any, name: str, restype: Any, *argtypes: Any) -> Any:
    """A DLL export with its signature, or None when this Windows lacks it."""
    try:
        function = getattr(dll, name)
    except AttributeError:
        return None
    function.restype = restype
    function.argtypes = argtypes
    return function


class User32Api(WinApi):
    """The Windows calls, bound once with their signatures."""

    def __init__(self) -> None:
        # Raises OSError off Windows (windows.backend checks the OS before coming here).
        user32, gdi32, kernel32, advapi32 = (
            _dll(name) for name in ("user32", "gdi32", "kernel32", "advapi32")
        )
        try:
            shcore: Any = _dll("shcore")  # Windows 8.1 and later
        except OSError:
            shcore = None
        handle, boolean, dword, uint = (
            wintypes.HANDLE,
            wintypes.BOOL,
            wintypes.DWORD,
            wintypes.UINT,
        )
        f = _function
        self._set_context = f(user32, "SetProcessDpiAwarenessContext", boolean, ctypes.c_ssize_t)
        self._get_thread_context = f(user32, "GetThreadDpiAwarenessContext", ctypes.c_ssize_t)
        self._contexts_equal = f(
            user32, "AreDpiAwarenessContextsEqual", boolean, ctypes.c_ssize_t, ctypes.c_ssize_t
        )
        self._awareness_of_context = f(
            user32, "GetAwarenessFromDpiAwarenessContext", ctypes.c_int, ctypes.c_ssize_t
        )
        self._set_dpi_aware = f(user32, "SetProcessDPIAware", boolean)
        self._is_dpi_aware = f(user32, "IsProcessDPIAware", boolean)
        self._get_dpi_for_system = f(user32, "GetDpiForSystem", uint)
        self._set_awareness = (
            f(shcore, "SetProcessDpiAwareness", ctypes.c_long, ctypes.c_int) if shcore else None
        )
        self._get_awareness = (
            f(shcore, "GetProcessDpiAwareness", ctypes.c_long, handle, ctypes.POINTER(ctypes.c_int))
            if shcore
            else None
        )
        self._get_dpi_for_monitor = (
            f(
                shcore,
                "GetDpiForMonitor",
                ctypes.c_long,
                handle,
                ctypes.c_int,
                ctypes.POINTER(uint),
                ctypes.POINTER(uint),
            )
            if shcore
            else None
        )
        self._monitor_enum_proc = _winfunctype(
            boolean, handle, handle, ctypes.POINTER(wintypes.RECT), wintypes.LPARAM
        )
        self._enum_monitors = f(
            user32,
            "EnumDisplayMonitors",
            boolean,
            handle,
            ctypes.POINTER(wintypes.RECT),
            self._monitor_enum_proc,
            wintypes.LPARAM,
        )
        self._monitor_info = f(
            user32, "GetMonitorInfoW", boolean, handle, ctypes.POINTER(MONITORINFOEXW)
        )
        self._enum_devices = f(
            user32,
            "EnumDisplayDevicesW",
            boolean,
            wintypes.LPCWSTR,
            dword,
            ctypes.POINTER(DISPLAY_DEVICEW),
            dword,
        )
        self._metrics = f(user32, "GetSystemMetrics", ctypes.c_int, ctypes.c_int)
        self._cursor = f(user32, "GetCursorPos", boolean, ctypes.POINTER(wintypes.POINT))
        self._send_input = f(user32, "SendInput", uint, uint, ctypes.POINTER(INPUT), ctypes.c_int)
        self._foreground = f(user32, "GetForegroundWindow", wintypes.HWND)
        self._window_thread = f(
            user32, "GetWindowThreadProcessId", dword, wintypes.HWND, ctypes.POINTER(dword)
        )
        self._layout = f(user32, "GetKeyboardLayout", handle, dword)
        self._vk_key_scan = f(user32, "VkKeyScanExW", ctypes.c_short, wintypes.WCHAR, handle)
        self._map_key = f(user32, "MapVirtualKeyExW", uint, uint, uint, handle)
        self._open_input_desktop = f(user32, "OpenInputDesktop", handle, dword, boolean, dword)
        self._object_info = f(
            user32,
            "GetUserObjectInformationW",
            boolean,
            handle,
            ctypes.c_int,
            ctypes.c_void_p,
            dword,
            ctypes.POINTER(dword),
        )
        self._close_desktop = f(user32, "CloseDesktop", boolean, handle)
        self._get_dc = f(user32, "GetDC", handle, wintypes.HWND)
        self._release_dc = f(user32, "ReleaseDC", ctypes.c_int, wintypes.HWND, handle)
        self._device_caps = f(gdi32, "GetDeviceCaps", ctypes.c_int, handle, ctypes.c_int)
        self._open_process = f(kernel32, "OpenProcess", handle, dword, boolean, dword)
        self._current_process = f(kernel32, "GetCurrentProcess", handle)
        self._close_handle = f(kernel32, "CloseHandle", boolean, handle)
        self._open_token = f(
            advapi32, "OpenProcessToken", boolean, handle, dword, ctypes.POINTER(handle)
        )
        self._token_info = f(
            advapi32,
            "GetTokenInformation",
            boolean,
            handle,
            ctypes.c_int,
            ctypes.c_void_p,
            dword,
            ctypes.POINTER(dword),
        )
        self._last_error = 0
        # Opened on first capture: after our per-monitor v2 awareness, mss's own
        # awareness call then fails harmlessly.
        self._grabber = MssGrabber()

    # -- DPI awareness ---------------------------------------------------------------------
    def set_dpi_awareness_context_per_monitor_v2(self) -> bool | None:
        if self._set_context is None:
            return None
        return bool(self._set_context(DPI_AWARENESS_CONTEXT_PER_MONITOR_AWARE_V2))

    def set_process_dpi_awareness_per_monitor(self) -> bool | None:
        if self._set_awareness is None:
            return None
        return int(self._set_awareness(PROCESS_PER_MONITOR_DPI_AWARE)) == S_OK

    def set_process_dpi_aware(self) -> bool | None:
        if self._set_dpi_aware is None:
            return None
        return bool(self._set_dpi_aware())

    def dpi_awareness(self) -> DpiAwareness:
        if self._get_thread_context is not None and self._awareness_of_context is not None:
            context = self._get_thread_context()
            if self._contexts_equal is not None and self._contexts_equal(
                context, DPI_AWARENESS_CONTEXT_PER_MONITOR_AWARE_V2
            ):
                return DpiAwareness.PER_MONITOR_V2
            level = int(self._awareness_of_context(context))
            return DpiAwareness(level) if 0 <= level <= 2 else DpiAwareness.UNAWARE
        if self._get_awareness is not None:
            value = ctypes.c_int(0)
            if (
                int(self._get_awareness(None, ctypes.byref(value))) == S_OK
                and 0 <= value.value <= 2
            ):
                return DpiAwareness(value.value)
        if self._is_dpi_aware is not None and self._is_dpi_aware():
            return DpiAwareness.SYSTEM
        return DpiAwareness.UNAWARE

    def system_dpi(self) -> int:
        if self._get_dpi_for_system is not None:
            return int(self._get_dpi_for_system())
        dc = self._get_dc(None)
        try:
            return int(self._device_caps(dc, LOGPIXELSX))
        finally:
            self._release_dc(None, dc)

    # -- geometry --------------------------------------------------------------------------
    def monitors(self) -> list[Monitor]:
        found: list[Monitor] = []
        failures: list[Exception] = []

        def visit(monitor: Any, _dc: Any, _rect: Any, _data: Any) -> bool:
            # An exception must not cross back into Windows: keep it, stop enumerating.
            try:
                found.append(self._describe(monitor))
            except Exception as error:
                failures.append(error)
                return False
            return True

        # The callback object must outlive the call: keep it in a local.
        callback = self._monitor_enum_proc(visit)
        succeeded = self._enum_monitors(None, None, callback, 0)
        if failures:
            raise failures[0]
        if not succeeded:
            raise CaptureError(f"EnumDisplayMonitors failed (error {_get_last_error()})")
        return found

    def _describe(self, monitor: Any) -> Monitor:
        info = MONITORINFOEXW()
        info.cbSize = ctypes.sizeof(MONITORINFOEXW)
        if not self._monitor_info(monitor, ctypes.byref(info)):
            raise CaptureError(f"GetMonitorInfoW failed (error {_get_last_error()})")
        rect = info.rcMonitor
        dpi: int | None = None
        if self._get_dpi_for_monitor is not None:
            dpi_x, dpi_y = wintypes.UINT(0), wintypes.UINT(0)
            result = self._get_dpi_for_monitor(
                monitor, MDT_EFFECTIVE_DPI, ctypes.byref(dpi_x), ctypes.byref(dpi_y)
            )
            if int(result) == S_OK and dpi_x.value:
                dpi = int(dpi_x.value)
        device = str(info.szDevice)
        return Monitor(
            device=device,
            bounds=Region(
                int(rect.left),
                int(rect.top),
                int(rect.right - rect.left),
                int(rect.bottom - rect.top),
            ),
            primary=bool(info.dwFlags & MONITORINFOF_PRIMARY),
            dpi=dpi,
            name=self._friendly_name(device),
        )

    def _friendly_name(self, device: str) -> str:
        display = DISPLAY_DEVICEW()
        display.cb = ctypes.sizeof(DISPLAY_DEVICEW)
        if self._enum_devices(device, 0, ctypes.byref(display), 0):
            return str(display.DeviceString)
        return ""

    def virtual_screen(self) -> Region:
        x, y, width, height = (
            int(self._metrics(index))
            for index in (
                SM_XVIRTUALSCREEN,
                SM_YVIRTUALSCREEN,
                SM_CXVIRTUALSCREEN,
                SM_CYVIRTUALSCREEN,
            )
        )
        return Region(x, y, width, height)

    def cursor_position(self) -> tuple[int, int]:
        point = wintypes.POINT()
        if not self._cursor(ctypes.byref(point)):
            # Fails while the secure desktop is up.
            raise InputError(f"GetCursorPos failed (error {_get_last_error()})")
        return int(point.x), int(point.y)

    # -- input -------------------------------------------------------------------------------
    def send_input(self, events: Sequence[INPUT]) -> int:
        array = (INPUT * len(events))(*events)
        inserted = int(self._send_input(len(events), array, ctypes.sizeof(INPUT)))
        self._last_error = _get_last_error()
        return inserted

    def last_error(self) -> int:
        return self._last_error

    def _foreground_layout(self) -> Any:
        """The keyboard layout of the window that receives the keys (layouts are per thread)."""
        window = self._foreground()
        thread = self._window_thread(window, None) if window else 0
        return self._layout(thread)

    def vk_key_scan(self, char: str) -> tuple[int, int] | None:
        if len(char) != 1 or ord(char) > 0xFFFF:
            return None  # VkKeyScan takes one UTF-16 unit
        result = int(self._vk_key_scan(char, self._foreground_layout()))
        if result == -1:
            return None
        return result & 0xFF, (result >> 8) & 0xFF

    def scan_code(self, vk: int) -> int:
        return int(self._map_key(vk, MAPVK_VK_TO_VSC, self._foreground_layout())) & 0xFFFF

    # -- why input may be refused ------------------------------------------------------------
    def input_desktop(self) -> str | None:
        desktop = self._open_input_desktop(0, False, DESKTOP_READOBJECTS)
        if not desktop:
            return None
        try:
            buffer = ctypes.create_unicode_buffer(256)
            needed = wintypes.DWORD(0)
            if not self._object_info(
                desktop, UOI_NAME, buffer, ctypes.sizeof(buffer), ctypes.byref(needed)
            ):
                return None
            return buffer.value
        finally:
            self._close_desktop(desktop)

    def foreground_elevated(self) -> bool | None:
        window = self._foreground()
        if not window:
            return None
        pid = wintypes.DWORD(0)
        self._window_thread(window, ctypes.byref(pid))
        process = self._open_process(PROCESS_QUERY_LIMITED_INFORMATION, False, pid.value)
        if not process:
            return None
        try:
            return self._elevated(process)
        finally:
            self._close_handle(process)

    def process_elevated(self) -> bool:
        return bool(self._elevated(self._current_process()))

    def _elevated(self, process: Any) -> bool | None:
        token = wintypes.HANDLE()
        if not self._open_token(process, TOKEN_QUERY, ctypes.byref(token)):
            # An elevated process's token refuses a non-elevated caller.
            return True if _get_last_error() == ERROR_ACCESS_DENIED else None
        try:
            elevated = wintypes.DWORD(0)
            size = wintypes.DWORD(0)
            if not self._token_info(
                token,
                TOKEN_ELEVATION_CLASS,
                ctypes.byref(elevated),
                ctypes.sizeof(elevated),
                ctypes.byref(size),
            ):
                return None
            return bool(elevated.value)
        finally:
            self._close_handle(token)

    # -- capture -------------------------------------------------------------------------------
    def capture(self, region: Region) -> Image.Image:
        return self._grabber.grab(region.x, region.y, region.width, region.height, region)

    def capture_since(self, region: Region, previous: Grab | None) -> Grab:
        # GDI's capture is BGRA rows like X11's: the same row comparison applies.
        return self._grabber.grab_since(region, region, previous)

    def close(self) -> None:
        self._grabber.close()
