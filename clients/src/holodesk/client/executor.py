"""Executes a batch of actions through the platform's input driver.

Rules from the contract: actions run in order; after the first failure the rest
are SKIPPED; an action id is executed at most once, ever (a repeat reports the
original result); done / fail / ask_user are acknowledged here and handled by
the session. Whenever a batch stops early, everything held down is released.
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from holodesk.client import actions as a
from holodesk.client.frames import SentFrame
from holodesk.client.geometry import map_point
from holodesk.platform.base import Backend, DisplayInfo
from holodesk.platform.keys import normalize_key

DEFAULT_DRAG_MS = 300
MAX_WAIT_MS = 60_000
FRAMES_KEPT = 32


@dataclass(frozen=True)
class BatchReport:
    results: list[a.ActionResult]
    # The done / fail / ask_user the batch reached (acknowledged OK), if any.
    control: a.ControlAction | None = None


class ActionError(Exception):
    """An action is invalid for this client; it fails without touching the input."""


class StoppedError(Exception):
    """The user stopped the session while an action was running."""


class ActionExecutor:
    def __init__(
        self,
        backend: Backend,
        *,
        max_wait_ms: int = MAX_WAIT_MS,
        frames_kept: int = FRAMES_KEPT,
    ) -> None:
        self._backend = backend
        self._max_wait_ms = max_wait_ms
        self._frames_kept = frames_kept
        self._frames: OrderedDict[str, SentFrame] = OrderedDict()
        self._executed: dict[str, a.ActionResult] = {}

    def remember_frame(self, frame: SentFrame) -> None:
        """Make a sent frame available for mapping; the oldest ones are forgotten."""
        self._frames[frame.frame_id] = frame
        while len(self._frames) > self._frames_kept:
            self._frames.popitem(last=False)

    def amend(self, result: a.ActionResult) -> None:
        """Replace the recorded result of an action the session completed itself (ask_user)."""
        self._executed[result.action_id] = result

    def release_all(self) -> str:
        """Release held input; returns the error text if that failed, else ''."""
        try:
            self._backend.input.release_all()
        except Exception as error:  # the caller reports it; nothing more can be done
            return f"releasing held input failed: {error}"
        return ""

    def execute(
        self, actions: Sequence[a.Action], stop: threading.Event | None = None
    ) -> BatchReport:
        stop = stop or threading.Event()
        results: list[a.ActionResult] = []
        control: a.ControlAction | None = None
        skip_reason = ""
        displays: list[DisplayInfo] | None = None
        for action in actions:
            if action.action_id in self._executed:
                original = self._executed[action.action_id]
                results.append(original)
                if original.status is not a.ActionStatus.OK and not skip_reason:
                    skip_reason = f"action {action.action_id!r} failed earlier"
                continue
            if not skip_reason and stop.is_set():
                skip_reason = "the session was stopped"
            if skip_reason:
                results.append(
                    a.ActionResult(action.action_id, a.ActionStatus.SKIPPED, skip_reason)
                )
                continue
            if isinstance(action, a.Done | a.Fail | a.AskUser):
                control = action
                result = a.ActionResult(action.action_id, a.ActionStatus.OK)
                skip_reason = f"follows {type(action).__name__.lower()}, which ends the batch"
            else:
                if displays is None and action.frame_id:
                    displays = self._backend.screen.displays()
                result = self._run_one(action, displays or [], stop)
                if result.status is not a.ActionStatus.OK:
                    skip_reason = f"an earlier action ({action.action_id!r}) failed"
            if action.action_id:
                self._executed[action.action_id] = result
            results.append(result)
        return BatchReport(results, control)

    def _run_one(
        self, action: a.Action, displays: list[DisplayInfo], stop: threading.Event
    ) -> a.ActionResult:
        started = time.monotonic()
        try:
            if not action.action_id:
                raise ActionError("the action has no action_id")
            run = self._prepare(action, displays, stop)
        except (ActionError, ValueError) as error:
            # Rejected before any input was sent: nothing can be held.
            return a.ActionResult(action.action_id, a.ActionStatus.FAILED, str(error))
        try:
            run()
        except Exception as error:
            message = str(error) or type(error).__name__
            if isinstance(error, StoppedError):
                message = "stopped by the user"
            release_error = self.release_all()
            if release_error:
                message = f"{message}; {release_error}"
            return a.ActionResult(
                action.action_id, a.ActionStatus.FAILED, message, _elapsed_ms(started)
            )
        return a.ActionResult(action.action_id, a.ActionStatus.OK, "", _elapsed_ms(started))

    def _point(
        self, action: a.Action, point: a.FramePoint, displays: list[DisplayInfo]
    ) -> tuple[int, int]:
        if not action.frame_id:
            raise ActionError("the action has coordinates but no frame_id")
        frame = self._frames.get(action.frame_id)
        if frame is None:
            raise ActionError(
                f"unknown frame id {action.frame_id!r}: this client sent no such frame"
            )
        return map_point(frame, point.x, point.y, displays)

    def _prepare(
        self, action: a.Action, displays: list[DisplayInfo], stop: threading.Event
    ) -> Callable[[], None]:
        """Validate everything first and return the input to send, so a bad action sends none."""
        driver = self._backend.input
        if isinstance(action, a.Click):
            if action.count not in (1, 2, 3):
                raise ActionError(f"click count must be 1, 2 or 3, not {action.count}")
            x, y = self._point(action, action.point, displays)
            mods = [normalize_key(k) for k in action.modifiers]
            return lambda: driver.click(x, y, action.button, action.count, mods)
        if isinstance(action, a.Move):
            x, y = self._point(action, action.point, displays)
            return lambda: driver.move(x, y)
        if isinstance(action, a.MouseDown | a.MouseUp):
            target = None if action.point is None else self._point(action, action.point, displays)
            press = driver.mouse_down if isinstance(action, a.MouseDown) else driver.mouse_up
            button = action.button

            def press_at() -> None:
                if target is not None:
                    driver.move(*target)
                press(button)

            return press_at
        if isinstance(action, a.Drag):
            if len(action.path) < 2:
                raise ActionError(f"a drag needs at least two points, got {len(action.path)}")
            path = [self._point(action, p, displays) for p in action.path]
            mods = [normalize_key(k) for k in action.modifiers]
            seconds = (action.duration_ms or DEFAULT_DRAG_MS) / 1000
            return lambda: driver.drag(path, action.button, mods, seconds)
        if isinstance(action, a.Scroll):
            x, y = self._point(action, action.point, displays)
            return lambda: driver.scroll(x, y, action.dx, action.dy)
        if isinstance(action, a.TypeText):
            return lambda: driver.type_text(action.text)
        if isinstance(action, a.KeyChord):
            if not action.keys:
                raise ActionError("a key chord needs at least one key")
            keys = [normalize_key(k) for k in action.keys]
            return lambda: driver.key_chord(keys)
        if isinstance(action, a.KeyDown):
            key = normalize_key(action.key)
            return lambda: driver.key_down(key)
        if isinstance(action, a.KeyUp):
            key = normalize_key(action.key)
            return lambda: driver.key_up(key)
        if isinstance(action, a.Wait):
            if action.duration_ms > self._max_wait_ms:
                raise ActionError(
                    f"wait of {action.duration_ms} ms exceeds this client's limit of "
                    f"{self._max_wait_ms} ms"
                )
            seconds = action.duration_ms / 1000

            def wait() -> None:
                if stop.wait(seconds):
                    raise StoppedError

            return wait
        if isinstance(action, a.Navigate):
            return self._navigation(action.url)
        if isinstance(action, a.Unsupported):
            raise ActionError(action.reason)
        raise ActionError(f"{type(action).__name__} is not executed as input")

    def _navigation(self, raw_url: str) -> Callable[[], None]:
        url = raw_url.strip()
        if not url:
            raise ActionError("navigate needs a URL")
        navigator = self._backend.navigator
        if navigator is not None:
            return lambda: navigator.navigate(url)
        # A desktop: focus the front browser's address bar, type the URL, go.
        driver = self._backend.input
        address_bar = ["meta" if self._backend.os == "darwin" else "ctrl", "l"]

        def type_into_address_bar() -> None:
            driver.key_chord(address_bar)
            driver.type_text(url)
            driver.key_chord(["enter"])

        return type_into_address_bar


def _elapsed_ms(started: float) -> int:
    return round((time.monotonic() - started) * 1000)
