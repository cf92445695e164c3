"""A fake evdev.UInput that records events instead of opening /dev/uinput (absent here)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from evdev import UInput, ecodes

Event = tuple[int, int, int]


class FakeUInput(UInput):
    """Keeps what a real device would be created with, and every event written.

    Only the constructor and the write path are replaced: syn() is evdev's own,
    so a SYN_REPORT reaches `events` exactly as the kernel would receive it.
    """

    def __init__(
        self,
        events: dict[int, Sequence[Any]] | None = None,
        name: str = "py-evdev-uinput",
        devnode: str = "/dev/uinput",
        **options: Any,
    ) -> None:
        self.name = name
        self.devnode = devnode
        self.capabilities_requested = dict(events or {})
        self.options = options
        self.events: list[Event] = []
        self.closed = False
        self.fd = -1
        self.device = None  # type: ignore[assignment]

    def write(self, etype: int, code: int, value: int) -> None:
        if self.closed:
            raise OSError(9, "Bad file descriptor")
        self.events.append((etype, code, value))

    def close(self) -> None:
        self.closed = True

    def reports(self) -> list[list[Event]]:
        """Events grouped into SYN_REPORT-terminated reports (SYN itself left out)."""
        reports: list[list[Event]] = []
        current: list[Event] = []
        for event in self.events:
            if event == (ecodes.EV_SYN, ecodes.SYN_REPORT, 0):
                reports.append(current)
                current = []
            else:
                current.append(event)
        assert current == [], f"events without a SYN_REPORT: {current}"
        return reports

    def clear(self) -> None:
        self.events.clear()


class FakeDevices:
    """A device factory for UinputInput that keeps every device it made."""

    def __init__(self) -> None:
        self.made: list[FakeUInput] = []

    def __call__(self, **options: Any) -> FakeUInput:
        device = FakeUInput(**options)
        self.made.append(device)
        return device

    def named(self, name: str) -> FakeUInput:
        [device] = [d for d in self.made if d.name == name]
        return device
