"""RFB input arriving in a real Tk app on TigerVNC's Xvnc, as the app itself reports it.

The event-level checks every backend passes live in tests/platform/conformance.py;
here are the target for them and what only VNC has (keysym bindings on the server).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from holodesk.platform.base import Backend, MouseButton
from holodesk.platform.errors import InputError
from holodesk.platform.select import open_backend
from holodesk.platform.vnc.keys import TIGERVNC_SPARE_KEYCODES
from tests.platform.conformance import UNICODE_TEXT, TkTarget, conformance_test
from tests.platform.vnc.servers import VncServer, xvnc, xvnc_version
from tests.support.probe import ProbeApp

pytestmark = pytest.mark.vnc


@pytest.fixture
def target(xvnc_server: VncServer, probe: ProbeApp) -> Iterator[TkTarget]:
    with TkTarget.open(lambda: open_backend("vnc", **xvnc_server.options()), probe) as target:
        yield target


def _side_button_refusals() -> dict[str, str]:
    """Xvnc before 1.15 drives buttons 1-7 only and lacks ExtendedMouseButtons."""
    try:
        if xvnc_version() >= (1, 15):
            return {}
    except (RuntimeError, OSError, pytest.skip.Exception):
        return {}  # no Xvnc: the fixture skips (or fails under CI) on its own
    return {
        "button-back": "back button \\(X button 8\\).*TigerVNC older than 1.15",
        "button-forward": "forward button \\(X button 9\\).*ExtendedMouseButtons",
    }


test_conformance = conformance_test(refused=_side_button_refusals())


@pytest.fixture
def focused(vnc: Backend, probe: ProbeApp) -> ProbeApp:
    """The probe with keyboard focus in its Entry (clicked, like a user would)."""
    vnc.input.click(*probe.widgets["entry"].center)
    probe.wait_for_event("focus", widget="entry")
    return probe


def test_unicode_goes_as_keysyms(vnc: Backend, focused: ProbeApp) -> None:
    # Xvnc binds each keysym its keyboard lacks to a spare keycode.
    vnc.input.type_text(UNICODE_TEXT)
    assert focused.wait_for_entry(UNICODE_TEXT) == UNICODE_TEXT
    keysyms = [e["keysym"] for e in focused.events("key")]
    assert {"eacute", "odiaeresis", "ntilde", "U20AC", "U65E5", "U672C"} <= set(keysyms)


def test_tigervnc_binds_its_spare_keycodes_then_refuses_clearly(tmp_path: Path) -> None:
    # A fresh server: Xvnc keeps every binding for life, so this counts from zero.
    with xvnc(640, 480) as server:
        probe = ProbeApp.start(server.display, tmp_path / "probe.log")
        backend = open_backend("vnc", **server.options())
        try:
            backend.input.click(*probe.widgets["entry"].center)
            probe.wait_for_event("focus", widget="entry")
            spare = "".join(chr(0x4E00 + i) for i in range(TIGERVNC_SPARE_KEYCODES))
            backend.input.type_text(spare)
            assert probe.wait_for_entry(spare, timeout=30) == spare
            with pytest.raises(InputError) as refused:
                backend.input.type_text("ok 本")
            message = str(refused.value)
            assert "'本' (U+672C)" in message
            assert f"127.0.0.1:{server.port}" in message
            assert "TigerVNC" in message
            # Nothing of the refused text was sent; bound characters still type.
            backend.input.type_text(spare[::-1])
            assert probe.wait_for_entry(spare + spare[::-1]) == spare + spare[::-1]
        finally:
            backend.close()
            probe.stop()


def test_close_releases_held_input(xvnc_server: VncServer, probe: ProbeApp) -> None:
    backend = open_backend("vnc", **xvnc_server.options())
    backend.input.move(*probe.widgets["canvas"].center)
    backend.input.key_down("shift")
    backend.input.mouse_down(MouseButton.LEFT)
    probe.wait_for_event("press", num=1)
    backend.close()
    probe.wait_for_event("release", num=1)
    probe.wait_for_event("keyup", keysym="Shift_L")
