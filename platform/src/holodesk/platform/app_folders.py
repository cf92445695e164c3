"""Where the OS keeps a desktop application's per-user settings.

Other programs' settings live there too (an MCP host's server list, for one), so a
caller that writes into them asks here instead of checking the OS itself.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping
from pathlib import Path


def app_settings_folder(
    home: Path, environ: Mapping[str, str], platform: str | None = None
) -> Path:
    """The folder applications keep their settings folders in: ~/Library/Application
    Support on macOS, %APPDATA% on Windows, $XDG_CONFIG_HOME (~/.config) elsewhere.

    `platform` is a `sys.platform` spelling (None: this machine's)."""
    platform = sys.platform if platform is None else platform
    if platform == "darwin":
        return home / "Library" / "Application Support"
    if platform == "win32":
        return Path(environ.get("APPDATA") or home / "AppData" / "Roaming")
    return Path(environ.get("XDG_CONFIG_HOME") or home / ".config")
