"""Errors of the platform layer: each says what went wrong and how to fix it."""

from __future__ import annotations

from collections.abc import Iterable, Sequence


class PlatformError(Exception):
    """Base of every error the platform layer raises on purpose."""


class BackendUnavailableError(PlatformError):
    """No usable backend: lists every cause found, each with its fix.

    Collecting all causes at once (rather than failing on the first) saves the
    user a fix-rerun-fix loop, e.g. "python-xlib missing" and "DISPLAY unset".
    """

    def __init__(self, causes: Iterable[tuple[str, str]], *, backend: str | None = None) -> None:
        self.backend = backend
        self.causes: list[tuple[str, str]] = list(causes)
        if not self.causes:
            raise ValueError("BackendUnavailableError needs at least one (cause, fix)")
        super().__init__(self._render())

    def _render(self) -> str:
        subject = f"the {self.backend!r} platform backend" if self.backend else "the platform layer"
        lines = [f"{subject} is unavailable:"]
        for number, (cause, fix) in enumerate(self.causes, start=1):
            lines.append(f"  {number}. {cause}")
            lines.append(f"     fix: {fix}")
        return "\n".join(lines)


class UnknownKeyError(PlatformError, ValueError):
    """A key name outside the contract's vocabulary."""

    def __init__(self, key: str, vocabulary: Sequence[str]) -> None:
        self.key = key
        self.vocabulary = tuple(vocabulary)
        super().__init__(
            f"unknown key {key!r}: use one of {', '.join(self.vocabulary)}, or any single character"
        )


class InputError(PlatformError):
    """Injecting input failed (the OS refused it, or it cannot be expressed)."""


class InputInterruptedError(InputError):
    """An input action stopped part-way because its stop signal was set (an emergency
    stop, Ctrl-C, a cancel): what it had sent stays sent, nothing more follows."""


class CaptureError(PlatformError):
    """Reading the screen failed (the display went away, or refused the capture)."""


class NavigationError(PlatformError):
    """Loading a URL failed (bad URL, network error, timeout)."""


class HotkeyError(PlatformError):
    """A global hotkey cannot be listened for here; the message says why and what to do."""
