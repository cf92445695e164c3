"""The client against servers that cannot run here, played by a scripted RFB server."""

from __future__ import annotations

import numpy as np
import pytest

from holodesk.platform.base import MouseButton, Region
from holodesk.platform.errors import BackendUnavailableError, CaptureError, InputError
from holodesk.platform.select import open_backend
from tests.platform.vnc.rfb_server import (
    CURSOR,
    EXTENDED_MOUSE_BUTTONS,
    QEMU_EXTENDED_KEY_EVENT,
    ZRLE,
    FakeRfbServer,
    KeyEvent,
    PointerEvent,
    rect_head,
)

pytestmark = pytest.mark.vnc


@pytest.mark.parametrize("version", [b"RFB 003.003\n", b"RFB 003.007\n", b"RFB 003.008\n"])
@pytest.mark.parametrize("password", [None, "hunter2"])
def test_every_version_with_and_without_a_password(
    fake_server: FakeRfbServer, version: bytes, password: str | None
) -> None:
    fake_server.version = version
    fake_server.security = (2,) if password else (1,)
    fake_server.password = password
    backend = open_backend("vnc", port=fake_server.start(), password=password)
    try:
        image = backend.screen.grab(Region(10, 5, 40, 30))
        assert np.array_equal(np.asarray(image), fake_server.pixels[5:35, 10:50])
        assert backend.screen.displays()[0].name == "fake desktop"
    finally:
        backend.close()


def test_zrle_updates(fake_server: FakeRfbServer) -> None:
    fake_server.encoding = ZRLE
    fake_server.width, fake_server.height = 150, 70
    fake_server.__post_init__()
    backend = open_backend("vnc", port=fake_server.start(), encodings=["zrle"])
    try:
        image = backend.screen.grab(Region(0, 0, 150, 70))
        assert np.array_equal(np.asarray(image), fake_server.pixels)
        assert fake_server.encodings[0] == ZRLE
    finally:
        backend.close()


def test_updates_carrying_a_cursor_shape(fake_server: FakeRfbServer) -> None:
    cursor = rect_head(3, 3, 4, 2, CURSOR) + bytes(4 * 2 * 4) + bytes(1 * 2)
    fake_server.greeting = cursor
    backend = open_backend("vnc", port=fake_server.start())
    try:
        image = backend.screen.grab(Region(0, 0, 96, 64))
        assert np.array_equal(np.asarray(image), fake_server.pixels)
    finally:
        backend.close()


def test_a_resize_between_captures(fake_server: FakeRfbServer) -> None:
    backend = open_backend("vnc", port=fake_server.start())
    try:
        assert backend.screen.displays()[0].bounds == Region(0, 0, 96, 64)
        fake_server.resize(50, 40)
        # The server answers the next request with the size alone; the client asks again.
        assert backend.screen.displays()[0].bounds == Region(0, 0, 50, 40)
        image = backend.screen.grab(Region(0, 0, 50, 40))
        assert np.array_equal(np.asarray(image), fake_server.pixels)
    finally:
        backend.close()


def test_pointer_events_carry_the_whole_button_mask(fake_server: FakeRfbServer) -> None:
    backend = open_backend("vnc", port=fake_server.start())
    try:
        assert backend.input.cursor_position() == (48, 32)  # unknown: the centre
        backend.input.click(10, 20, button=MouseButton.RIGHT)
        backend.input.mouse_down(MouseButton.LEFT)
        backend.input.move(11, 21)
        backend.input.click(11, 21, button=MouseButton.MIDDLE)
        backend.input.mouse_up(MouseButton.LEFT)
        backend.input.scroll(5, 6, -1, 2)
        backend.screen.displays()  # a round trip: everything before it has arrived
        assert fake_server.pointer_events() == [
            PointerEvent(10, 20, 0),
            PointerEvent(10, 20, 4),
            PointerEvent(10, 20, 0),
            PointerEvent(10, 20, 1),
            PointerEvent(11, 21, 1),
            PointerEvent(11, 21, 1),
            PointerEvent(11, 21, 3),
            PointerEvent(11, 21, 1),
            PointerEvent(11, 21, 0),
            PointerEvent(5, 6, 0),
            PointerEvent(5, 6, 16),  # wheel down: button 5
            PointerEvent(5, 6, 0),
            PointerEvent(5, 6, 16),
            PointerEvent(5, 6, 0),
            PointerEvent(5, 6, 32),  # wheel left: button 6
            PointerEvent(5, 6, 0),
        ]
        assert backend.input.cursor_position() == (5, 6)
    finally:
        backend.close()


def test_side_buttons_over_extended_mouse_buttons(fake_server: FakeRfbServer) -> None:
    fake_server.extended_mouse_buttons = True  # as TigerVNC 1.15 and later
    backend = open_backend("vnc", port=fake_server.start())
    try:
        backend.input.move(10, 20)
        backend.input.mouse_down(MouseButton.BACK)
        backend.input.move(11, 20)  # held across a move: still in the mask
        backend.input.click(11, 20, button=MouseButton.FORWARD)
        backend.input.mouse_up(MouseButton.BACK)
        backend.input.click(11, 20)
        backend.screen.displays()
        assert EXTENDED_MOUSE_BUTTONS in fake_server.encodings
        assert fake_server.pointer_events() == [
            PointerEvent(10, 20, 0),
            PointerEvent(10, 20, 0x80, extended=True),  # button 8 in the extra byte
            PointerEvent(11, 20, 0x80, extended=True),
            PointerEvent(11, 20, 0x80, extended=True),
            PointerEvent(11, 20, 0x180, extended=True),  # and button 9 with it
            PointerEvent(11, 20, 0x80, extended=True),
            PointerEvent(11, 20, 0),  # no side button held: the plain message again
            PointerEvent(11, 20, 0),
            PointerEvent(11, 20, 1),
            PointerEvent(11, 20, 0),
        ]
    finally:
        backend.close()


def test_side_buttons_without_extended_mouse_buttons(fake_server: FakeRfbServer) -> None:
    # libvncserver's kind: no QEMU key events, no ExtendedMouseButtons.
    port = fake_server.start()
    backend = open_backend("vnc", port=port)
    try:
        backend.input.click(10, 20, button=MouseButton.BACK)
        with pytest.raises(InputError) as refused:
            backend.input.click(10, 20, button=MouseButton.FORWARD)
        message = str(refused.value)
        assert "forward button (X button 9)" in message
        assert "ExtendedMouseButtons pseudo-encoding (-316)" in message
        assert f"'fake desktop' at 127.0.0.1:{port}" in message
        backend.screen.displays()
        assert fake_server.pointer_events() == [
            PointerEvent(10, 20, 0),
            PointerEvent(10, 20, 0x80),  # bit 7: button 8, as RFB defines the mask
            PointerEvent(10, 20, 0),
            PointerEvent(10, 20, 0),  # the refused click's move; no press went out
        ]
        assert backend.input.held() == ((), ())
    finally:
        backend.close()


def test_servers_that_drop_button_8_refuse_back_clearly(fake_server: FakeRfbServer) -> None:
    # Acknowledging QEMU key events but not ExtendedMouseButtons: TigerVNC < 1.15 or QEMU.
    fake_server.greeting = rect_head(0, 0, 0, 0, QEMU_EXTENDED_KEY_EVENT)
    backend = open_backend("vnc", port=fake_server.start())
    try:
        with pytest.raises(InputError, match=r"TigerVNC older than 1\.15 or QEMU") as refused:
            backend.input.mouse_down(MouseButton.BACK)
        assert "alt+left" in str(refused.value)  # the fix names a way that works
        assert backend.input.held() == ((), ())
        backend.screen.displays()
        assert fake_server.pointer_events() == []
    finally:
        backend.close()


def test_keysyms_for_text(fake_server: FakeRfbServer) -> None:
    backend = open_backend("vnc", port=fake_server.start(), settle_s=0)
    try:
        backend.input.type_text("aB é€日\n")
        backend.input.key_chord(["ctrl", "shift", "t"])
        backend.screen.displays()
        shift = 0xFFE1
        expected = [KeyEvent(ord("a"), True), KeyEvent(ord("a"), False)]
        expected += [KeyEvent(shift, True), KeyEvent(ord("B"), True)]
        expected += [KeyEvent(ord("B"), False), KeyEvent(shift, False)]
        expected += [KeyEvent(ord(" "), True), KeyEvent(ord(" "), False)]
        for keysym in (0xE9, 0x010020AC, 0x010065E5):  # é, €, 日: first uses, Shift tap before
            expected += [KeyEvent(shift, True), KeyEvent(shift, False)]
            expected += [KeyEvent(keysym, True), KeyEvent(keysym, False)]
        expected += [KeyEvent(0xFF0D, True), KeyEvent(0xFF0D, False)]
        # A chord's letter goes as the capital Shift makes of it.
        expected += [KeyEvent(0xFFE3, True), KeyEvent(shift, True), KeyEvent(ord("T"), True)]
        expected += [KeyEvent(ord("T"), False), KeyEvent(shift, False), KeyEvent(0xFFE3, False)]
        assert fake_server.key_events() == expected
    finally:
        backend.close()


@pytest.mark.parametrize(
    ("version", "name", "family"),
    [(b"RFB 003.008\n", "QEMU (web-7)", "QEMU"), (b"RFB 003.889\n", "Mac mini", "Apple")],
)
def test_servers_that_drop_keysyms_refuse_unicode_clearly(
    fake_server: FakeRfbServer, version: bytes, name: str, family: str
) -> None:
    fake_server.version, fake_server.name = version, name
    backend = open_backend("vnc", port=fake_server.start())
    try:
        backend.input.type_text("plain")
        with pytest.raises(InputError) as refused:
            backend.input.type_text("naïve")
        message = str(refused.value)
        assert "cannot type 'ï' (U+00EF)" in message
        assert name in message
        assert family in message
        with pytest.raises(InputError, match="'日'"):
            backend.input.key_down("日")
        backend.screen.displays()
        typed = [chr(e.keysym) for e in fake_server.key_events() if e.down]
        assert "".join(typed) == "plain"  # nothing of the refused text went out
    finally:
        backend.close()


def test_only_unsupported_security_types(fake_server: FakeRfbServer) -> None:
    fake_server.security = (19, 18)
    with pytest.raises(BackendUnavailableError, match="vencrypt, tls"):
        open_backend("vnc", port=fake_server.start())


@pytest.mark.parametrize("version", [b"RFB 003.003\n", b"RFB 003.008\n"])
def test_a_refusal_names_the_servers_reason(fake_server: FakeRfbServer, version: bytes) -> None:
    fake_server.version, fake_server.security = version, ()
    with pytest.raises(BackendUnavailableError, match="refused the connection: "):
        open_backend("vnc", port=fake_server.start())


def test_a_dropped_connection_then_a_reconnect(fake_server: FakeRfbServer) -> None:
    backend = open_backend("vnc", port=fake_server.start())
    try:
        backend.screen.displays()
        fake_server.drop()
        with pytest.raises(CaptureError, match="was lost"):
            backend.screen.grab(Region(0, 0, 8, 8))
        backend.input.click(3, 4)  # reconnects
        backend.screen.displays()
        assert fake_server.connections == 2
        assert fake_server.pointer_events()[-2:] == [PointerEvent(3, 4, 1), PointerEvent(3, 4, 0)]
    finally:
        backend.close()


def test_the_backend_refuses_work_once_closed(fake_server: FakeRfbServer) -> None:
    backend = open_backend("vnc", port=fake_server.start())
    backend.close()
    with pytest.raises(InputError, match="closed"):
        backend.input.move(1, 1)
    with pytest.raises(CaptureError, match="closed"):
        backend.screen.displays()
