"""open_display against a real Xvfb: a setup that a resetting server dropped is tried
again; a refusal is not.

python-xlib raises ConnectionClosedError when the server closes a connection before
answering its setup, which is what an X server that resets when its last client
leaves does to a connection it accepted just before (see
tests/client/test_doctor_plain_xvfb.py for the race itself). Here the drop is
injected, so the retry is proven every run rather than when the race is lost.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from Xlib import display as xdisplay
from Xlib import error as xerror

from holodesk.platform.x11 import connection

pytestmark = pytest.mark.x11


def dropping(monkeypatch: pytest.MonkeyPatch, drops: int) -> list[str]:
    """Have the next `drops` setups end as a resetting server ends them; log attempts."""
    real = xdisplay.Display
    attempts: list[str] = []

    def display(name: str | None = None) -> Any:
        attempts.append("dropped" if len(attempts) < drops else "served")
        if attempts[-1] == "dropped":
            raise xerror.ConnectionClosedError("server")
        return real(name)

    monkeypatch.setattr(xdisplay, "Display", display)  # as connection sees it
    return attempts


def test_a_setup_dropped_by_a_reset_is_tried_again(
    xvfb: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    attempts = dropping(monkeypatch, drops=2)
    opened = connection.open_display(xvfb)
    try:
        assert opened.screen().root.get_geometry().width == 1280
    finally:
        opened.close()
    assert attempts == ["dropped", "dropped", "served"]


def test_a_server_that_keeps_dropping_setups_is_an_error(
    xvfb: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(connection, "RESET_GRACE_S", 0.1)
    attempts = dropping(monkeypatch, drops=10_000)
    with pytest.raises(xerror.ConnectionClosedError):
        connection.open_display(xvfb)
    assert 2 <= len(attempts) < 100


def test_a_refused_connection_is_not_tried_again(monkeypatch: pytest.MonkeyPatch) -> None:
    attempts = dropping(monkeypatch, drops=0)
    free = next(n for n in range(5000, 6000) if not Path(f"/tmp/.X11-unix/X{n}").exists())
    # No server there: refused at once, a DisplayConnectionError, which says why.
    with pytest.raises(xerror.DisplayConnectionError):
        connection.open_display(f":{free}")
    assert attempts == ["served"]  # one attempt, passed to the real python-xlib
