"""The backend's one RFB connection: shared by screen and input, reopened after a drop.

A dropped connection is reported once, as the error of the call that found it
(InputError or CaptureError, so the agent learns that held keys are gone and
the screen may have changed); the call after that connects afresh.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TypeVar

from holodesk.platform.errors import PlatformError
from holodesk.platform.vnc.client import RfbClient
from holodesk.platform.vnc.errors import ConnectionLostError, RfbError
from holodesk.platform.vnc.handshake import DEFAULT_ENCODINGS, ServerInfo
from holodesk.platform.vnc.keys import BOOK

T = TypeVar("T")

DEFAULT_PORT = 5900


@dataclass(frozen=True)
class VncTarget:
    """Where a VNC server is and how to talk to it."""

    host: str = "127.0.0.1"
    port: int = DEFAULT_PORT
    password: str | None = field(default=None, repr=False)
    encodings: tuple[str, ...] = DEFAULT_ENCODINGS
    connect_timeout_s: float = 10.0
    shared: bool = True

    def __post_init__(self) -> None:
        if not self.host:
            raise ValueError("a VNC host cannot be empty")
        if not 0 < self.port < 65536:
            raise ValueError(f"a TCP port is 1-65535, not {self.port}")
        if self.connect_timeout_s <= 0:
            raise ValueError(f"connect_timeout_s must be positive, not {self.connect_timeout_s}")

    @property
    def address(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{host}:{self.port}"

    def connect(self) -> RfbClient:
        return RfbClient.connect(
            self.host,
            self.port,
            self.password,
            encodings=self.encodings,
            timeout_s=self.connect_timeout_s,
            shared=self.shared,
        )


class VncLink:
    """Hands out a live client; thread-safe (input may be released from another thread)."""

    def __init__(self, target: VncTarget, client: RfbClient) -> None:
        self.target = target
        self._client: RfbClient | None = client
        self._info = client.info
        self._lock = threading.Lock()
        self._closed = False
        self.reconnects = 0

    @property
    def info(self) -> ServerInfo:
        """The server as of the latest connection."""
        client = self._client
        return client.info if client is not None else self._info

    def run(self, action: Callable[[RfbClient], T], error: type[PlatformError], what: str) -> T:
        """`action` on a live client; every VNC failure comes out as `error`."""
        client = self._live(error, what)
        try:
            return action(client)
        except ConnectionLostError as lost:
            self._discard(client)
            raise error(self._lost_message(what, lost)) from lost
        except RfbError as failure:
            raise error(f"{what} failed: {failure}") from failure

    def close(self) -> None:
        with self._lock:
            self._closed = True
            client, self._client = self._client, None
        if client is not None:
            client.close()

    def _live(self, error: type[PlatformError], what: str) -> RfbClient:
        with self._lock:
            if self._closed:
                raise error(f"{what} failed: this VNC backend is closed")
            client = self._client
            if client is not None:
                lost = client.error()
                if lost is None:
                    return client
                # Found dead between calls: this call reports it, the next reconnects.
                self._client = None
                client.close()
                BOOK.forget(client.info.address)
                raise error(self._lost_message(what, lost))
            try:
                client = self.target.connect()
            except RfbError as failure:
                raise error(f"{what} failed: cannot reconnect: {failure}") from failure
            self._client = client
            self._info = client.info
            self.reconnects += 1
            return client

    def _discard(self, client: RfbClient) -> None:
        with self._lock:
            if self._client is client:
                self._client = None
        client.close()
        BOOK.forget(client.info.address)

    def _lost_message(self, what: str, lost: RfbError) -> str:
        return (
            f"{what} failed: the connection to the VNC server at {self.target.address} "
            f"was lost ({lost.message}); the next call reconnects "
            "(fix: check that the server still runs)"
        )
