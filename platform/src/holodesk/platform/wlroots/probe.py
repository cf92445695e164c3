"""Does the Wayland compositor of this session offer the wlroots route's protocols?

Asked by the backend choice (`holodesk.platform.select`) on a Wayland session, and
by `holodesk doctor` (through `route`) to say which protocols were found: one
connection, one registry roundtrip, a few milliseconds. Any failure (no socket,
no pywayland, a compositor that hangs) is an answer with its reason, never an
exception, so the choice falls back to the other Wayland routes rather than
failing there.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Mapping
from dataclasses import dataclass

from holodesk.platform.wlroots.connection import REQUIRED, socket_path

PROBE_TIMEOUT_S = 2.0


@dataclass(frozen=True)
class Globals:
    """What the compositor advertised (`names`), or why it could not be asked (`error`).

    `absent`: no compositor is there at all (WAYLAND_DISPLAY unset, or no socket at
    the path it names: a stale variable), as opposed to one that was reached but
    failed or hung; the backend choice treats the first as no Wayland session.
    """

    names: frozenset[str] = frozenset()
    error: str = ""
    absent: bool = False

    @property
    def missing(self) -> list[str]:
        """The route's required globals the compositor lacks, in REQUIRED's order."""
        return [name for name in REQUIRED if name not in self.names]

    @property
    def offers_route(self) -> bool:
        return not self.error and not self.missing


def offers_wlroots_protocols(environ: Mapping[str, str]) -> bool:
    """True when $WAYLAND_DISPLAY's compositor offers every protocol the route needs."""
    return compositor_globals(environ).offers_route


def compositor_globals(environ: Mapping[str, str]) -> Globals:
    """The globals $WAYLAND_DISPLAY's compositor advertises, or why it cannot be asked."""
    target = environ.get("WAYLAND_DISPLAY", "").strip()
    if not target:
        return Globals(error="WAYLAND_DISPLAY is not set", absent=True)
    path = socket_path(target, environ)
    if not os.path.exists(path):
        return Globals(error=f"no Wayland socket at {path}", absent=True)
    found: list[Globals] = []
    # A thread, so a compositor that accepts but never answers cannot hang the choice.
    worker = threading.Thread(target=lambda: found.append(_ask(path)), daemon=True)
    worker.start()
    worker.join(PROBE_TIMEOUT_S)
    if not found:
        return Globals(error=f"the compositor at {path} did not answer in {PROBE_TIMEOUT_S:g} s")
    return found[0]


def _ask(path: str) -> Globals:
    try:
        from pywayland.client.display import Display
    except ImportError as error:
        return Globals(error=f"pywayland is not installed ({error}): holodesk-platform[wayland]")
    display = Display(path)
    try:
        display.connect()
    except Exception as error:  # pywayland raises bare ValueError/RuntimeError: the reason
        return Globals(error=f"cannot connect to {path}: {error}")
    try:
        names: set[str] = set()
        registry = display.get_registry()
        registry.dispatcher["global"] = lambda _r, _name, interface, _v: names.add(interface)
        display.roundtrip()
        return Globals(frozenset(names))
    except Exception as error:  # a compositor that broke the connection: the reason
        return Globals(error=f"the compositor at {path} failed the registry roundtrip: {error}")
    finally:
        display.disconnect()
