"""The home convention: `~` and OSWorld's `/home/user` mean the task's fresh HOME.

OSWorld's tasks run in a VM whose user is `user`, so their paths say
`/home/user/Desktop/x.txt`; ours run on this host in a HOME made for the task. Both
spellings are rewritten here and nowhere else, so a task file works unchanged in both
places and never touches the real home of whoever runs the suite."""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path

OSWORLD_HOME = "/home/user"

# `~` or /home/user at the start of a word, alone or before a slash.
_WORD = re.compile(r"(?<![^\s'\"=:;|&(])(?:~|/home/user)(?=/|$|[\s'\";|&)])")


def expand_path(path: str, home: Path) -> Path:
    """A task's path on this host: `~`, `~/x`, `/home/user`, `/home/user/x` inside
    `home`; other absolute paths as they are; relative paths relative to `home`."""
    if path in ("~", OSWORLD_HOME):
        return home
    for prefix in ("~/", OSWORLD_HOME + "/"):
        if path.startswith(prefix):
            return home / path[len(prefix) :]
    candidate = Path(path)
    return candidate if candidate.is_absolute() else home / candidate


def expand_text(text: str, home: Path) -> str:
    """A command line with every `~` / `/home/user` word start rewritten to `home`."""
    return _WORD.sub(lambda _: str(home), text)


def expand_command(command: str | Sequence[str], home: Path) -> str | list[str]:
    """A command (a shell string, or an argument list) with the home rewritten in it."""
    if isinstance(command, str):
        return expand_text(command, home)
    return [expand_text(str(part), home) for part in command]
