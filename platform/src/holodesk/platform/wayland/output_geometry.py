"""The compositor's own word on its outputs, for a portal whose stream sizes are pixels.

The ScreenCast spec gives each stream its monitor's size in logical units, and
mutter's portal does so. xdg-desktop-portal-kde 5.27 gives the output's pixel
size instead (its position is logical), while its NotifyPointerMotionAbsolute
takes logical units (KWin's fake input). The stream's frames are pixels too, so
their ratio to that size reads 1.0 at any scale, and at 1.5 every position would
go out 1.5 times too far. The compositor says which is which: xdg-output gives
each output's logical rectangle and wl_output its mode in pixels. One
connection, two roundtrips, at session start.

Asking is best effort: with no Wayland socket to ask (a portal reached from
outside the session), no xdg-output, or no answer in time, the portal's word is
kept, as before.
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Mapping, Sequence
from dataclasses import replace

from holodesk.platform.errors import PlatformError
from holodesk.platform.wayland.layout import Monitor
from holodesk.platform.wlroots.connection import GEOMETRY_ONLY, WlrConnection
from holodesk.platform.wlroots.outputs import Layout, Output

log = logging.getLogger(__name__)

ASK_TIMEOUT_S = 2.0


def compositor_outputs(environ: Mapping[str, str] | None = None) -> tuple[Output, ...]:
    """The outputs of $WAYLAND_DISPLAY's compositor in `environ` (default this
    process's), or () where they cannot be had (said in the log)."""
    env = os.environ if environ is None else environ
    target = env.get("WAYLAND_DISPLAY", "").strip()
    if not target:
        log.debug("no WAYLAND_DISPLAY: the portal's monitor sizes are taken as they are")
        return ()
    found: list[tuple[Output, ...]] = []
    # A thread, so a compositor that accepts but never answers cannot hang the session.
    worker = threading.Thread(target=lambda: found.append(_ask(target, env)), daemon=True)
    worker.start()
    worker.join(ASK_TIMEOUT_S)
    if not found:
        log.warning("the compositor at %s did not say its outputs in %g s", target, ASK_TIMEOUT_S)
        return ()
    return found[0]


def _ask(target: str, env: Mapping[str, str]) -> tuple[Output, ...]:
    try:
        connection = WlrConnection.open(target, env, needs=GEOMETRY_ONLY)
    except (PlatformError, ImportError) as error:
        log.debug("the compositor's outputs are unknown: %s", error)
        return ()
    try:
        return connection.layout().outputs
    except PlatformError as error:
        log.debug("the compositor's outputs are unknown: %s", error)
        return ()
    finally:
        connection.close()


def logical_by_outputs(
    monitors: Sequence[Monitor], outputs: Sequence[Output]
) -> tuple[Monitor, ...]:
    """The portal's monitors in logical units: one sized as its scaled output's pixels
    (at the output's logical or physical origin) gets that output's logical size."""
    if not outputs:
        return tuple(monitors)
    layout = Layout(tuple(outputs))
    return tuple(_logical(monitor, layout) for monitor in monitors)


def _logical(monitor: Monitor, layout: Layout) -> Monitor:
    for output in layout.outputs:
        if output.scale == 1.0 or (monitor.width, monitor.height) != (
            output.physical_width,
            output.physical_height,
        ):
            continue
        physical = layout.bounds(output)
        origins = {(output.logical.x, output.logical.y), (physical.x, physical.y)}
        if (monitor.x, monitor.y) not in origins:
            continue
        logical = output.logical
        log.info(
            "the portal's stream %s is %s's %dx%d pixels at scale %.3g: using its logical %dx%d",
            monitor.node_id,
            output.name,
            monitor.width,
            monitor.height,
            output.scale,
            logical.width,
            logical.height,
        )
        return replace(
            monitor, x=logical.x, y=logical.y, width=logical.width, height=logical.height
        )
    return monitor
