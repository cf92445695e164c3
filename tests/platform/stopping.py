"""Stopping an action midway on a real target, and what reached the app afterwards.

The probe app (tests/apps/probe_app.py) logs each key event with the X server's
timestamp: milliseconds of CLOCK_MONOTONIC, which is Python's time.monotonic(),
mod 2**32. So "no input event reaches the desktop more than 100 ms after the stop"
is read off the server's own clock, not off when the app got round to logging it.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

import pytest

from holodesk.platform.base import InputDriver
from holodesk.platform.errors import InputInterruptedError
from tests.support.probe import Event, ProbeApp

# The promise: nothing more reaches the desktop this long after a stop.
GRACE_MS = 100
# Long enough that no backend can type it all before the stop lands.
LONG_TEXT = "stop me now " * 10_000  # 120,000 characters
_X_TIME_WRAP = 2**32


def x_time_ms(monotonic_s: float) -> int:
    """The X server timestamp of a moment of time.monotonic()."""
    return int(monotonic_s * 1000) % _X_TIME_WRAP


def ms_after(event_time: int, moment_ms: int) -> int:
    """How many ms `event_time` is after `moment_ms` (negative: before), X's wrap undone."""
    delta = (event_time - moment_ms) % _X_TIME_WRAP
    return delta - _X_TIME_WRAP if delta >= _X_TIME_WRAP // 2 else delta


def stop_when(started: Callable[[], bool], signal: threading.Event) -> Callable[[], float]:
    """Set `signal` on a thread as soon as `started()` holds (polled; at the latest
    after 30 s); the returned call joins the thread and gives the time.monotonic()
    at which the signal was set."""
    stopped: list[float] = []

    def stop() -> None:
        deadline = time.monotonic() + 30
        while not started() and time.monotonic() < deadline:
            time.sleep(0.005)
        stopped.append(time.monotonic())
        signal.set()

    thread = threading.Thread(target=stop, name="test-stopper", daemon=True)
    thread.start()

    def join() -> float:
        thread.join()
        return stopped[0]

    return join


def stop_after(seconds: float, signal: threading.Event) -> Callable[[], float]:
    """`stop_when` `seconds` from now."""
    at = time.monotonic() + seconds
    return stop_when(lambda: time.monotonic() >= at, signal)


def type_until_stopped(
    driver: InputDriver, text: str = LONG_TEXT, started: Callable[[], bool] | None = None
) -> float:
    """Type `text`, stop it once `started()` holds (default: 0.3 s in); the stop's
    time.monotonic(). Fails unless the typing raised InputInterruptedError (it was
    still running when the stop came)."""
    signal = threading.Event()
    joined = stop_after(0.3, signal) if started is None else stop_when(started, signal)
    with pytest.raises(InputInterruptedError), driver.stoppable(signal):
        driver.type_text(text)
    return joined()


def first_key_arrived(probe: ProbeApp) -> Callable[[], bool]:
    """Whether the probe has logged a key yet: the moment to stop, mid-typing."""
    return lambda: bool(keys(probe))


def keys(probe: ProbeApp) -> list[Event]:
    return [e for e in probe.events() if e["type"] in ("key", "keyup")]


def over_canvas(probe: ProbeApp, driver: InputDriver) -> None:
    """Point at the probe's canvas: no widget has the focus, so keys go to its root
    window and are logged one by one (an Entry would log its whole text per key)."""
    driver.move(*probe.widgets["canvas"].center)


def drain(probe: ProbeApp, driver: InputDriver) -> None:
    """Click the probe's OK button and wait for it: X delivers in order, so every
    event sent before the click has been logged once the click is."""
    driver.click(*probe.widgets["ok"].center)
    probe.wait_for_event("command", timeout=30)


def late_keys(probe: ProbeApp, driver: InputDriver, stopped_s: float) -> tuple[int, int]:
    """(key events the app got, those stamped more than GRACE_MS after the stop)."""
    drain(probe, driver)
    stop_ms = x_time_ms(stopped_s)
    logged = keys(probe)
    late = [e for e in logged if ms_after(int(e["time"]), stop_ms) > GRACE_MS]
    return len(logged), len(late)
