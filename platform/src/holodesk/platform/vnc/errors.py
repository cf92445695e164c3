"""What goes wrong on a VNC connection, each failure with the fix for it."""

from __future__ import annotations

# A lost connection's fix: RfbClient is one connection, the backend makes the next.
RETRY = "the next call reconnects; check that the server still runs"


class RfbError(Exception):
    """A VNC failure with the fix for it."""

    def __init__(self, message: str, fix: str) -> None:
        self.message = message
        self.fix = fix
        super().__init__(f"{message} (fix: {fix})")


class AuthenticationError(RfbError):
    """The server wants credentials we lack, or rejected ours."""


class ConnectionLostError(RfbError):
    """The connection is gone; a new RfbClient is needed."""


def why(error: BaseException) -> str:
    if isinstance(error, RfbError):
        return error.message
    if isinstance(error, TimeoutError):
        return "it stopped answering"
    return str(error) or type(error).__name__
