"""The fail-safe corner: a pointer flung into a display corner stops the agent.

Like pyautogui's FAILSAFE, but for every corner of every display of the virtual
desktop, and blind to where the client itself left the pointer: an agent that
clicks a corner (a maximised window's close button) does not stop itself.
"""

from __future__ import annotations

from dataclasses import dataclass

from holodesk.platform.base import DisplayInfo, InputDriver, ScreenSource


@dataclass(frozen=True)
class Corner:
    display_id: str
    name: str


def corner_at(x: int, y: int, displays: list[DisplayInfo], size: int) -> Corner | None:
    """The display corner whose `size` x `size` square holds (x, y), if any."""
    for display in displays:
        b = display.bounds
        if not b.contains(x, y):
            continue
        near_left, near_right = x - b.x < size, b.right - 1 - x < size
        near_top, near_bottom = y - b.y < size, b.bottom - 1 - y < size
        vertical = "top" if near_top else "bottom" if near_bottom else ""
        horizontal = "left" if near_left else "right" if near_right else ""
        if vertical and horizontal:
            return Corner(display.display_id, f"{vertical}-{horizontal}")
    return None


class FailSafe:
    """Checked on the backend thread (cursor queries can be thread-affine)."""

    def __init__(self, pointer: InputDriver, screen: ScreenSource, size: int) -> None:
        self._pointer = pointer
        self._screen = screen
        self._size = size
        self._ours: tuple[int, int] | None = None

    def check(self) -> str:
        """Why to stop ('' when the pointer is not in a corner the user put it in)."""
        position = self._pointer.cursor_position()
        if position == self._ours:
            return ""
        corner = corner_at(*position, self._screen.displays(), self._size)
        if corner is None:
            return ""
        return (
            f"fail-safe: the pointer is in the {corner.name} corner of display "
            f"{corner.display_id!r} (move it out of the corner before starting again)"
        )

    def note_position(self) -> None:
        """After an action: wherever the pointer is now, the client put it there."""
        self._ours = self._pointer.cursor_position()
