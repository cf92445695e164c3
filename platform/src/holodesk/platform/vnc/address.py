"""VNC server addresses as VNC viewers write them."""

from __future__ import annotations

from holodesk.platform.vnc.connection import DEFAULT_PORT

_LAST_DISPLAY = 99  # like TigerVNC's viewer: host:N up to 99 is a display, above a port


def parse_server(text: str) -> tuple[str, int]:
    """(host, port) from "host", "host:N" (display N: port 5900+N), "host::port".

    IPv6 hosts go in brackets when a display or port follows ("[::1]:1").
    """
    text = text.strip()
    if not text:
        raise ValueError("the address is empty")
    if text.startswith("["):
        host, bracket, rest = text[1:].partition("]")
        if not bracket or not host:
            raise ValueError("an IPv6 host needs its closing bracket")
    elif text.count(":") > 2:
        return text, DEFAULT_PORT  # a bare IPv6 address
    else:
        host, colon, rest = text.partition(":")
        rest = colon + rest
        if not host:
            raise ValueError("the host is missing")
    if not rest:
        return host, DEFAULT_PORT
    if rest.startswith("::"):
        return host, _number(rest[2:], "port", 1, 65535)
    if rest.startswith(":"):
        number = _number(rest[1:], "display", 0, 65535)
        return host, number if number > _LAST_DISPLAY else DEFAULT_PORT + number
    raise ValueError(f"unexpected {rest!r} after the host")


def _number(text: str, what: str, low: int, high: int) -> int:
    if not text.isdigit():
        raise ValueError(f"the {what} must be a number, not {text!r}")
    value = int(text)
    if not low <= value <= high:
        raise ValueError(f"the {what} must be {low}-{high}, not {value}")
    return value
