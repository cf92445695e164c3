"""Pure parts of the VNC client: versions, addresses, ZRLE tiles, keysym policy."""

from __future__ import annotations

import zlib

import numpy as np
import pytest

from holodesk.platform.errors import InputError
from holodesk.platform.vnc.address import parse_server
from holodesk.platform.vnc.handshake import ServerInfo
from holodesk.platform.vnc.keys import KeysymBook, support_for
from holodesk.platform.vnc.protocol import (
    BGRX,
    PixelFormat,
    ProtocolError,
    Security,
    Version,
    pointer_event,
    security_name,
    vnc_auth_response,
)
from holodesk.platform.vnc.zrle import ZrleDecoder, decode_tiles
from tests.platform.vnc.rfb_server import Rgb, pattern, vnc_des, zrle_rect, zrle_tile

pytestmark = pytest.mark.vnc

SERVER = ServerInfo("10.0.0.7", 5901, Version(3, 8), "desk", Security.NONE)


@pytest.mark.parametrize(
    ("greeting", "answer"),
    [
        (b"RFB 003.003\n", b"RFB 003.003\n"),
        (b"RFB 003.007\n", b"RFB 003.007\n"),
        (b"RFB 003.008\n", b"RFB 003.008\n"),
        (b"RFB 003.889\n", b"RFB 003.008\n"),  # Apple
        (b"RFB 005.000\n", b"RFB 003.008\n"),  # RealVNC
        (b"RFB 003.005\n", b"RFB 003.003\n"),
    ],
)
def test_version_negotiation(greeting: bytes, answer: bytes) -> None:
    assert Version.parse(greeting).negotiate().encode() == answer


@pytest.mark.parametrize("greeting", [b"SSH-2.0-Open", b"RFB 003.008", b"RFB 00x.008\n"])
def test_a_greeting_that_is_not_rfb(greeting: bytes) -> None:
    with pytest.raises(ProtocolError, match="not an RFB"):
        Version.parse(greeting)


def test_pixel_format_round_trip() -> None:
    assert PixelFormat.parse(BGRX.encode()) == BGRX
    assert len(BGRX.encode()) == 16


def test_vnc_auth_matches_an_independent_implementation() -> None:
    challenge = bytes(range(100, 116))
    for password in ("", "pw", "exactly8", "longer than eight"):
        assert vnc_auth_response(password, challenge) == vnc_des(password, challenge)
    # Only the first 8 bytes count, as in every VNC server.
    assert vnc_auth_response("12345678", challenge) == vnc_auth_response("123456789", challenge)


def test_security_names() -> None:
    assert security_name(19) == "vencrypt"
    assert security_name(2) == "vnc-auth"
    assert security_name(250) == "type 250"


def test_pointer_event_layouts() -> None:
    # Type 5, mask, x, y: buttons 1-8 fit the plain message's mask byte.
    assert pointer_event(0x102, 3, 0x81) == bytes([5, 0x81, 1, 2, 0, 3])
    with pytest.raises(ValueError, match="ExtendedMouseButtons"):
        pointer_event(0, 0, 0x100)
    # ExtendedMouseButtons: the marker bit, then buttons 8 and 9 in one more byte...
    assert pointer_event(1, 2, 0x181, extended=True) == bytes([5, 0x81, 0, 1, 0, 2, 0b11])
    assert pointer_event(1, 2, 0x100, extended=True) == bytes([5, 0x80, 0, 1, 0, 2, 0b10])
    # ...only when one of them is held: otherwise the marker must stay clear.
    assert pointer_event(1, 2, 0x7F, extended=True) == bytes([5, 0x7F, 0, 1, 0, 2])
    with pytest.raises(ValueError, match="buttons 1-9"):
        pointer_event(0, 0, 0x200, extended=True)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("example.org", ("example.org", 5900)),
        ("example.org:1", ("example.org", 5901)),
        ("example.org:99", ("example.org", 5999)),
        ("example.org:5905", ("example.org", 5905)),
        ("example.org::443", ("example.org", 443)),
        ("[::1]:2", ("::1", 5902)),
        ("[::1]::6000", ("::1", 6000)),
        ("fe80::1:2:3", ("fe80::1:2:3", 5900)),
    ],
)
def test_server_addresses(text: str, expected: tuple[str, int]) -> None:
    assert parse_server(text) == expected


@pytest.mark.parametrize("text", ["", ":1", "host:x", "host::0", "host::70000", "[::1", "h:1x"])
def test_bad_server_addresses(text: str) -> None:
    with pytest.raises(ValueError, match=r"\w+"):
        parse_server(text)


# -- ZRLE ------------------------------------------------------------------------------------
def _few_colours(width: int, height: int, colours: int) -> Rgb:
    """Stripes of `colours` colours, for palette tiles."""
    palette = pattern(colours, 1)[0]
    ys, xs = np.mgrid[0:height, 0:width]
    striped: Rgb = palette[(xs // 3 + ys) % colours]
    return striped


@pytest.mark.parametrize(
    ("kind", "colours"),
    [
        ("raw", 0),
        ("solid", 1),
        ("packed", 2),
        ("packed", 4),
        ("packed", 16),
        ("rle", 5),
        ("palette_rle", 3),
        ("palette_rle", 127),
    ],
)
def test_every_zrle_tile_kind(kind: str, colours: int) -> None:
    # 70x67: a full tile plus edge tiles 6 wide and 3 high, so padding rules show.
    width, height = 70, 67
    if kind == "raw":
        image = pattern(width, height)
    elif kind == "solid":
        image = np.broadcast_to(np.array([9, 8, 7], np.uint8), (height, width, 3)).copy()
    else:
        image = _few_colours(width, height, colours)
    stream = zlib.compressobj()
    decoder = ZrleDecoder()
    decoded = decoder.decode(zrle_rect(image, stream, (kind,)), width, height)
    assert np.array_equal(decoded[..., ::-1], image)  # BGR back to RGB


def test_zrle_stream_continues_across_rectangles() -> None:
    stream = zlib.compressobj()
    decoder = ZrleDecoder()
    for seed in range(3):
        image = np.roll(pattern(64, 64), seed, axis=1)
        decoded = decoder.decode(zrle_rect(image, stream, ("raw", "rle")), 64, 64)
        assert np.array_equal(decoded[..., ::-1], image)


def test_malformed_zrle_is_a_protocol_error() -> None:
    with pytest.raises(ProtocolError, match="subencoding 17"):
        decode_tiles(bytes([17]), 4, 4)
    with pytest.raises(ProtocolError, match="palette index"):
        decode_tiles(bytes([3]) + bytes(9) + b"\xff" * 16, 8, 8)  # index 3 of 3 colours
    with pytest.raises(ProtocolError, match="past its last tile"):
        decode_tiles(zrle_tile(pattern(2, 2), "solid") + b"\x00", 2, 2)
    with pytest.raises(ProtocolError, match="malformed"):
        decode_tiles(bytes([0, 1, 2]), 4, 4)
    with pytest.raises(ProtocolError, match="corrupt"):
        ZrleDecoder().decode(b"not zlib", 4, 4)


# -- keysym policy ---------------------------------------------------------------------------
def test_tigervnc_family_gets_a_budget() -> None:
    tiger = ServerInfo("h", 5900, Version(3, 8), "x:1 (me)", Security.NONE, qemu_key_events=True)
    support = support_for(tiger, None, "auto")
    assert support.unicode
    assert support.budget is not None
    chars = [chr(0x3041 + n) for n in range(support.budget)]
    support.check(chars, tiger, set())
    with pytest.raises(InputError, match="TigerVNC"):
        support.check([*chars, "€"], tiger, set())
    # Characters bound before count, and may be typed again at no cost.
    support.check(["é", "é"], tiger, {0xE9})


def test_known_keysym_droppers_are_held_to_ascii() -> None:
    qemu = ServerInfo("h", 5900, Version(3, 8), "QEMU (vm7)", Security.NONE, qemu_key_events=True)
    apple = ServerInfo("h", 5900, Version(3, 889), "Mac", Security.NONE)
    for server, named in ((qemu, "QEMU"), (apple, "Apple")):
        support = support_for(server, None, "auto")
        support.check(list("plain ASCII\n\t~"), server, set())
        with pytest.raises(InputError, match=f"cannot type 'é' \\(U\\+00E9\\): {named}"):
            support.check(list("café"), server, set())
    assert support_for(qemu, True, "auto").unicode


def test_overrides() -> None:
    assert support_for(SERVER, None, "auto").budget is None
    assert support_for(SERVER, None, 3).budget == 3
    assert not support_for(SERVER, False, "auto").unicode
    with pytest.raises(ValueError, match="keysym_budget"):
        support_for(SERVER, None, -1)


def test_keysym_book_is_per_server() -> None:
    book = KeysymBook()
    book.record("a:1", 0xE9)
    assert book.bound("a:1") == {0xE9}
    assert book.bound("b:1") == set()
    book.forget("a:1")
    assert book.bound("a:1") == set()
