"""Model-shaped load: sessions that stream 1080p screens the way a real client does.

The plumbing benchmarks send one pre-encoded full frame per step to a policy that
never looks at it. A real session instead sends a full frame first, then delta
frames (Frame.base_frame_id = the previous frame) whose patches are what changed:
text typed into a window, a menu opening, a clock ticking; and, often, no patch at
all (an unchanged screen). The daemon rebuilds each delta into a full frame and a
ModelPolicy makes the model's image of it, so this is what costs CPU and memory.

What makes the load realistic, and still cheap for the client (its CPU shares the
machine with the daemon's, which is what is measured):

- Screens (`ScreenKit`): a few 1920x1080 desktops, pre-encoded as the client would
  (holodesk.values.png: indexed when exact, else RGB): a gradient wallpaper, a
  text-dense document and spreadsheet, and a code editor with syntax-coloured,
  anti-aliased TrueType text, so a screen has thousands of colours (not a
  256-colour screen that indexed PNG stores for a third of the cost).
- Changed steps: one patch from a pre-encoded pool (a line of coloured code being
  typed, a word in the document, now and then a pop-up menu) plus a per-session
  stamp (the session's name and step in the status bar, rendered on the fly: a
  small patch, ~0.3 ms), so no two sessions ever hold the same screen. The daemon
  caches model images by content and shares them across sessions; identical
  screens in 1000 sessions would hit that cache as no real fleet does.
- The first frame is one of the few pre-encoded screens, at once followed by a
  delta that stamps the session (both are set-up steps, never measured).
- Unchanged steps: a delta with no patches.

`run_level` drives N such sessions against one server process in phases: set-up,
then changed steps only, then unchanged steps only (every session steps back to
back for the phase's seconds, at least twice); a phase ends when its last session
is done, so the server does nothing else between the phase's two readings of its
CPU time (from /proc): divided by the phase's steps, its CPU per step of that kind. Errors
are counted, never raised; a server that dies (the OOM killer) is reported as
such, and a phase that stalls ends at its time limit, so a run never hangs.
"""

from __future__ import annotations

import asyncio
import contextlib
import math
import random
import time
import zlib
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

import grpc
from PIL import Image, ImageDraw, ImageFont

from holodesk.proto.v1 import action_pb2, agent_pb2, agent_pb2_grpc, frame_pb2, geometry_pb2
from holodesk.values.png import encode_png
from tests.bench.common import Figure, cpu_seconds, desktop_image, latency_summary, rss_bytes
from tests.bench.load import (
    GUARD_S,
    SessionError,
    close_channels,
    error_key,
    exchange,
    open_channels,
)

WIDTH, HEIGHT = 1920, 1080
FONT_FILES = (
    "/usr/share/fonts/truetype/dejavu/DejaVuSansMono.ttf",
    "DejaVuSansMono.ttf",
)
# Where things are on the screens (every base screen has the same layout).
EDITOR = (820, 90, 1900, 900)  # left, top, right, bottom
EDITOR_LINE = 19
EDITOR_TEXT_X = EDITOR[0] + 64
STATUS = (0, HEIGHT - 30, WIDTH, HEIGHT)
STAMP = (WIDTH - 420, HEIGHT - 26, 300, 20)  # x, y, width, height (in the status bar)

# Syntax colours of a dark editor theme: saturated, so anti-aliasing against the
# background makes many distinct colours.
_THEME = {
    "keyword": (198, 120, 221),
    "name": (97, 175, 239),
    "string": (152, 195, 121),
    "number": (209, 154, 102),
    "comment": (92, 99, 112),
    "plain": (171, 178, 191),
    "type": (229, 192, 123),
    "error": (224, 108, 117),
}
_EDITOR_BG = (40, 44, 52)
_GUTTER_BG = (33, 37, 43)
_KEYWORDS = ("def", "return", "async", "await", "for", "in", "if", "else", "with", "class")
_NAMES = (
    "session",
    "frame",
    "decode",
    "resize",
    "patches",
    "window",
    "engine",
    "policy",
    "observation",
    "delta",
    "cache",
    "budget",
)


@cache
def font(size: int) -> ImageFont.FreeTypeFont | ImageFont.ImageFont:
    """A TrueType monospace font (anti-aliased); Pillow's own scalable one if absent."""
    for path in FONT_FILES:
        with contextlib.suppress(OSError):
            return ImageFont.truetype(path, size)
    return ImageFont.load_default(size=size)


def code_line(rng: random.Random) -> list[tuple[str, tuple[int, int, int]]]:
    """One line of plausible code as (token, colour) runs."""
    kind = rng.random()
    indent = "    " * rng.randint(0, 3)
    if kind < 0.12:
        words = " ".join(rng.choice(_NAMES) for _ in range(rng.randint(3, 8)))
        return [(indent + "# " + words, _THEME["comment"])]
    runs: list[tuple[str, tuple[int, int, int]]] = [(indent, _THEME["plain"])]
    if kind < 0.3:
        runs += [
            (rng.choice(_KEYWORDS) + " ", _THEME["keyword"]),
            (rng.choice(_NAMES), _THEME["name"]),
            ("(", _THEME["plain"]),
            (rng.choice(_NAMES), _THEME["plain"]),
            (": ", _THEME["plain"]),
            (rng.choice(("int", "str", "Frame", "bytes")), _THEME["type"]),
            ("):", _THEME["plain"]),
        ]
    else:
        runs += [
            (rng.choice(_NAMES), _THEME["plain"]),
            (" = ", _THEME["plain"]),
            (rng.choice(_NAMES) + ".", _THEME["name"]),
            (rng.choice(_NAMES), _THEME["name"]),
            ("(", _THEME["plain"]),
            (f'"{rng.choice(_NAMES)}-{rng.randint(0, 999)}"', _THEME["string"]),
            (", ", _THEME["plain"]),
            (str(rng.randint(0, 65535)), _THEME["number"]),
            (")", _THEME["plain"]),
        ]
    return runs


def draw_runs(
    draw: ImageDraw.ImageDraw,
    xy: tuple[int, int],
    runs: Sequence[tuple[str, tuple[int, int, int]]],
    size: int = 14,
) -> int:
    """Draw coloured text runs left to right; the x where the text ends."""
    x, y = xy
    face = font(size)
    for text, colour in runs:
        draw.text((x, y), text, fill=colour, font=face)
        x += math.ceil(draw.textlength(text, font=face))
    return x


def base_screen(seed: int) -> Image.Image:
    """A 1920x1080 desktop: gradient wallpaper, the dense document and spreadsheet
    windows of common.desktop_image, a code editor with coloured text on top, and a
    status bar."""
    rng = random.Random(1000 + seed)
    screen = desktop_image(WIDTH, HEIGHT, seed)
    # A dock on the left: a gradient with round coloured icons (more than 256 colours
    # by itself, as wallpapers, photos and shadows have on real screens).
    ramp = Image.linear_gradient("L").resize((56, HEIGHT - 30))
    dock = Image.merge("RGB", (ramp.point(_dim), ramp.point(_dim), ramp.point(_bright)))
    screen.paste(dock, (0, 0))
    icons = ImageDraw.Draw(screen)
    for row in range(12):
        colour = (rng.randint(70, 250), rng.randint(70, 250), rng.randint(70, 250))
        icons.ellipse((10, 14 + row * 56, 46, 50 + row * 56), fill=colour, outline=(20, 20, 30))
    draw = ImageDraw.Draw(screen)
    left, top, right, bottom = EDITOR
    draw.rectangle((left, top, right, bottom), fill=_EDITOR_BG, outline=(20, 20, 24))
    draw.rectangle((left, top, right, top + 30), fill=(30, 33, 39))
    draw_runs(draw, (left + 12, top + 7), [(f"policy_{seed}.py — holodesk", (200, 200, 200))], 13)
    draw.rectangle((left, top + 30, left + 54, bottom), fill=_GUTTER_BG)
    y = top + 38
    number = 1
    while y + EDITOR_LINE < bottom - 4:
        draw_runs(draw, (left + 8, y), [(f"{number:>4}", (99, 109, 131))], 13)
        draw_runs(draw, (EDITOR_TEXT_X, y), code_line(rng))
        y += EDITOR_LINE
        number += 1
    draw.rectangle(STATUS, fill=(0, 122, 204))
    status = [("main  ✓ 0 errors  UTF-8  Python 3.12", (255, 255, 255))]
    draw_runs(draw, (12, STATUS[1] + 6), status, 13)
    return screen


def _dim(value: int) -> int:
    return 20 + value // 6


def _bright(value: int) -> int:
    return 60 + value // 2


@dataclass(frozen=True)
class Patch:
    """A pre-encoded patch: PNG bytes for the rectangle at (x, y)."""

    x: int
    y: int
    width: int
    height: int
    data: bytes

    def message(self) -> frame_pb2.FramePatch:
        return frame_pb2.FramePatch(
            rect=geometry_pb2.Rect(x=self.x, y=self.y, width=self.width, height=self.height),
            encoding=frame_pb2.IMAGE_ENCODING_PNG,
            data=self.data,
        )


def typing_patches(count: int, seed: int = 0) -> list[Patch]:
    """A line of coloured code typed a few characters per step (each patch: the line
    so far, as the client's delta encoder crops it), with now and then a pop-up
    completion menu over the editor."""
    rng = random.Random(seed)
    patches: list[Patch] = []
    line_y = EDITOR[1] + 38 + 20 * EDITOR_LINE
    runs = code_line(rng) + code_line(rng)
    text = "".join(t for t, _ in runs)
    typed = 0
    while len(patches) < count:
        if len(patches) % 6 == 5:
            patches.append(_menu_patch(rng, line_y + EDITOR_LINE))
            continue
        typed = min(len(text), typed + rng.randint(2, 6))
        if typed >= len(text):
            runs, typed = code_line(rng) + code_line(rng), 0
            text = "".join(t for t, _ in runs)
            line_y += EDITOR_LINE
            if line_y > EDITOR[3] - 2 * EDITOR_LINE:
                line_y = EDITOR[1] + 38 + 20 * EDITOR_LINE
            continue
        width = EDITOR[2] - EDITOR_TEXT_X - 8
        image = Image.new("RGB", (width, EDITOR_LINE), _EDITOR_BG)
        draw = ImageDraw.Draw(image)
        shown, left = [], typed
        for token, colour in runs:
            if left <= 0:
                break
            shown.append((token[:left], colour))
            left -= len(token)
        end = draw_runs(draw, (0, 1), shown)
        draw.rectangle((end + 1, 2, end + 2, EDITOR_LINE - 2), fill=(82, 139, 255))  # caret
        crop = image.crop((0, 0, min(width, end + 4), EDITOR_LINE))
        patches.append(Patch(EDITOR_TEXT_X, line_y, crop.width, crop.height, encode_png(crop)))
    return patches


def _menu_patch(rng: random.Random, top: int) -> Patch:
    """A completion menu: a shadowed box of coloured entries with icons."""
    width, height = 380, 230
    image = Image.new("RGB", (width, height), (33, 37, 43))
    draw = ImageDraw.Draw(image)
    draw.rectangle((0, 0, width - 1, height - 1), outline=(70, 80, 100))
    for row in range(10):
        y = 6 + row * 22
        if row == 0:
            draw.rectangle((2, y - 2, width - 3, y + 19), fill=(44, 49, 60))
        colour = rng.choice(list(_THEME.values()))
        draw.ellipse((8, y + 3, 20, y + 15), fill=colour)
        name = [(rng.choice(_NAMES), _THEME["name"]), ("()", _THEME["plain"])]
        draw_runs(draw, (28, y), name, 13)
        kind = rng.choice(("method", "field", "class"))
        draw_runs(draw, (250, y), [(kind, _THEME["comment"])], 12)
    x = EDITOR_TEXT_X + rng.randint(40, 400)
    return Patch(x, top, width, height, encode_png(image))


def stamp_patch(name: str, step: int) -> Patch:
    """The session's own pixels this step (its name and step in the status bar, in
    colour): no two sessions, and no two steps of one, send the same screen."""
    x, y, width, height = STAMP
    image = Image.new("RGB", (width, height), (0, 122, 204))
    draw = ImageDraw.Draw(image)
    hue = (zlib.crc32(name.encode()) + 37 * step) % 200
    draw_runs(
        draw,
        (4, 2),
        [(f"{name} ", (255, 255, 255)), (f"step {step}", (255, 220 - hue // 4, 55 + hue))],
        13,
    )
    return Patch(x, y, width, height, encode_png(image))


@dataclass(frozen=True)
class ScreenKit:
    """Everything model-shaped sessions send, made once before anything is timed."""

    bases: tuple[bytes, ...]
    patches: tuple[Patch, ...]
    width: int = WIDTH
    height: int = HEIGHT

    @classmethod
    def make(cls, bases: int = 3, patches: int = 24) -> ScreenKit:
        return cls(
            tuple(encode_png(base_screen(seed)) for seed in range(bases)),
            tuple(typing_patches(patches)),
        )

    @property
    def base_bytes_mean(self) -> float:
        return sum(len(b) for b in self.bases) / len(self.bases)

    @property
    def patch_bytes_mean(self) -> float:
        return sum(len(p.data) for p in self.patches) / len(self.patches)

    def describe(self) -> dict[str, Any]:
        colours = []
        for data in self.bases:
            from io import BytesIO

            with Image.open(BytesIO(data)) as image:
                found = image.convert("RGB").getcolors(1 << 24)
                colours.append(len(found) if found else 0)
        return {
            "size": [self.width, self.height],
            "base_screens": len(self.bases),
            "base_bytes_mean": self.base_bytes_mean,
            "base_colours": colours,
            "patches": len(self.patches),
            "patch_bytes_mean": self.patch_bytes_mean,
        }


# --- sessions -----------------------------------------------------------------------------


class DeltaSession:
    """One RunSession stream sending full + delta frames, as the real client does."""

    def __init__(self, channel: grpc.aio.Channel, kit: ScreenKit, name: str, index: int) -> None:
        self._stub = agent_pb2_grpc.AgentServiceStub(channel)
        self._kit = kit
        self.name = name
        self.index = index
        self.steps = 0
        self._frame_id = ""
        self._pending: list[str] = []
        self._call: grpc.aio.StreamStreamCall | None = None

    async def start(self) -> None:
        self._call = self._stub.RunSession()
        bounds = geometry_pb2.Rect(x=0, y=0, width=self._kit.width, height=self._kit.height)
        start = agent_pb2.SessionStart(
            task="benchmark: a model-shaped session",
            displays=[
                geometry_pb2.Display(display_id="0", bounds=bounds, scale_factor=1.0, primary=True)
            ],
        )
        response = await self._exchange(agent_pb2.RunSessionRequest(start=start))
        if response.WhichOneof("event") != "started":
            raise SessionError(f"{self.name}: expected started, got {response}")
        if not response.started.frame_spec.accept_deltas:
            raise SessionError(f"{self.name}: the server does not accept delta frames")

    async def full(self) -> float:
        """The stream's first frame: one of the pre-encoded screens, whole."""
        frame = self._frame("")
        frame.encoding = frame_pb2.IMAGE_ENCODING_PNG
        frame.data = self._kit.bases[self.index % len(self._kit.bases)]
        return await self._observe(frame)

    async def changed(self) -> float:
        """A delta: the next pool patch (typed text, a menu) and the session's stamp."""
        frame = self._frame(self._frame_id)
        pool = self._kit.patches
        frame.patches.append(pool[(self.index * 7 + self.steps) % len(pool)].message())
        frame.patches.append(stamp_patch(self.name, self.steps).message())
        return await self._observe(frame)

    async def stamp(self) -> float:
        """A delta with only the session's stamp (its first frame made its own)."""
        frame = self._frame(self._frame_id)
        frame.patches.append(stamp_patch(self.name, self.steps).message())
        return await self._observe(frame)

    async def unchanged(self) -> float:
        """A delta with no patches: the screen did not change."""
        return await self._observe(self._frame(self._frame_id))

    def _frame(self, base: str) -> frame_pb2.Frame:
        frame_id = f"{self.name}-{self.steps}"
        return frame_pb2.Frame(
            frame_id=frame_id,
            size=geometry_pb2.Size(width=self._kit.width, height=self._kit.height),
            source=geometry_pb2.Rect(x=0, y=0, width=self._kit.width, height=self._kit.height),
            scale_factor=1.0,
            base_frame_id=base,
        )

    async def _observe(self, frame: frame_pb2.Frame) -> float:
        observation = agent_pb2.Observation(
            results=[
                action_pb2.ActionResult(action_id=a, status=action_pb2.ACTION_STATUS_OK)
                for a in self._pending
            ],
        )
        observation.frame.CopyFrom(frame)
        started = time.perf_counter()
        response = await self._exchange(agent_pb2.RunSessionRequest(observation=observation))
        elapsed = time.perf_counter() - started
        if response.WhichOneof("event") != "actions":
            raise SessionError(f"{self.name} step {self.steps + 1}: got {response}"[:300])
        self._pending = [a.action_id for a in response.actions.actions]
        self._frame_id = frame.frame_id
        self.steps += 1
        return elapsed

    async def close(self) -> None:
        """Half-close and read to the end, as a client that stops does."""
        call, self._call = self._call, None
        if call is None:
            return
        await asyncio.wait_for(call.done_writing(), GUARD_S)
        while await asyncio.wait_for(call.read(), GUARD_S) is not grpc.aio.EOF:
            pass
        code = await call.code()
        if code != grpc.StatusCode.OK:
            raise SessionError(f"{self.name}: stream ended {code.name}")

    def cancel(self) -> None:
        call, self._call = self._call, None
        if call is not None:
            call.cancel()

    async def _exchange(self, request: agent_pb2.RunSessionRequest) -> agent_pb2.RunSessionResponse:
        if self._call is None:
            raise SessionError(f"{self.name}: not started (or already failed)")
        return await exchange(self._call, request, self.name)


# --- phases and levels ------------------------------------------------------------------


@dataclass
class PhaseResult:
    """One phase of a level: every live session stepped (one kind of step) until the
    phase's time was up, and at least `min_steps` times."""

    kind: str
    sessions: int
    min_steps: int
    steps: int = 0
    wall_s: float = 0.0
    server_cpu_s: float = 0.0
    latencies: list[float] = field(default_factory=list)
    errors: Counter[str] = field(default_factory=Counter)
    rss_after: int = 0
    timed_out: bool = False

    @property
    def steps_per_s(self) -> float:
        return self.steps / self.wall_s if self.wall_s > 0 else 0.0

    @property
    def cpu_ms_per_step(self) -> float:
        return 1000 * self.server_cpu_s / self.steps if self.steps else math.nan

    def to_json(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "sessions": self.sessions,
            "min_steps": self.min_steps,
            "steps": self.steps,
            "wall_s": self.wall_s,
            "steps_per_s": self.steps_per_s,
            "server_cpu_s": self.server_cpu_s,
            "cpu_ms_per_step": self.cpu_ms_per_step if self.steps else None,
            "latency": latency_summary(self.latencies),
            "errors": dict(self.errors),
            "rss_after": self.rss_after,
            "timed_out": self.timed_out,
        }


@dataclass
class LevelResult:
    """Model-shaped sessions at one concurrency against one server process."""

    label: str
    sessions: int
    phases: dict[str, PhaseResult] = field(default_factory=dict)
    rss_start: int = 0
    rss_peak: int = 0
    # None while the server lived to the end; else its exit status (-9: killed).
    server_exit: int | None = None
    opened: int = 0

    @property
    def errors(self) -> Counter[str]:
        total: Counter[str] = Counter()
        for phase in self.phases.values():
            total.update(phase.errors)
        return total

    @property
    def error_count(self) -> int:
        return sum(self.errors.values())

    @property
    def healthy(self) -> bool:
        """No error, the daemon alive to the end, every session opened."""
        return self.error_count == 0 and not self.died and self.opened == self.sessions

    @property
    def died(self) -> bool:
        return self.server_exit is not None

    def to_json(self) -> dict[str, Any]:
        return {
            "label": self.label,
            "sessions": self.sessions,
            "opened": self.opened,
            "rss_start": self.rss_start,
            "rss_peak": self.rss_peak,
            "server_exit": self.server_exit,
            "errors": dict(self.errors),
            "phases": {k: p.to_json() for k, p in self.phases.items()},
        }


_FAILURES = (grpc.aio.AioRpcError, SessionError, TimeoutError, OSError)


def peak_rss(pid: int) -> int:
    """The process's peak resident memory so far (VmHWM), from /proc."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) * 1024
    return 0


class _Watch:
    """The server process: its CPU, RSS and whether it still lives."""

    def __init__(self, pid: int, poll: Callable[[], int | None]) -> None:
        self.pid = pid
        self._poll = poll
        self.exit: int | None = None

    def alive(self) -> bool:
        if self.exit is None:
            self.exit = self._poll()
        return self.exit is None

    def cpu(self) -> float:
        with contextlib.suppress(OSError):
            return cpu_seconds(self.pid)
        return math.nan

    def rss(self) -> int:
        with contextlib.suppress(OSError, RuntimeError):
            return rss_bytes(self.pid)
        return 0

    def peak(self) -> int:
        with contextlib.suppress(OSError):
            return peak_rss(self.pid)
        return 0


async def _phase(
    kind: str,
    sessions: list[DeltaSession],
    min_steps: int,
    seconds: float,
    watch: _Watch,
    limit_s: float,
) -> PhaseResult:
    """Every live session steps (`kind`) at least `min_steps` times and until `seconds`
    have passed; the phase ends when the last one is done, so the server did this
    phase's work and nothing else between the two CPU readings. Failed sessions are
    dropped from `sessions` (their error counted)."""
    result = PhaseResult(kind, len(sessions), min_steps)
    failed: set[int] = set()
    deadline = time.perf_counter() + seconds

    async def drive(position: int, session: DeltaSession) -> None:
        step = getattr(session, kind)
        done = 0
        try:
            while done < min_steps or time.perf_counter() < deadline:
                result.latencies.append(await step())
                result.steps += 1
                done += 1
        except _FAILURES as exc:
            result.errors[error_key(exc)] += 1
            failed.add(position)
            session.cancel()

    async def stop_if_dead() -> None:
        # A child's exit is not awaitable here (Popen, not asyncio's subprocess): poll.
        while watch.alive():  # noqa: ASYNC110
            await asyncio.sleep(0.25)

    cpu_before = watch.cpu()
    began = time.perf_counter()
    work: asyncio.Future[Any] = asyncio.gather(*(drive(i, s) for i, s in enumerate(sessions)))
    watcher: asyncio.Future[Any] = asyncio.create_task(stop_if_dead())
    done, _ = await asyncio.wait({work, watcher}, timeout=limit_s, return_when="FIRST_COMPLETED")
    if work not in done:
        # The server died, or the phase stalled: end every session now (counted).
        result.timed_out = watch.alive()
        reason = "phase time limit" if result.timed_out else f"server exited ({watch.exit})"
        for position, session in enumerate(sessions):
            if position not in failed:
                session.cancel()
        work.cancel()
        with contextlib.suppress(asyncio.CancelledError, *_FAILURES):
            await work
        result.errors[f"{reason}: sessions stopped"] += len(sessions) - len(failed)
        failed.update(range(len(sessions)))
    watcher.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await watcher
    result.wall_s = time.perf_counter() - began
    result.server_cpu_s = watch.cpu() - cpu_before
    result.rss_after = watch.rss()
    sessions[:] = [s for i, s in enumerate(sessions) if i not in failed]
    return result


async def run_level(
    label: str,
    address: str,
    pid: int,
    poll: Callable[[], int | None],
    kit: ScreenKit,
    *,
    sessions: int,
    changed_s: float,
    unchanged_s: float,
    channels: int,
    min_steps: int = 2,
    limit_s: float = 900.0,
    setup_parallel: int = 64,
) -> LevelResult:
    """Set up `sessions` sessions (start, full frame, stamp), then the changed phase,
    then the unchanged one (each `min_steps` steps per session at least, and for
    `changed_s` / `unchanged_s` seconds); close them all. Nothing raises: failures
    are counted."""
    watch = _Watch(pid, poll)
    level = LevelResult(label, sessions)
    pool = open_channels(address, max(1, min(channels, sessions)))
    opened: list[DeltaSession] = []
    try:
        # One session through every kind of step first, so one-time allocations
        # (thread pools, codecs, arenas) are not billed to the sessions measured.
        with contextlib.suppress(*_FAILURES):
            warm = DeltaSession(pool[0], kit, "warm-up", sessions)
            await warm.start()
            await warm.full()
            await warm.stamp()
            for _ in range(3):
                await warm.changed()
            await warm.unchanged()
            await warm.close()
        await asyncio.sleep(0.3)
        level.rss_start = watch.rss()
        # Named alike whatever the server, so every server gets the same frames.
        everyone = [
            DeltaSession(pool[i % len(pool)], kit, f"s{sessions}-{i}", i) for i in range(sessions)
        ]
        errors: Counter[str] = Counter()
        gate = asyncio.Semaphore(setup_parallel)

        async def begin(session: DeltaSession) -> DeltaSession | None:
            async with gate:
                try:
                    await session.start()
                    await session.full()
                    await session.stamp()
                except _FAILURES as exc:
                    errors[error_key(exc)] += 1
                    session.cancel()
                    return None
            return session

        began = time.perf_counter()
        setup = asyncio.gather(*(begin(s) for s in everyone))
        try:
            started = await asyncio.wait_for(setup, limit_s)
        except TimeoutError:
            started = []
            errors["set-up time limit"] += 1
            for session in everyone:
                session.cancel()
        opened = [s for s in started if s is not None]
        level.opened = len(opened)
        level.phases["setup"] = PhaseResult(
            "setup",
            sessions,
            2,
            steps=2 * len(opened),
            wall_s=time.perf_counter() - began,
            errors=errors,
            rss_after=watch.rss(),
        )
        for kind, seconds in (("changed", changed_s), ("unchanged", unchanged_s)):
            if not opened or not watch.alive():
                level.phases[kind] = PhaseResult(kind, 0, min_steps)
                continue
            level.phases[kind] = await _phase(kind, opened, min_steps, seconds, watch, limit_s)
        level.rss_peak = watch.peak()
        closing: Counter[str] = Counter()

        async def close(session: DeltaSession) -> None:
            try:
                await session.close()
            except _FAILURES as exc:
                closing[error_key(exc)] += 1
                session.cancel()

        if watch.alive():
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(asyncio.gather(*(close(s) for s in opened)), 120)
        if closing:
            level.phases["close"] = PhaseResult("close", len(opened), 0, errors=closing)
    finally:
        for session in opened:
            session.cancel()
        await close_channels(pool)
        watch.alive()
        level.server_exit = watch.exit
    return level


# --- levels against fresh server processes -------------------------------------------------

MODEL = "model"
BASELINE = "instant"
LABELS = {
    MODEL: "holodesk, ModelPolicy (0-latency engine)",
    BASELINE: "holodesk, instant policy (plumbing only)",
}


# Screens an engine's processor cache keeps per session: a deployment sizes vLLM's
# mm_processor_cache_gb for its sessions' windows (holotron's: 3 screens, and the one
# the next step adds), ~14-16 MiB a processed 1080p screen: ~5.5 GiB per hundred
# sessions, a little over vLLM's default 4 GiB (~256 screens).
ENGINE_CACHE_ITEMS_PER_SESSION = 4
# vLLM's default, untouched (`--processor-cache-items 256`).
VLLM_DEFAULT_CACHE_ITEMS = 256


def engine_cache_items(sessions: int) -> int:
    """Screens the emulated engine keeps processed for `sessions`: a cache sized for
    them, never below vLLM's default. With vLLM's default kept at a hundred sessions
    and more, their windows thrash its LRU cache: every window screen is then
    processed again at every step, and the daemon unpacks each for it."""
    return max(VLLM_DEFAULT_CACHE_ITEMS, ENGINE_CACHE_ITEMS_PER_SESSION * sessions)


async def model_shaped_levels(
    kit: ScreenKit,
    levels: Sequence[int],
    *,
    dialect: str = "holotron",
    changed_s: float = 10.0,
    unchanged_s: float = 5.0,
    min_steps: int = 2,
    channels: int = 1000,
    cpus: Sequence[int] | None = None,
    limit_s: float = 900.0,
    decoded_screens_mb: int | None = None,
    processor_cache_items: int | None = None,
) -> dict[int, dict[str, LevelResult]]:
    """Each level against a fresh daemon with the ModelPolicy and a fresh one with the
    instant policy (the plumbing-only baseline: same frames, same delta rebuilds, no
    model image or prompt), one after the other, so they never share the cores. Fresh
    processes, so each level's peak RSS is its own."""
    from tests.bench.daemon_proc import server_process

    results: dict[int, dict[str, LevelResult]] = {}
    for sessions in levels:
        cache_items = processor_cache_items or engine_cache_items(sessions)
        print(f"   {sessions} sessions: the engine keeps {cache_items} screens", flush=True)
        for policy in (BASELINE, MODEL):
            with server_process(
                "holodesk",
                policy=policy,
                dialect=dialect,
                max_sessions=sessions + 16,
                cpus=cpus,
                decoded_screens_mb=decoded_screens_mb,
                processor_cache_items=cache_items,
            ) as server:
                level = await run_level(
                    policy,
                    server.address,
                    server.pid,
                    server.process.poll,
                    kit,
                    sessions=sessions,
                    changed_s=changed_s,
                    unchanged_s=unchanged_s,
                    min_steps=min_steps,
                    channels=channels,
                    limit_s=limit_s,
                )
            results.setdefault(sessions, {})[policy] = level
            print(f"   {describe_level(level)}", flush=True)
    return results


def describe_level(level: LevelResult) -> str:
    parts = [f"{level.sessions:>5} sessions, {level.label:<8}"]
    for kind in ("changed", "unchanged"):
        phase = level.phases.get(kind)
        if phase is not None and phase.steps:
            parts.append(
                f"{kind} {phase.cpu_ms_per_step:6.1f} ms CPU/step {phase.steps_per_s:7.1f} steps/s"
            )
    parts.append(f"RSS peak {level.rss_peak / 2**20:,.0f} MiB")
    parts.append(f"errors {level.error_count}")
    if level.died:
        parts.append(f"SERVER DIED (exit {level.server_exit})")
    return "  ".join(parts)


def died_note(level: LevelResult) -> str:
    if not level.died:
        return ""
    how = "killed (SIGKILL: the OOM killer?)" if level.server_exit == -9 else "exited"
    return f"daemon {how}, status {level.server_exit}"


def errors_figure(
    prefix: str, model: LevelResult, plain: LevelResult, baseline: str, *, many: bool
) -> Figure:
    """Errors of a model-shaped level against the instant policy's; at the largest
    level (`many`) the target is none at all, the daemon alive, every session open."""
    causes = (died_note(model), *(f"{c}x {e}" for e, c in model.errors.most_common(3)))
    return Figure(
        f"{prefix}: errors",
        float(model.error_count),
        "errors",
        float(plain.error_count),
        baseline,
        target="no error, no OOM" if many else "",
        met=model.healthy if many else None,
        note="; ".join(part for part in causes if part),
    )


def add_model_shaped_args(parser: Any) -> None:
    """The options both model-shaped benchmarks take."""
    parser.add_argument(
        "--skip-plumbing", action="store_true", help="only the model-shaped sessions"
    )
    parser.add_argument(
        "--model-sessions",
        type=int,
        nargs="*",
        default=[1, 10, 100, 1000],
        help="levels of model-shaped sessions (none: skip them; default 1 10 100 1000)",
    )
    parser.add_argument(
        "--model-dialect", default="holotron", help="dialect of the model-shaped ModelPolicy"
    )
    parser.add_argument(
        "--decoded-screens-mb",
        type=int,
        help="the daemons' --decoded-screens-mb (default: theirs); packed, a 1080p screen "
        "of this benchmark's text is ~0.3 MiB",
    )
    parser.add_argument(
        "--processor-cache-items",
        type=int,
        help="screens the engine keeps processed, at every level (default: "
        f"{ENGINE_CACHE_ITEMS_PER_SESSION} per session, at least "
        f"{VLLM_DEFAULT_CACHE_ITEMS}: see engine_cache_items; "
        f"{VLLM_DEFAULT_CACHE_ITEMS} is vLLM's default mm_processor_cache_gb)",
    )
