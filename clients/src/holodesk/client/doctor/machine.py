"""Checks of this machine's desktop, through the platform layer's public API only.

Nothing here knows an OS: the backend that `open_backend` picks (and the causes
and fixes its errors list) says what display server there is, its
`permission_check` what OS permissions it needs, and its `blank_capture_fix`
what a black capture means there. Input is checked by querying the pointer,
which moves nothing; `check_input=True` also moves it one pixel and back.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from dataclasses import dataclass

from PIL import Image

from holodesk.client.doctor.findings import Finding, Status, crashed, guarded
from holodesk.client.doctor.route import ROUTE, check_route
from holodesk.platform.base import Backend, DisplayInfo
from holodesk.platform.errors import BackendUnavailableError, PlatformError
from holodesk.platform.safety.hotkeys import DEFAULT_EMERGENCY_STOP, HotkeyError, HotkeyListener
from holodesk.platform.select import open_backend

DISPLAY, CAPTURE, INPUT, PERMISSIONS, HOTKEY = (
    "display",
    "capture",
    "input",
    "permissions",
    "e-stop hotkey",
)
NO_BACKEND = "no platform backend opened (see display)"


@dataclass(frozen=True)
class MachineOptions:
    # Platform backend name; None: this OS's own (or $HOLODESK_PLATFORM_BACKEND).
    backend: str | None = None
    # Move the pointer one pixel and back, to prove injected input lands.
    check_input: bool = False
    # The emergency-stop chord to try listening for; None: skip the check.
    hotkey: str | None = DEFAULT_EMERGENCY_STOP


def check_machine(
    options: MachineOptions, opener: Callable[[str | None], Backend] = open_backend
) -> list[Finding]:
    """Every machine finding, in table order. `opener` is for tests (a fake OS).

    Each check's crash is a finding of its own, and the checks after it still run.
    On a Wayland session the first finding says which route the backend takes.
    """
    route = _route(options.backend)
    try:
        backend = opener(options.backend)
    except BackendUnavailableError as error:
        causes = [Finding(DISPLAY, Status.FAIL, cause, fix) for cause, fix in error.causes]
        return [*route, *causes, *_skipped(), guarded(HOTKEY, check_hotkey, options.hotkey)]
    except PlatformError as error:
        fix = "check the backend name and its requirements (holodesk run --help)"
        display = Finding(DISPLAY, Status.FAIL, str(error), fix)
        return [*route, display, guarded(HOTKEY, check_hotkey, options.hotkey)]
    except Exception as error:
        opening = f"opening the {options.backend or 'default'} backend"
        crash = crashed(DISPLAY, error, opening)
        return [*route, crash, *_skipped(), guarded(HOTKEY, check_hotkey, options.hotkey)]
    findings: list[Finding] = list(route)
    try:
        findings.append(guarded(DISPLAY, check_displays, backend))
        if findings[-1].status is Status.OK:
            findings.append(guarded(CAPTURE, check_capture, backend))
            findings.append(guarded(INPUT, check_input, backend, move=options.check_input))
        findings.append(guarded(PERMISSIONS, check_permissions, backend))
        # While the backend is still connected: closing it first leaves a server that
        # resets when its last client leaves (a plain `Xvfb :N`) resetting just as the
        # hotkey's connection arrives, and a reset kills a connection it meets.
        findings.append(guarded(HOTKEY, check_hotkey, options.hotkey))
    finally:
        findings += _close(backend)
    return findings


def _route(backend: str | None) -> list[Finding]:
    """The Wayland route finding, if this is a Wayland session (its crash a finding too)."""
    try:
        found = check_route(backend, os.environ)
    except Exception as error:  # reported with its cause, as guarded() does
        return [crashed(ROUTE, error)]
    return [] if found is None else [found]


def _skipped() -> list[Finding]:
    return [Finding(name, Status.SKIP, NO_BACKEND) for name in (CAPTURE, INPUT, PERMISSIONS)]


def _close(backend: Backend) -> list[Finding]:
    try:
        backend.close()
    except Exception as error:
        return [crashed(DISPLAY, error, f"closing the {backend.name} backend")]
    return []


def _describe(display: DisplayInfo) -> str:
    bounds = display.bounds
    text = f"{display.display_id} {bounds.width}x{bounds.height} at ({bounds.x},{bounds.y})"
    if display.scale_factor != 1.0:
        text += f" scale {display.scale_factor:g}"
    return text + (" primary" if display.primary else "")


def check_displays(backend: Backend) -> Finding:
    try:
        displays = backend.screen.displays()
    except PlatformError as error:
        return Finding(DISPLAY, Status.FAIL, f"listing displays failed: {error}", _RECONNECT)
    if not displays:
        return Finding(
            DISPLAY,
            Status.FAIL,
            f"the {backend.name} backend sees no display",
            "connect or switch on a display (a headless machine: start a virtual one)",
        )
    shown = "; ".join(_describe(d) for d in displays)
    return Finding(
        DISPLAY, Status.OK, f"{backend.name} backend ({backend.os}), {len(displays)}: {shown}"
    )


_RECONNECT = "check that the display server is still running and this user may use it"


def is_black(image: Image.Image) -> bool:
    """True when every pixel is pure black (what a refused capture often looks like)."""
    # getbbox: the box of non-zero pixels in any band; None when there are none.
    return image.convert("RGB").getbbox() is None


def check_capture(backend: Backend) -> Finding:
    try:
        display = backend.screen.displays()[0]  # primary first
    except PlatformError as error:
        return Finding(CAPTURE, Status.FAIL, f"listing displays failed: {error}", _RECONNECT)
    started = time.perf_counter()
    try:
        image = backend.screen.grab(display.bounds)
    except PlatformError as error:
        detail = f"capturing {display.display_id} failed: {error}"
        return Finding(CAPTURE, Status.FAIL, detail, _RECONNECT)
    took_ms = (time.perf_counter() - started) * 1000
    detail = f"{display.display_id}: {image.width}x{image.height} in {took_ms:.0f} ms"
    expected = (display.bounds.width, display.bounds.height)
    if image.size != expected:
        return Finding(
            CAPTURE,
            Status.WARN,
            f"{detail}, but the display is {expected[0]}x{expected[1]}",
            "report this: the backend's capture and geometry disagree (HiDPI scaling?)",
        )
    if is_black(image):
        blank = f"{detail}, every pixel black"
        return Finding(CAPTURE, Status.WARN, blank, backend.blank_capture_fix)
    return Finding(CAPTURE, Status.OK, detail, backend.screen.capture_note)


def check_input(backend: Backend, *, move: bool) -> Finding:
    driver = backend.input
    try:
        x, y = driver.cursor_position()
    except PlatformError as error:
        return Finding(INPUT, Status.FAIL, f"querying the pointer failed: {error}", _RECONNECT)
    if not move:
        return Finding(
            INPUT,
            Status.OK,
            f"pointer at ({x}, {y}); nothing moved (--check-input moves it 1 px and back)",
        )
    try:
        desktop = backend.screen.virtual_desktop()
    except PlatformError as error:
        return Finding(INPUT, Status.FAIL, f"listing displays failed: {error}", _RECONNECT)
    target = (x + 1 if x + 1 < desktop.right else x - 1, y)
    try:
        driver.move(*target)
        landed = driver.cursor_position()
        driver.move(x, y)
        restored = driver.cursor_position()
    except PlatformError as error:
        return Finding(INPUT, Status.FAIL, f"moving the pointer failed: {error}", _INPUT_FIX)
    if landed != target:
        return Finding(
            INPUT,
            Status.FAIL,
            f"moved the pointer to {target} but it is at {landed}: injected input is dropped",
            _INPUT_FIX,
        )
    back = "and back" if restored == (x, y) else f"but it came back to {restored}"
    return Finding(INPUT, Status.OK, f"pointer moved from ({x}, {y}) to {target} {back}")


_INPUT_FIX = "see the permissions check: the OS must let this program inject input"


def check_permissions(backend: Backend) -> Finding:
    if backend.permission_check is None:
        return Finding(PERMISSIONS, Status.OK, f"the {backend.name} backend needs no OS grant")
    try:
        problems = backend.permission_check()
    except PlatformError as error:
        return Finding(PERMISSIONS, Status.FAIL, f"checking failed: {error}", _RECONNECT)
    if not problems:
        return Finding(PERMISSIONS, Status.OK, "every OS permission the backend needs is granted")
    causes = "; ".join(cause for cause, _ in problems)
    fixes = "; ".join(fix for _, fix in problems)
    return Finding(PERMISSIONS, Status.FAIL, causes, fixes)


def check_hotkey(chord: str | None) -> Finding:
    if chord is None:
        return Finding(HOTKEY, Status.SKIP, "not checked (--no-estop)")
    try:
        listener = HotkeyListener(chord, lambda: None)
    except ValueError as error:
        return Finding(HOTKEY, Status.FAIL, str(error), "pass a chord like ctrl+alt+shift+escape")
    try:
        listener.start()
    except HotkeyError as error:
        return Finding(
            HOTKEY,
            Status.WARN,
            f"{listener.chord} cannot be heard here: {error}",
            "fix that to have an emergency stop; meanwhile sessions run without it and "
            "stop with Ctrl-C",
        )
    finally:
        listener.stop()
    return Finding(HOTKEY, Status.OK, f"{listener.chord} can be listened for")
