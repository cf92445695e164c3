"""Where `holodesk mcp --http` listens: the address, parsed and checked before anything
starts (and before the MCP SDK is imported: `holodesk`'s every command loads this
parser at startup).

Loopback unless told otherwise, like holodeskd: the tools drive this desktop, and
the SDK's server has no authentication of its own, so a non-loopback address is
refused without an explicit `--allow-remote`.
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass

DEFAULT_HTTP_PORT = 8765
HTTP_PATH = "/mcp"


class BindError(ValueError):
    """The HTTP address is malformed, or not loopback without --allow-remote."""


@dataclass(frozen=True)
class HttpAddress:
    host: str
    port: int

    @property
    def loopback(self) -> bool:
        if self.host.lower() == "localhost":
            return True
        try:
            return ipaddress.ip_address(self.host).is_loopback
        except ValueError:
            return False


def parse_http_address(text: str) -> HttpAddress:
    """`HOST:PORT`, `[::1]:PORT`, or a bare `PORT` on 127.0.0.1."""
    text = text.strip()
    if text.isdigit():
        return HttpAddress("127.0.0.1", _port(text, text))
    host, sep, port = text.rpartition(":")
    if not sep or not host:
        raise BindError(f"--http {text!r}: expected HOST:PORT (e.g. 127.0.0.1:{DEFAULT_HTTP_PORT})")
    return HttpAddress(host.strip("[]"), _port(port, text))


def _port(port: str, text: str) -> int:
    if not port.isdigit() or not 0 <= int(port) <= 65535:
        raise BindError(f"--http {text!r}: the port must be 0-65535")
    return int(port)


def check_bind(address: HttpAddress, allow_remote: bool) -> None:
    if not address.loopback and not allow_remote:
        raise BindError(
            f"--http {address.host}:{address.port} is not a loopback address: anyone who "
            "reaches it could drive this desktop (the MCP server has no authentication); "
            "bind 127.0.0.1, or pass --allow-remote on a network you control"
        )
