"""The bearer token the client presents to the daemon, read from a file.

The token never appears in a repr, a log line or an exception message: errors
name the file, never its content.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

TOKEN_FILE_ENV = "HOLODESK_TOKEN_FILE"
# A token is one line; anything bigger is the wrong file.
MAX_TOKEN_BYTES = 4096


class CredentialsError(Exception):
    """A credential file is missing, unreadable or malformed (the message says which)."""


@dataclass(frozen=True)
class BearerToken:
    value: str = field(repr=False)
    source: str = ""

    def __repr__(self) -> str:
        return f"BearerToken(from {self.source or 'memory'}, {len(self.value)} characters)"

    __str__ = __repr__

    @property
    def header(self) -> tuple[str, str]:
        """The gRPC metadata pair the daemon checks."""
        return ("authorization", f"Bearer {self.value}")


def read_token_file(path: Path) -> BearerToken:
    """The token in `path`: one line of visible ASCII, surrounding whitespace ignored."""
    try:
        if path.stat().st_size > MAX_TOKEN_BYTES:
            raise CredentialsError(
                f"token file {path} is over {MAX_TOKEN_BYTES} bytes: not a token"
            )
        raw = path.read_bytes()
    except FileNotFoundError:
        raise CredentialsError(f"token file {path} does not exist") from None
    except IsADirectoryError:
        raise CredentialsError(f"token file {path} is a directory") from None
    except PermissionError:
        raise CredentialsError(f"token file {path} is not readable by this user") from None
    try:
        text = raw.decode("ascii").strip()
    except UnicodeDecodeError:
        raise CredentialsError(f"token file {path} holds non-ASCII bytes") from None
    if not text:
        raise CredentialsError(f"token file {path} is empty")
    # Header values must be visible ASCII; a space or line break means a wrong file.
    if any(not 0x21 <= ord(c) <= 0x7E for c in text):
        raise CredentialsError(
            f"token file {path} must hold one token: visible ASCII, no spaces or line breaks"
        )
    return BearerToken(text, str(path))


def token_file_from_env(environ: Mapping[str, str] | None = None) -> Path | None:
    value = (os.environ if environ is None else environ).get(TOKEN_FILE_ENV, "").strip()
    return Path(value) if value else None
