"""Start a private Xvfb for tests (no X library imported, so this loads on any OS)."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Sequence

from holodesk.platform.virtual_display import VirtualDisplay


@contextlib.contextmanager
def xvfb(
    width: int = 1280,
    height: int = 800,
    depth: int = 24,
    extra_args: Sequence[str] = (),
) -> Iterator[str]:
    """Yield the DISPLAY string (e.g. ":7") of a fresh Xvfb; stop it afterwards.

    Xvfb reports its display number through -displayfd once it accepts
    connections, so there is neither a race for the number nor a readiness poll.
    """
    with VirtualDisplay(width, height, depth, extra_args) as virtual:
        yield virtual.display
