"""VNC backend throughput against a local Xvnc, as ratios to the X11 backend on the same display.

Run: uv run python -m tests.platform.vnc.bench_vnc
Not a test (no assertions on time): numbers for the README and for regressions.
"""

from __future__ import annotations

import os
import statistics
import time
from collections.abc import Callable
from functools import partial

from PIL import Image
from Xlib import X

from holodesk.platform.base import Region
from holodesk.platform.select import open_backend
from holodesk.platform.x11.connection import open_display
from tests.platform.vnc.servers import xvnc

WIDTH, HEIGHT = 1280, 800
ROUNDS = 10


def paint_noise(display_name: str, seed: int) -> None:
    """Cover the root window with fresh noise: every pixel changes, nothing compresses."""
    connection = open_display(display_name)
    try:
        screen = connection.screen()
        root = screen.root
        gc = root.create_gc()
        rows = 40  # one PutImage must stay under 256 KiB
        for top in range(0, HEIGHT, rows):
            data = os.urandom(WIDTH * rows * 4) if seed else bytes(WIDTH * rows * 4)
            root.put_image(gc, 0, top, WIDTH, rows, X.ZPixmap, 24, 0, data)
        connection.sync()
    finally:
        connection.close()


def x_get_image(display_name: str) -> Image.Image:
    """The local way to read that screen (mss cannot read Xvnc's visual)."""
    connection = open_display(display_name)
    try:
        reply = connection.screen().root.get_image(0, 0, WIDTH, HEIGHT, X.ZPixmap, 0xFFFFFFFF)
        return Image.frombytes("RGB", (WIDTH, HEIGHT), reply.data, "raw", "BGRX")
    finally:
        connection.close()


def timed(action: Callable[[], object], rounds: int = ROUNDS) -> float:
    """Median seconds of `action`."""
    samples = []
    for _ in range(rounds):
        start = time.perf_counter()
        action()
        samples.append(time.perf_counter() - start)
    return statistics.median(samples)


def main() -> None:
    full = Region(0, 0, WIDTH, HEIGHT)
    with xvnc(WIDTH, HEIGHT) as server:
        baseline = timed(lambda: x_get_image(server.display))
        print(f"XGetImage of the same {WIDTH}x{HEIGHT} screen: {baseline * 1000:.1f} ms (baseline)")
        for encodings in (("raw",), ("zrle",)):
            backend = open_backend("vnc", **server.options(), encodings=encodings)
            seed = 1

            def changed_grab(backend: object = backend) -> None:
                nonlocal seed
                paint_noise(server.display, seed)
                seed += 1
                backend.screen.grab(full)  # type: ignore[attr-defined]

            paint_cost = timed(lambda: paint_noise(server.display, 1))
            full_update = timed(changed_grab) - paint_cost
            unchanged = timed(partial(backend.screen.grab, full))
            name = "+".join(encodings)
            print(
                f"vnc {name}: full update of noise {full_update * 1000:.1f} ms "
                f"({full_update / baseline:.1f}x baseline); unchanged screen "
                f"{unchanged * 1000:.2f} ms ({unchanged / baseline:.2f}x)"
            )
            backend.close()
        backend = open_backend("vnc", **server.options())
        events = 2000
        start = time.perf_counter()
        for n in range(events):
            backend.input.move(n % WIDTH, n % HEIGHT)
        backend.screen.displays()  # a round trip: all events have been read by then
        per_event = (time.perf_counter() - start) / events
        round_trip = timed(backend.screen.displays, 50)
        print(
            f"vnc input: {per_event * 1e6:.0f} us per pointer event sent "
            f"({1 / per_event:.0f}/s); update round trip {round_trip * 1000:.2f} ms"
        )
        backend.close()


if __name__ == "__main__":
    main()
