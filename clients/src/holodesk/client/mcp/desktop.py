"""The desktop an MCP host acts on: screenshots, and actions in screen pixels.

An MCP host is one more party that can only ask, like a daemon: its actions are
the client's own action values (holodesk.client.actions) run by the client's own
ActionExecutor behind the same SafetyGuard as `holodesk run` (allowlist, text and
batch bounds, confirm mode, rate limits, fail-safe corner, and the KeyGate that
judges every key press with what is held). Nothing here decides what is safe.

Coordinates are physical pixels of the virtual desktop, as a screenshot shows
them: each action names a frame, "screen", that is the whole virtual desktop at
one frame pixel per physical pixel, so the executor's frame -> screen mapping is
the identity (shifted by the desktop's origin) and keeps its checks (a point on
no display fails instead of clicking somewhere else).

Every backend call runs on one worker thread, in order, as in a session (OS input
APIs can be thread-affine), and one asyncio lock lets one user at a time drive
the desktop: a tool call, or a whole run_task session.

The emergency-stop hotkey of `holodesk run` (SafetySettings.emergency_stop) is
held for the server's whole life: pressing it cuts the running action off between
its input events, releases what is held, and refuses every later action until
`holodesk mcp` is restarted, since an agent that kept going after a person said
stop would make the hotkey worthless. A run_task session listens for the same
hotkey itself, so it is lent to the session meanwhile.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import io
import uuid
from collections.abc import AsyncIterator, Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TypeVar

from PIL import Image

from holodesk.client import actions as a
from holodesk.client.capture import ALL_DISPLAYS, downsize, find_display, fit_size
from holodesk.client.executor import ActionExecutor
from holodesk.client.frames import SentFrame
from holodesk.client.halt import Halt, HaltReason
from holodesk.client.safety import SafetyGuard, SafetySettings
from holodesk.client.safety.redact import redact
from holodesk.platform.base import Backend, DisplayInfo, Region
from holodesk.platform.safety.hotkeys import HotkeyError, HotkeyListener
from holodesk.values.encoding import ImageEncoding
from holodesk.values.png import encode_png

T = TypeVar("T")

# The frame every MCP action names: the whole virtual desktop, one pixel per pixel.
SCREEN_FRAME_ID = "screen"


@dataclass(frozen=True)
class Screenshot:
    """A PNG of `region` of the virtual desktop, one image pixel per physical pixel
    (image pixel (px, py) is screen pixel (region.x + px, region.y + py))."""

    png: bytes
    region: Region
    # Empty for the whole virtual desktop.
    display_id: str


def shrunk(shot: Screenshot, max_width: int, max_height: int) -> tuple[bytes, int, int]:
    """The screenshot's PNG fitted into max_width x max_height (0: no limit), never
    enlarged, as a session's frames are (holodesk.client.capture); with its size.

    Hosts downscale big images before their model sees them, and a model reading
    points off a silently downscaled image misses: asking for the size the model
    will see, and being told the scale, keeps the arithmetic in the open."""
    region = shot.region
    size = fit_size(region.width, region.height, max_width, max_height)
    if size == (region.width, region.height):
        return shot.png, region.width, region.height
    with Image.open(io.BytesIO(shot.png)) as image:
        small = downsize(image.convert("RGB"), size)
    return encode_png(small), size[0], size[1]


class Desktop:
    """One platform backend, driven through the client's guard and executor."""

    def __init__(self, backend: Backend, safety: SafetySettings) -> None:
        self._backend = backend
        self._safety = safety
        self._executor = ActionExecutor(backend, guard=SafetyGuard(safety, backend))
        self._worker = ThreadPoolExecutor(max_workers=1, thread_name_prefix="holodesk-mcp")
        # One user of the desktop at a time: a tool call, or a whole session.
        self.lock = asyncio.Lock()
        # Set for good by the emergency-stop hotkey: every later action is refused.
        self._halt = Halt()
        # The running action's own halt: the hotkey cuts it off, and the fail-safe
        # corner stops it alone (the next action checks the corner afresh, so moving
        # the pointer out of it is enough, as the fail-safe's message says).
        self._current: Halt | None = None
        self._hotkey: HotkeyListener | None = None
        self._closed = False

    @property
    def stopped(self) -> str:
        """Why this desktop acts no more ('' while it may)."""
        state = self._halt.state
        return state.message if state is not None else ""

    async def start_hotkey(self) -> str:
        """Listen for the emergency-stop hotkey; '' or why there is none (a warning)."""
        chord = self._safety.emergency_stop
        if chord is None or self._hotkey is not None:
            return ""
        message = (
            f"emergency stop ({chord}) pressed: holodesk mcp acts no more until it is restarted"
        )

        def stop() -> None:  # on the listener's thread; Halt is thread-safe
            self._halt.trigger(HaltReason.EMERGENCY_STOP, message)
            running = self._current
            if running is not None:
                running.trigger(HaltReason.EMERGENCY_STOP, message)

        listener = HotkeyListener(chord, stop)
        try:
            await asyncio.to_thread(listener.start)
        except HotkeyError as error:
            return f"no emergency-stop hotkey: {error}"
        self._hotkey = listener
        return ""

    async def stop_hotkey(self) -> None:
        listener, self._hotkey = self._hotkey, None
        if listener is not None:
            await asyncio.to_thread(listener.stop)

    @contextlib.asynccontextmanager
    async def hotkey_lent(self) -> AsyncIterator[None]:
        """Stop listening while a session listens for the same hotkey, then again."""
        listening = self._hotkey is not None
        await self.stop_hotkey()
        try:
            yield
        finally:
            if listening:
                await self.start_hotkey()

    @property
    def backend(self) -> Backend:
        return self._backend

    @property
    def safety(self) -> SafetySettings:
        return self._safety

    async def _on_worker(self, function: Callable[[], T]) -> T:
        return await asyncio.get_running_loop().run_in_executor(self._worker, function)

    async def displays(self) -> list[DisplayInfo]:
        return await self._on_worker(self._backend.screen.displays)

    async def screenshot(self, display: str | None = None) -> Screenshot:
        """The whole virtual desktop (None or "all") or one display, redacted regions
        painted black (SafetySettings.redact) as in every frame a session sends.
        CaptureError names the displays when `display` is not one of them."""
        return await self._on_worker(lambda: self._grab(display))

    def _grab(self, display: str | None) -> Screenshot:
        screen = self._backend.screen
        if display is None or display == ALL_DISPLAYS:
            region, display_id = screen.virtual_desktop(), ""
        else:
            chosen = find_display(screen.displays(), display)
            region, display_id = chosen.bounds, chosen.display_id
        image = screen.grab(region)
        if image.mode != "RGB":
            image = image.convert("RGB")
        image = redact(image, region, self._safety.redact)
        if image.size != (region.width, region.height):
            # A backend whose capture is not one pixel per physical pixel: make it so,
            # or the coordinates read off the image would miss.
            image = image.resize((region.width, region.height))
        return Screenshot(encode_png(image), region, display_id)

    async def act(self, action: a.Action) -> a.ActionResult:
        """Run one action whose points are in screen pixels; its result as the
        executor reports it (REJECTED by the guard, FAILED, or OK)."""
        return await self._on_worker(lambda: self._run(action))

    def _run(self, action: a.Action) -> a.ActionResult:
        desktop = self._backend.screen.virtual_desktop()
        frame = SentFrame(
            frame_id=SCREEN_FRAME_ID,
            width=desktop.width,
            height=desktop.height,
            encoding=ImageEncoding.PNG,
            data=b"",
            display_id="",
            source=desktop,
            scale_factor=1.0,
            captured_at=datetime.now(UTC),
        )
        self._executor.remember_frame(frame)  # the desktop may have changed since
        identified = dataclasses.replace(
            _in_frame(action, desktop), action_id=uuid.uuid4().hex, frame_id=SCREEN_FRAME_ID
        )
        halt = Halt()
        self._current = halt
        try:
            stopped = self._halt.state  # after _current is set: a stop cannot slip by
            if stopped is not None:
                halt.trigger(stopped.reason, stopped.message)
            report = self._executor.execute([identified], halt)
        finally:
            self._current = None
        (result,) = report.results
        if report.release_error:
            return dataclasses.replace(result, error=f"{result.error}; {report.release_error}")
        return result

    def close(self) -> None:
        """Release whatever is held, stop the worker and close the backend, once (the
        server is stopping: by its host, a signal or an error)."""
        if self._closed:
            return
        self._closed = True
        self._worker.shutdown(wait=True)
        try:
            self._executor.release_all()
        finally:
            self._backend.close()


def _in_frame(action: a.Action, desktop: Region) -> a.Action:
    """The action with its screen points moved into the "screen" frame's pixels."""

    def shift(point: a.FramePoint) -> a.FramePoint:
        return a.FramePoint(point.x - desktop.x, point.y - desktop.y)

    if isinstance(action, a.Click | a.Move | a.Scroll):
        return dataclasses.replace(action, point=shift(action.point))
    if isinstance(action, a.Drag):
        return dataclasses.replace(action, path=tuple(shift(p) for p in action.path))
    return action
