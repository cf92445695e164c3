"""Executes a batch of actions through the platform's input driver.

Rules from the contract: actions run in order; after the first failure or
rejection the rest are SKIPPED; an action id is executed at most once, ever (a
repeat reports the original result, and the record survives reconnects);
done / fail / ask_user are acknowledged here and handled by the session.

The halt is checked before every action: once the stream is lost, nothing more
starts (NOT_DELIVERED); after a stop, the rest is SKIPPED. A stop also interrupts
the running action between its input events (the driver checks the halt's final
signal), so it FAILED part-way; after a lost stream the running action completes
(a wait is cut short). Whenever a batch stops early, everything held down is released.
"""

from __future__ import annotations

import time
from collections import OrderedDict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Protocol

from holodesk.client import actions as a
from holodesk.client.frames import SentFrame
from holodesk.client.geometry import map_point
from holodesk.client.halt import Halt, HaltReason, HaltState
from holodesk.platform.base import Backend, DisplayInfo, InputDriver
from holodesk.platform.errors import InputInterruptedError
from holodesk.platform.keys import normalize_key

DEFAULT_DRAG_MS = 300
MAX_WAIT_MS = 60_000
FRAMES_KEPT = 32


@dataclass(frozen=True)
class BatchReport:
    results: list[a.ActionResult]
    # The done / fail / ask_user the batch reached (acknowledged OK), if any.
    control: a.ControlAction | None = None
    # Set when releasing held input after an early stop failed.
    release_error: str = ""


class Guard(Protocol):
    """The safety rules (holodesk.client.safety.SafetyGuard), asked before each action."""

    def admit(self, action: a.Action, halt: Halt) -> str:
        """Why the action is rejected, or '' to run it."""
        ...

    def ran(self, action: a.Action) -> None:
        """Called after an action ran or tried to."""
        ...

    def admit_batch(self, actions: Sequence[a.Action]) -> str:
        """Why the whole batch is refused (too long), or '' to run it."""
        ...

    def gate(self, driver: InputDriver) -> InputDriver:
        """The driver all input is sent through: it may refuse a call with RefusedError."""
        ...


class RefusedError(Exception):
    """Raised by a guard's gated driver before it sends anything: the action is REJECTED."""


class ActionError(Exception):
    """An action is invalid for this client; it fails without touching the input."""


class StoppedError(Exception):
    """A halt came while an action (a wait) was running."""


NEVER_RECEIVED = "this client never received it"


class ActionExecutor:
    def __init__(
        self,
        backend: Backend,
        *,
        guard: Guard | None = None,
        max_wait_ms: int = MAX_WAIT_MS,
        frames_kept: int = FRAMES_KEPT,
    ) -> None:
        self._backend = backend
        self._guard = guard
        # Every action's input goes through the guard's gate: the denylist judges the
        # key events actually sent, with what is held at that moment.
        self._input = guard.gate(backend.input) if guard is not None else backend.input
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

    def results_for(self, action_ids: Iterable[str]) -> list[a.ActionResult]:
        """What became of these actions (a resume): recorded results, NOT_DELIVERED for unknowns."""
        return [
            self._executed.get(action_id)
            or a.ActionResult(action_id, a.ActionStatus.NOT_DELIVERED, NEVER_RECEIVED)
            for action_id in action_ids
        ]

    def release_all(self) -> str:
        """Release held input; returns the error text if that failed, else ''."""
        try:
            self._backend.input.release_all()
        except Exception as error:  # the caller reports it; nothing more can be done
            return f"releasing held input failed: {error}"
        return ""

    def execute(self, actions: Sequence[a.Action], halt: Halt | None = None) -> BatchReport:
        halt = halt or Halt()
        refusal = self._guard.admit_batch(actions) if self._guard is not None else ""
        if refusal:
            return BatchReport(_refused(actions, refusal))
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
            state = halt.state
            if skip_reason:
                result = a.ActionResult(action.action_id, a.ActionStatus.SKIPPED, skip_reason)
            elif state is not None:
                result = _not_started(action, state)
            elif isinstance(action, a.Done | a.Fail | a.AskUser):
                result = self._acknowledge(action, halt)
                if result.status is a.ActionStatus.OK:
                    control = action
                    skip_reason = f"follows {type(action).__name__.lower()}, which ends the batch"
                else:
                    skip_reason = f"an earlier action ({action.action_id!r}) was rejected"
            else:
                if displays is None and action.frame_id:
                    displays = self._backend.screen.displays()
                result = self._run_one(action, displays or [], halt)
                if result.status in (a.ActionStatus.FAILED, a.ActionStatus.REJECTED):
                    verb = "failed" if result.status is a.ActionStatus.FAILED else "was rejected"
                    skip_reason = f"an earlier action ({action.action_id!r}) {verb}"
            if action.action_id:
                self._executed[action.action_id] = result
            results.append(result)
        release_error = ""
        stopped_early = bool(skip_reason and control is None) or halt.is_set()
        if stopped_early and any(self._backend.input.held()):
            # Whatever the batch meant to do with a held key, it will not happen now.
            release_error = self.release_all()
        return BatchReport(results, control, release_error)

    def _acknowledge(self, action: a.ControlAction, halt: Halt) -> a.ActionResult:
        rejection = self._guard.admit(action, halt) if self._guard is not None else ""
        if rejection:
            return a.ActionResult(action.action_id, a.ActionStatus.REJECTED, rejection)
        return a.ActionResult(action.action_id, a.ActionStatus.OK)

    def _run_one(self, action: a.Action, displays: list[DisplayInfo], halt: Halt) -> a.ActionResult:
        started = time.monotonic()
        try:
            if not action.action_id:
                raise ActionError("the action has no action_id")
            run = self._prepare(action, displays, halt)
        except (ActionError, ValueError) as error:
            # Rejected before any input was sent: nothing can be held.
            return a.ActionResult(action.action_id, a.ActionStatus.FAILED, str(error))
        if self._guard is not None:
            rejection = self._guard.admit(action, halt)
            if rejection:
                return a.ActionResult(action.action_id, a.ActionStatus.REJECTED, rejection)
        state = halt.state
        if state is not None:  # came while the guard waited (rate limit, confirmation)
            return _not_started(action, state)
        try:
            with self._input.stoppable(halt.final_signal):
                run()
        except RefusedError as error:
            return a.ActionResult(action.action_id, a.ActionStatus.REJECTED, str(error))
        except Exception as error:
            message = str(error) or type(error).__name__
            if isinstance(error, StoppedError | InputInterruptedError):
                message = _interrupted(halt.state)
            release_error = self.release_all()
            if release_error:
                message = f"{message}; {release_error}"
            return a.ActionResult(
                action.action_id, a.ActionStatus.FAILED, message, _elapsed_ms(started)
            )
        finally:
            if self._guard is not None:
                self._guard.ran(action)
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
        self, action: a.Action, displays: list[DisplayInfo], halt: Halt
    ) -> Callable[[], None]:
        """Validate everything first and return the input to send, so a bad action sends none."""
        driver = self._input
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
                if halt.wait(seconds):
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
        driver = self._input
        address_bar = [self._backend.primary_modifier, "l"]

        def type_into_address_bar() -> None:
            driver.key_chord(address_bar)
            driver.type_text(url)
            driver.key_chord(["enter"])

        return type_into_address_bar


def _refused(actions: Sequence[a.Action], reason: str) -> list[a.ActionResult]:
    """A refused batch: the first action REJECTED with why, the rest SKIPPED after it.

    Not recorded as executed (nothing ran), and the rest say little: the results
    of a huge batch must still fit one message back to the daemon."""
    first, *rest = actions
    results = [a.ActionResult(first.action_id, a.ActionStatus.REJECTED, reason)]
    results += (a.ActionResult(x.action_id, a.ActionStatus.SKIPPED, _BATCH_REFUSED) for x in rest)
    return results


_BATCH_REFUSED = "the batch was refused"


def _not_started(action: a.Action, state: HaltState) -> a.ActionResult:
    if state.reason is HaltReason.LINK_LOST:
        return a.ActionResult(
            action.action_id,
            a.ActionStatus.NOT_DELIVERED,
            "not started: the stream to the daemon dropped",
        )
    return a.ActionResult(
        action.action_id, a.ActionStatus.SKIPPED, f"the session was stopped: {state.message}"
    )


def _interrupted(state: HaltState | None) -> str:
    if state is None or state.reason is HaltReason.USER:
        return "stopped by the user"
    if state.reason is HaltReason.LINK_LOST:
        return "interrupted: the stream to the daemon dropped"
    return f"stopped: {state.message}"


def _elapsed_ms(started: float) -> int:
    return round((time.monotonic() - started) * 1000)
