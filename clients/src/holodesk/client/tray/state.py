"""What the tray shows."""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from pathlib import Path

from holodesk.client.channel import ChannelSettings
from holodesk.client.shown import shown


class TrayState(enum.Enum):
    IDLE = "idle"
    RUNNING = "running"
    PAUSED = "paused"
    ERROR = "error"


@dataclass(frozen=True)
class ServerProfile:
    """A daemon the tray can talk to, as the user named it."""

    name: str
    address: str
    channel: ChannelSettings = field(default_factory=ChannelSettings)


@dataclass(frozen=True)
class TrayStatus:
    state: TrayState
    server: str
    task: str = ""
    session_id: str = ""
    step: int = 0
    # The last session's ending, or what went wrong.
    detail: str = ""
    # A report of the last session exists and can be opened.
    has_report: bool = False
    report: Path | None = None

    @property
    def title(self) -> str:
        """One line for the tray's tooltip and the menu's first entry."""
        words = {
            TrayState.IDLE: "idle",
            TrayState.RUNNING: f"running step {self.step}" if self.step else "starting",
            TrayState.PAUSED: f"paused at step {self.step}",
            TrayState.ERROR: "error",
        }[self.state]
        text = f"holodesk ({self.server}): {words}"
        if self.detail and self.state in (TrayState.IDLE, TrayState.ERROR):
            text += f": {self.detail}"
        # The detail carries the daemon's answer or reason: one inert line.
        return shown(text, multiline=False)
