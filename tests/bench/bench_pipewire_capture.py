"""Wayland capture: the portal's PipeWire stream and KWin's ScreenShot2 vs a Screenshot call each.

PipeWire side: a real headless GNOME (mutter 43, xdg-desktop-portal-gnome,
PipeWire), one RemoteDesktop session (its dialog answered by the test's
GnomePerson), frames read by holodesk.platform.wayland.pipewire (a gst-launch
pipewiresrc child). Measured: a whole-desktop grab (1280x800) p50/p99; the
latency from typing a key into the Tk probe to the first grab that shows it;
frames/s the stream delivers while the screen changes continuously.

KWin side: a real headless KDE (KWin 5.27 --virtual, which casts no frames, and
started with KWIN_SCREENSHOT_NO_PERMISSION_CHECKS=1), the portal route's auto
capture reading KWin's ScreenShot2 (raw pixels through a pipe): the same grab and
typing figures.

Baseline, same run: one org.freedesktop.portal.Screenshot call per frame (PNG
written, read, decoded, deleted), 1280x800. Neither bare mutter (its portal
backend forwards Screenshot to gnome-shell) nor this KWin install (its QML
dialog modules are absent) serves Screenshot, so the baseline runs against the
stand-in portal on Xvfb (tests/support/portal_standin.py), which writes a real
PNG per call as GNOME's does: the costs compared are the route's own (D-Bus
request, PNG encode and decode, file round trip) against a frame copy.

    uv run python -m tests.bench.bench_pipewire_capture [--quick]
"""

from __future__ import annotations

import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

from holodesk.platform.base import Backend, Region
from holodesk.platform.wayland.cast_screen import CastScreen
from holodesk.platform.wayland.dbus import PortalBus
from holodesk.platform.wayland.screenshot import PortalScreenshots, WaylandScreen
from holodesk.platform.wayland.tokens import TokenStore
from tests.bench.common import Figure, Report, latency_summary, parser, reproduce_command
from tests.platform.conformance import TkTarget
from tests.platform.wayland.desktops import HeadlessDesktop
from tests.platform.wayland.gnome_person import GnomePerson, open_allowed
from tests.platform.wayland.kde_portal import open_kde_route
from tests.support.dbus_session import private_session_bus
from tests.support.portal import PortalStandin
from tests.support.probe import ProbeApp
from tests.support.xvfb import xvfb

NAME = "pipewire_capture"
MODULE = "tests.bench.bench_pipewire_capture"
SIZE = (1280, 800)


def _grab_times(backend: Backend, count: int) -> list[float]:
    desktop = backend.screen.virtual_desktop()
    times = []
    for _ in range(count):
        start = time.perf_counter()
        backend.screen.grab(desktop)
        times.append(time.perf_counter() - start)
    return times


def _typing_latencies(
    backend: Backend, probe: ProbeApp, count: int
) -> tuple[list[float], float | None]:
    """Seconds from each typed key to the first grab showing it; the stream's frames/s
    (None for a screen without a stream)."""
    target = TkTarget(backend, probe)
    entry = probe.widgets["entry"]
    box = Region(entry.x + 2, entry.y + 2, entry.width - 4, entry.height - 4)
    target.focus("line")
    latencies = []
    frames_before = backend.screen.frames() if isinstance(backend.screen, CastScreen) else 0
    started = time.perf_counter()
    for index in range(count):
        if index % 20 == 0:
            backend.input.key_chord(["ctrl", "a"])
            backend.input.key_chord(["backspace"])
            time.sleep(0.2)
        before = backend.screen.grab(box).tobytes()
        start = time.perf_counter()
        backend.input.type_text("W")
        while backend.screen.grab(box).tobytes() == before:
            if time.perf_counter() - start > 10:
                raise RuntimeError("the typed key never showed in the stream")
            time.sleep(0.001)
        latencies.append(time.perf_counter() - start)
    elapsed = time.perf_counter() - started
    if not isinstance(backend.screen, CastScreen):
        return latencies, None
    return latencies, (backend.screen.frames() - frames_before) / elapsed


def _kwin_figures(grabs: int, keys: int) -> tuple[dict[str, float], dict[str, float]]:
    """Whole-desktop grab and key-to-grab latencies on a headless KWin (ScreenShot2)."""
    desktop = HeadlessDesktop.start("kwin", *SIZE, screenshots_for_anyone=True)
    try:
        state = Path(tempfile.mkdtemp(prefix="holodesk-bench-kde-"))
        backend = open_kde_route(desktop, TokenStore(state / "t.json"))
        if not isinstance(backend.screen, WaylandScreen):
            raise RuntimeError("this KWin's stream sent frames: the route did not take ScreenShot2")
        probe = ProbeApp.start(desktop.x_display, state / "probe.log", x=40, y=30)
        try:
            time.sleep(1.0)
            grab = latency_summary(_grab_times(backend, grabs))
            typing = latency_summary(_typing_latencies(backend, probe, keys)[0])
        finally:
            probe.stop()
            backend.close()
    finally:
        desktop.stop()
    return grab, typing


def _screenshot_times(count: int) -> list[float]:
    with private_session_bus() as address, xvfb(*SIZE) as display:
        workdir = Path(tempfile.mkdtemp(prefix="holodesk-bench-shots-"))
        portal = PortalStandin.start(address, display, workdir)
        bus = PortalBus(address)
        try:
            shots = PortalScreenshots(bus)
            shots.take()  # the first call pays for the stand-in's imports
            times = []
            for _ in range(count):
                start = time.perf_counter()
                image = shots.take()
                times.append(time.perf_counter() - start)
            assert image.size == SIZE
            return times
        finally:
            bus.close()
            portal.stop()


def main(argv: Sequence[str] | None = None) -> int:
    args = parser(MODULE, __doc__ or "").parse_args(argv)
    grabs, keys, shots = (20, 5, 10) if args.quick else (300, 40, 100)
    report = Report(NAME, "Wayland capture: PipeWire stream vs Screenshot portal",
                    reproduce_command(MODULE, sys.argv[1:] if argv is None else argv),
                    quick=args.quick)  # fmt: skip
    report.header()
    desktop = HeadlessDesktop.start("mutter", *SIZE)
    try:
        person = GnomePerson(desktop)
        state = Path(tempfile.mkdtemp(prefix="holodesk-bench-state-"))
        backend = open_allowed(desktop, person, TokenStore(state / "t.json"), state / "d.png")
        probe = ProbeApp.start(desktop.x_display, state / "probe.log", x=40, y=30)
        try:
            time.sleep(1.0)  # mutter's map animation (a benchmark, not a test)
            grab = latency_summary(_grab_times(backend, grabs))
            typed, fps = _typing_latencies(backend, probe, keys)
            typing = latency_summary(typed)
        finally:
            probe.stop()
            backend.close()
            person.close()
    finally:
        desktop.stop()
    kwin_grab, kwin_typing = _kwin_figures(grabs, keys)
    shot = latency_summary(_screenshot_times(shots))
    report.data.update(grab=grab, typing=typing, screenshot=shot, stream_fps=fps,
                       kwin_grab=kwin_grab, kwin_typing=kwin_typing)  # fmt: skip
    report.add(Figure("PipeWire whole-desktop grab p50", grab["p50_ms"], "ms",
                      shot["p50_ms"], "Screenshot portal call p50", target="< 20 ms",
                      met=grab["p50_ms"] < 20))  # fmt: skip
    report.add(Figure("PipeWire whole-desktop grab p99", grab["p99_ms"], "ms",
                      shot["p99_ms"], "Screenshot portal call p99"))  # fmt: skip
    report.add(Figure("key typed -> first grab showing it, p50", typing["p50_ms"], "ms",
                      shot["p50_ms"], "one Screenshot portal call p50"))  # fmt: skip
    report.add(Figure("key typed -> first grab showing it, p99", typing["p99_ms"], "ms"))
    report.add(Figure("stream frames/s while typing", fps or 0.0, "frames/s", better="higher"))
    report.add(Figure("KWin ScreenShot2 whole-desktop grab p50", kwin_grab["p50_ms"], "ms",
                      shot["p50_ms"], "Screenshot portal call p50"))  # fmt: skip
    report.add(Figure("KWin ScreenShot2 whole-desktop grab p99", kwin_grab["p99_ms"], "ms",
                      shot["p99_ms"], "Screenshot portal call p99"))  # fmt: skip
    report.add(Figure("KWin: key typed -> first grab showing it, p50", kwin_typing["p50_ms"],
                      "ms", shot["p50_ms"], "one Screenshot portal call p50"))  # fmt: skip

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    plot, axis = plt.subplots(figsize=(7, 3.5))
    labels = ["PipeWire grab", "key -> frame", "KWin ScreenShot2", "Screenshot call"]
    values = [grab["p50_ms"], typing["p50_ms"], kwin_grab["p50_ms"], shot["p50_ms"]]
    axis.bar(labels, values, color=["#2a7", "#27a", "#7a2", "#a52"])
    axis.set_ylabel("ms (p50)")
    axis.set_title("1280x800 capture on Wayland")
    report.finish(plot, args.out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
