"""What every output parser provides, and its only error type."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from holodesk.daemon.actions import ActionKind
from holodesk.daemon.dialects.coords import ImageGeometry
from holodesk.daemon.geometry import Box, Point

if TYPE_CHECKING:
    from holodesk.daemon.dialects.spec import DialectSpec


class DialectParseError(Exception):
    """Model output that cannot become actions. `hint` is a short repair instruction
    that a retry appends to the conversation."""

    def __init__(self, message: str, hint: str = "") -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint


@dataclass(frozen=True)
class ParsedStep:
    """A model step; action coordinates already in FRAME pixels."""

    actions: tuple[ActionKind, ...]
    thought: str = ""
    note: str = ""


@dataclass(frozen=True)
class LocatedTarget:
    """A located element in FRAME pixels: the point to act on, and the element's box
    where the model gave one (then the box lies within the frame and contains the point)."""

    point: Point
    box: Box | None = None


class OutputParser(Protocol):
    """Turns a model's text into actions. Implementations raise DialectParseError
    and nothing else, whatever the text."""

    name: str

    def parse_step(self, text: str, spec: DialectSpec, geometry: ImageGeometry) -> ParsedStep: ...

    def parse_location(
        self, text: str, spec: DialectSpec, geometry: ImageGeometry
    ) -> LocatedTarget:
        """The located point, and box if any, in frame pixels."""
        ...

    def step_schema(self, spec: DialectSpec) -> dict[str, Any] | None:
        """JSON schema for structured decoding of a step; None for free-text formats."""
        ...

    def location_schema(self, spec: DialectSpec) -> dict[str, Any] | None: ...

    def render_actions(
        self,
        actions: Sequence[ActionKind],
        spec: DialectSpec,
        geometry: ImageGeometry | None,
    ) -> str:
        """Earlier actions as history text, with points in the model's own space
        (`geometry` is that step's frame; None: show frame pixels)."""
        ...
