"""A real Wayland server that offers wl_shm and nothing else: a live compositor socket
with none of the wlroots protocols (what GNOME or KDE look like to the wlroots probe).

libwayland-server through pywayland, served on a thread; its socket lands under
$XDG_RUNTIME_DIR, as libwayland puts it.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator
from pathlib import Path


@contextlib.contextmanager
def bare_compositor(runtime_dir: Path) -> Iterator[str]:
    """Serve the bare compositor; yield its socket's path (XDG_RUNTIME_DIR must be
    `runtime_dir` while it starts)."""
    from pywayland.server.display import Display

    display = Display()
    name = display.add_socket()
    display.init_shm()
    stop = threading.Event()

    def serve() -> None:
        loop = display.get_event_loop()
        while not stop.is_set():
            loop.dispatch(50)
            display.flush_clients()

    server = threading.Thread(target=serve, daemon=True)
    server.start()
    try:
        yield str(runtime_dir / name)
    finally:
        stop.set()
        server.join(timeout=5)
        display.destroy()
