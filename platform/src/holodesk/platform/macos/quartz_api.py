"""`QuartzApi` on a real Mac, through pyobjc (and mss for capture): the only module here
that calls the OS. Imported by `macos.backend` on macOS only.

NOT RUN in this project's CI (Linux): it is type-checked and linted there, and every
decision it feeds is tested against a fake, but the calls themselves have yet to run
on a real Mac.
"""

from __future__ import annotations

import ctypes
import logging
import threading
from collections.abc import Mapping
from typing import Any

import AppKit  # type: ignore[import-not-found,import-untyped,unused-ignore]
import ApplicationServices  # type: ignore[import-not-found,import-untyped,unused-ignore]
import mss.darwin
import Quartz  # type: ignore[import-not-found,import-untyped,unused-ignore]
from PIL import Image

from holodesk.platform.errors import CaptureError, InputError
from holodesk.platform.macos import cg
from holodesk.platform.macos.api import (
    KeyEvent,
    MouseEvent,
    PointRect,
    QuartzApi,
    QuartzDisplay,
    QuartzEvent,
    ScrollEvent,
)
from holodesk.platform.macos.keycodes import NAMED_KEYCODES
from holodesk.platform.mss_grabber import MssGrabber
from holodesk.platform.text import utf16_length

log = logging.getLogger(__name__)

MAX_DISPLAYS = 32
# CGWindowListCreateImage options: mss adds kCGWindowImageNominalResolution (one pixel
# per point); without it the image has the displays' own (backing) pixels, which the
# contract wants. QuartzScreen resizes anything else to the expected size.
_IMAGE_BOUNDS_IGNORE_FRAMING = 1 << 0
_IMAGE_SHOULD_BE_OPAQUE = 1 << 1
FULL_RESOLUTION = _IMAGE_BOUNDS_IGNORE_FRAMING | _IMAGE_SHOULD_BE_OPAQUE

# UCKeyTranslate
_CARBON = "/System/Library/Frameworks/Carbon.framework/Carbon"
_CORE_FOUNDATION = "/System/Library/Frameworks/CoreFoundation.framework/CoreFoundation"
_KEY_ACTION_DOWN = 0
_NO_DEAD_KEYS = 1  # kUCKeyTranslateNoDeadKeysMask
_SHIFT_KEY_STATE = 0x02  # (shiftKey >> 8)
# Keypad keys type digits and operators too; the main keys are the ones to press.
_KEYPAD = frozenset({0x41, 0x43, 0x45, 0x47, 0x4B, 0x4C, 0x4E, 0x51, *range(0x52, 0x5D)})


class PyObjCQuartzApi(QuartzApi):
    """CoreGraphics, HIServices and AppKit calls, one method each."""

    def __init__(self) -> None:
        self._grabber = MssGrabber()
        # Read once, on the thread that opens the backend: Text Input Sources must be
        # read on the main thread (recent macOS aborts the process otherwise).
        self._layout = _read_keyboard_layout()

    def displays(self) -> list[QuartzDisplay]:
        error, ids, count = Quartz.CGGetActiveDisplayList(MAX_DISPLAYS, None, None)
        if error:
            raise CaptureError(f"CGGetActiveDisplayList failed (CGError {error})")
        main = int(Quartz.CGMainDisplayID())
        names = _screen_names()
        found = []
        for display in list(ids)[: int(count)]:
            if Quartz.CGDisplayMirrorsDisplay(display) != Quartz.kCGNullDirectDisplay:
                continue  # a mirror shows another display's pixels: list that one only
            bounds = Quartz.CGDisplayBounds(display)
            width, height = _pixel_size(display)
            found.append(
                QuartzDisplay(
                    display_id=int(display),
                    bounds=PointRect(
                        float(bounds.origin.x),
                        float(bounds.origin.y),
                        float(bounds.size.width),
                        float(bounds.size.height),
                    ),
                    pixel_width=width,
                    pixel_height=height,
                    main=int(display) == main,
                    name=names.get(int(display), ""),
                )
            )
        return found

    def post(self, event: QuartzEvent) -> None:
        if isinstance(event, MouseEvent):
            created = Quartz.CGEventCreateMouseEvent(
                None, event.type, (event.x, event.y), event.button
            )
            if created is not None and event.click_state:
                Quartz.CGEventSetIntegerValueField(
                    created, Quartz.kCGMouseEventClickState, event.click_state
                )
        elif isinstance(event, KeyEvent):
            created = Quartz.CGEventCreateKeyboardEvent(None, event.keycode, event.down)
            if created is not None and event.text:
                Quartz.CGEventKeyboardSetUnicodeString(
                    created, utf16_length(event.text), event.text
                )
        else:
            created = _scroll_event(event)
        if created is None:
            raise InputError(f"CoreGraphics could not create the event {event}")
        # Our flags replace whatever modifier state the new event inherited.
        kept = Quartz.CGEventGetFlags(created) & Quartz.kCGEventFlagMaskNonCoalesced
        Quartz.CGEventSetFlags(created, event.flags | kept)
        Quartz.CGEventPost(cg.HID_EVENT_TAP, created)

    def cursor_location(self) -> tuple[float, float]:
        location = Quartz.CGEventGetLocation(Quartz.CGEventCreate(None))
        return float(location.x), float(location.y)

    def double_click_interval(self) -> float:
        return float(AppKit.NSEvent.doubleClickInterval())

    def screen_capture_allowed(self) -> bool:
        preflight = getattr(Quartz, "CGPreflightScreenCaptureAccess", None)
        # Before macOS 10.15 there was no Screen Recording permission to check.
        return True if preflight is None else bool(preflight())

    def accessibility_trusted(self) -> bool:
        return bool(ApplicationServices.AXIsProcessTrusted())

    def request_access(self, screen_capture: bool, accessibility: bool) -> None:
        if screen_capture and hasattr(Quartz, "CGRequestScreenCaptureAccess"):
            Quartz.CGRequestScreenCaptureAccess()
        if accessibility:
            ApplicationServices.AXIsProcessTrustedWithOptions(
                {ApplicationServices.kAXTrustedCheckOptionPrompt: True}
            )

    def capture(self, rect: PointRect) -> Image.Image:
        # mss documents this module setting as its switch to full resolution.
        mss.darwin.IMAGE_OPTIONS = FULL_RESOLUTION
        return self._grabber.grab(rect.x, rect.y, rect.width, rect.height, rect)

    def keyboard_layout(self) -> Mapping[str, tuple[int, int]] | None:
        return self._layout

    def close(self) -> None:
        self._grabber.close()


def _pixel_size(display: Any) -> tuple[int, int]:
    """The display's backing pixels: the mode's pixel size, turned with the display."""
    mode = Quartz.CGDisplayCopyDisplayMode(display)
    if mode is not None:
        width = int(Quartz.CGDisplayModeGetPixelWidth(mode))
        height = int(Quartz.CGDisplayModeGetPixelHeight(mode))
    else:
        width, height = (
            int(Quartz.CGDisplayPixelsWide(display)),
            int(Quartz.CGDisplayPixelsHigh(display)),
        )
    # CGDisplayBounds is already rotated; the mode is not.
    if round(float(Quartz.CGDisplayRotation(display))) % 180 == 90:
        width, height = height, width
    return width, height


def _screen_names() -> dict[int, str]:
    """CGDirectDisplayID -> the display's name ("Built-in Retina Display"), where known."""
    names: dict[int, str] = {}
    try:
        for screen in AppKit.NSScreen.screens():
            number = screen.deviceDescription().get("NSScreenNumber")
            if number is not None and hasattr(screen, "localizedName"):
                names[int(number)] = str(screen.localizedName())
    except Exception as error:  # names are decoration: never fail for them
        log.debug("reading display names failed: %s", error)
    return names


def _scroll_event(event: ScrollEvent) -> Any:
    create = getattr(Quartz, "CGEventCreateScrollWheelEvent2", None)
    if create is not None:
        created = create(None, cg.SCROLL_UNIT_LINE, 2, event.vertical, event.horizontal, 0)
    else:
        created = Quartz.CGEventCreateScrollWheelEvent(
            None, cg.SCROLL_UNIT_LINE, 2, event.vertical, event.horizontal
        )
    if created is not None:
        Quartz.CGEventSetLocation(created, (event.x, event.y))
    return created


def _read_keyboard_layout() -> dict[str, tuple[int, int]] | None:
    """character -> (keycode, flags) of the current layout via UCKeyTranslate, or None."""
    if threading.current_thread() is not threading.main_thread():
        log.info("keyboard layout not read (not on the main thread): assuming US keys")
        return None
    try:
        return _translate_layout()
    except (OSError, AttributeError, ValueError) as error:
        log.info("reading the keyboard layout failed (%s): assuming US keys", error)
        return None


def _translate_layout() -> dict[str, tuple[int, int]] | None:
    carbon = ctypes.cdll.LoadLibrary(_CARBON)
    core = ctypes.cdll.LoadLibrary(_CORE_FOUNDATION)
    carbon.TISCopyCurrentKeyboardLayoutInputSource.restype = ctypes.c_void_p
    carbon.TISCopyCurrentKeyboardLayoutInputSource.argtypes = []
    carbon.TISGetInputSourceProperty.restype = ctypes.c_void_p
    carbon.TISGetInputSourceProperty.argtypes = [ctypes.c_void_p, ctypes.c_void_p]
    carbon.LMGetKbdType.restype = ctypes.c_uint8
    carbon.LMGetKbdType.argtypes = []
    carbon.UCKeyTranslate.restype = ctypes.c_int32
    carbon.UCKeyTranslate.argtypes = [
        ctypes.c_void_p,  # const UCKeyboardLayout *
        ctypes.c_uint16,  # virtualKeyCode
        ctypes.c_uint16,  # keyAction
        ctypes.c_uint32,  # modifierKeyState
        ctypes.c_uint32,  # keyboardType
        ctypes.c_uint32,  # keyTranslateOptions
        ctypes.POINTER(ctypes.c_uint32),  # deadKeyState
        ctypes.c_ulong,  # maxStringLength (UniCharCount)
        ctypes.POINTER(ctypes.c_ulong),  # actualStringLength
        ctypes.POINTER(ctypes.c_uint16),  # unicodeString
    ]
    core.CFDataGetBytePtr.restype = ctypes.c_void_p
    core.CFDataGetBytePtr.argtypes = [ctypes.c_void_p]
    core.CFRelease.restype = None
    core.CFRelease.argtypes = [ctypes.c_void_p]
    property_key = ctypes.c_void_p.in_dll(carbon, "kTISPropertyUnicodeKeyLayoutData")

    source = carbon.TISCopyCurrentKeyboardLayoutInputSource()
    if not source:
        return None
    try:
        data = carbon.TISGetInputSourceProperty(source, property_key)
        if not data:
            return None  # an input method without a key layout
        layout = core.CFDataGetBytePtr(data)
        keyboard_type = carbon.LMGetKbdType()
        named = set(NAMED_KEYCODES.values())
        found: dict[str, tuple[int, int]] = {}
        for modifier_state, flags in ((0, 0), (_SHIFT_KEY_STATE, cg.FLAG_SHIFT)):
            for keycode in range(128):
                if keycode in named or keycode in _KEYPAD:
                    continue
                dead = ctypes.c_uint32(0)
                length = ctypes.c_ulong(0)
                chars = (ctypes.c_uint16 * 4)()
                status = carbon.UCKeyTranslate(
                    layout,
                    keycode,
                    _KEY_ACTION_DOWN,
                    modifier_state,
                    keyboard_type,
                    _NO_DEAD_KEYS,
                    ctypes.byref(dead),
                    len(chars),
                    ctypes.byref(length),
                    chars,
                )
                if status != 0 or not length.value:
                    continue
                text = bytes(chars)[: 2 * length.value].decode("utf-16-le", errors="ignore")
                if len(text) == 1 and text.isprintable() and text not in found:
                    found[text] = (keycode, flags)
        return found or None
    finally:
        core.CFRelease(source)
