"""Does the Wayland compositor of this session offer the wlroots route's protocols?

Asked by the backend choice (`holodesk.platform.select`) on a Wayland session: one
connection, one registry roundtrip, a few milliseconds. Any failure (no socket,
no pywayland, a compositor that hangs) answers False, so the choice falls back to
the other Wayland routes rather than failing there.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Mapping

from holodesk.platform.wlroots.connection import REQUIRED, socket_path

PROBE_TIMEOUT_S = 2.0


def offers_wlroots_protocols(environ: Mapping[str, str]) -> bool:
    """True when $WAYLAND_DISPLAY's compositor offers every protocol the route needs."""
    target = environ.get("WAYLAND_DISPLAY", "").strip()
    if not target:
        return False
    path = socket_path(target, environ)
    if not os.path.exists(path):
        return False
    found: list[bool] = []
    # A thread, so a compositor that accepts but never answers cannot hang the choice.
    worker = threading.Thread(target=lambda: found.append(_ask(path)), daemon=True)
    worker.start()
    worker.join(PROBE_TIMEOUT_S)
    return bool(found and found[0])


def _ask(path: str) -> bool:
    try:
        from pywayland.client.display import Display

        display = Display(path)
        display.connect()
    except Exception:
        return False
    try:
        names: set[str] = set()
        registry = display.get_registry()
        registry.dispatcher["global"] = lambda _r, _name, interface, _v: names.add(interface)
        display.roundtrip()
        return all(name in names for name in REQUIRED)
    except Exception:
        return False
    finally:
        display.disconnect()
