"""Plain geometry values shared by frames and actions (no protobuf here)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Point:
    """A point; which space it lives in is said by whoever holds it."""

    x: float
    y: float


@dataclass(frozen=True)
class Size:
    width: int
    height: int

    @property
    def pixels(self) -> int:
        return self.width * self.height


@dataclass(frozen=True)
class Rect:
    x: int
    y: int
    width: int
    height: int
