"""Give an Xvfb screen several RandR 1.5 monitors, as a multi-head desktop has."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from Xlib.protocol import rq

from holodesk.platform.x11.connection import open_display


@dataclass(frozen=True)
class Monitor:
    """A RandR 1.5 monitor: a named rectangle of the screen."""

    name: str
    x: int
    y: int
    width: int
    height: int
    primary: bool = False


class _SetMonitor(rq.Request):  # type: ignore[misc]  # python-xlib is untyped
    # RRSetMonitor, flattened: python-xlib's own packs its nested struct wrongly.
    _request = rq.Struct(
        rq.Card8("opcode"),
        rq.Opcode(43),
        rq.RequestLength(),
        rq.Window("window"),
        rq.Card32("name"),
        rq.Bool("primary"),
        rq.Bool("automatic"),
        rq.LengthOf("outputs", 2),
        rq.Int16("x"),
        rq.Int16("y"),
        rq.Card16("width"),
        rq.Card16("height"),
        rq.Card32("width_mm"),
        rq.Card32("height_mm"),
        rq.List("outputs", rq.Card32Obj),
    )


def set_monitors(display: str, monitors: Sequence[Monitor]) -> None:
    """Split an Xvfb screen into monitors, as a multi-head desktop reports them.

    The first monitor takes over the screen's RandR outputs, which retires the
    automatic whole-screen monitor Xvfb reports otherwise.
    """
    connection = open_display(display)
    try:
        root = connection.screen().root
        outputs = list(root.xrandr_get_screen_resources().outputs)
        for index, monitor in enumerate(monitors):
            _SetMonitor(
                display=connection.display,
                opcode=connection.display.get_extension_major("RANDR"),
                window=root,
                name=connection.intern_atom(monitor.name),
                primary=monitor.primary,
                automatic=False,
                outputs=outputs if index == 0 else [],
                x=monitor.x,
                y=monitor.y,
                width=monitor.width,
                height=monitor.height,
                # ~96 dpi, so nothing downstream divides by zero
                width_mm=monitor.width * 254 // 960,
                height_mm=monitor.height * 254 // 960,
            )
        connection.sync()
    finally:
        connection.close()
