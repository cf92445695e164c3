"""Portal restore tokens, kept so the user is asked for consent once, not per run.

A session started with persist_mode=2 returns a restore token; passing it to the
next session's SelectDevices/SelectSources lets the portal skip its dialog.
Tokens are single-use (each start returns the next one), and one grants control
of the desktop, so the file is private (0600 in a 0700 directory).

Location: platformdirs' user state directory, `$XDG_STATE_HOME/holodesk/`
(default `~/.local/state/holodesk/`).
"""

from __future__ import annotations

import json
import logging
import os
import tempfile
import threading
from pathlib import Path

import platformdirs

log = logging.getLogger(__name__)

TOKEN_FILE = "wayland-portal-tokens.json"
REMOTE_DESKTOP = "remote_desktop"
SCREENCAST = "screencast"


def state_dir() -> Path:
    """holodesk's per-user state directory (not created)."""
    return Path(platformdirs.user_state_dir("holodesk"))


def default_token_path() -> Path:
    return state_dir() / TOKEN_FILE


class TokenStore:
    """Restore tokens by kind (REMOTE_DESKTOP, SCREENCAST) in one JSON file."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._lock = threading.Lock()

    def get(self, kind: str) -> str | None:
        with self._lock:
            token = self._read().get(kind)
        return token if isinstance(token, str) and token else None

    def put(self, kind: str, token: str | None) -> None:
        """Store the token for `kind`, or forget it (None)."""
        with self._lock:
            tokens = self._read()
            if token:
                tokens[kind] = token
            else:
                tokens.pop(kind, None)
            try:
                self._write(tokens)
            except OSError as error:
                # Not fatal: the next run asks for consent again.
                log.warning("cannot save the portal restore token to %s: %s", self.path, error)

    def _read(self) -> dict[str, object]:
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return {}
        except (OSError, ValueError) as error:
            log.warning("ignoring unreadable portal token file %s: %s", self.path, error)
            return {}
        return data if isinstance(data, dict) else {}

    def _write(self, tokens: dict[str, object]) -> None:
        self.path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        # Atomic replace: a crash mid-write must not leave half a token file.
        handle, temporary = tempfile.mkstemp(prefix=".tokens-", dir=self.path.parent)
        try:
            with os.fdopen(handle, "w", encoding="utf-8") as file:
                json.dump(tokens, file)
            os.chmod(temporary, 0o600)
            os.replace(temporary, self.path)
        except BaseException:
            Path(temporary).unlink(missing_ok=True)
            raise
