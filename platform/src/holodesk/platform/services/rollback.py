"""Installing a service writes its file, then registers it with the OS: when
registering fails, nothing the install made is left behind.

A failed `holodesk service install` (no systemd user session, launchctl or schtasks
refusing) used to leave its unit, plist or task XML on disk, and the next `status`
said "installed". Here the file is put back as it was (removed, or its old content
restored when it replaced one), directories the install created are removed again,
and the manager's own undo (disable, delete the task, re-register the old file)
runs, best effort: the error that is reported is the one that made the install fail.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from pathlib import Path

from holodesk.platform.services.runner import ServiceError

# Called after the file is back as it was: True when an older install was replaced.
Undo = Callable[[bool], None]


@contextlib.contextmanager
def installing(path: Path, content: bytes, undo: Undo) -> Iterator[None]:
    """Write `content` to `path` for the block's registration; on ServiceError, undo."""
    created = missing_directories(path.parent)
    before = path.read_bytes() if path.exists() else None
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(content)
    try:
        yield
    except ServiceError:
        if before is None:
            path.unlink(missing_ok=True)
        else:
            path.write_bytes(before)
        remove_if_empty(created)
        with contextlib.suppress(ServiceError):
            undo(before is not None)
        raise


def missing_directories(directory: Path) -> list[Path]:
    """`directory` and its ancestors that do not exist yet, outermost first."""
    chain = [*reversed(directory.parents), directory]
    return [d for d in chain if not d.exists()]


def remove_if_empty(directories: list[Path]) -> None:
    """Remove directories an install made, innermost first; one not empty stays
    (someone else's files are in it now)."""
    for directory in reversed(directories):
        with contextlib.suppress(OSError):
            directory.rmdir()
