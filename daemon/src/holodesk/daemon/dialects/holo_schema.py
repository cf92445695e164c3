"""Pydantic models of the Holo answer format, used only for their JSON schema
(structured decoding); parsing is lenient and lives in holo.py.

Coordinate fields are declared once as numbers; `_constrain` then writes each
convention's bounds and wording into the generated schema.
"""

from __future__ import annotations

import copy
from functools import cache
from typing import Any, Literal

from pydantic import BaseModel, Field

from holodesk.daemon.dialects.coords import CoordinateConvention

_ELEMENT = "what the target is, in a few words"


class _Point(BaseModel):
    x: float
    y: float


class ClickElement(BaseModel):
    action: Literal["click_element"]
    element: str = Field(default="", description=_ELEMENT)
    x: float
    y: float


class WriteElement(BaseModel):
    """Click the element at x, y, then type content."""

    action: Literal["write_element_abs"]
    content: str
    element: str = Field(default="", description=_ELEMENT)
    x: float
    y: float


class ScrollPage(BaseModel):
    action: Literal["scroll"]
    direction: Literal["up", "down", "left", "right"]


class Hotkey(BaseModel):
    """Press keys together, e.g. ["ctrl", "c"]."""

    action: Literal["hotkey"]
    keys: list[str] = Field(min_length=1)


class WaitSeconds(BaseModel):
    action: Literal["wait"]
    seconds: int = Field(default=2, ge=0, le=30)


class Answer(BaseModel):
    """The task is done; content is the final answer."""

    action: Literal["answer"]
    content: str


class DoubleClick(BaseModel):
    action: Literal["double_click"]
    element: str = Field(default="", description=_ELEMENT)
    x: float
    y: float


class RightClick(BaseModel):
    action: Literal["right_click"]
    element: str = Field(default="", description=_ELEMENT)
    x: float
    y: float


class MovePointer(BaseModel):
    action: Literal["move"]
    x: float
    y: float


class DragPath(BaseModel):
    """Press at the first point, move through the others, release at the last."""

    action: Literal["drag"]
    path: list[_Point] = Field(min_length=2)


class KeyDown(BaseModel):
    action: Literal["key_down"]
    key: str


class KeyUp(BaseModel):
    action: Literal["key_up"]
    key: str


class FailTask(BaseModel):
    """The task cannot be done; reason says why."""

    action: Literal["fail"]
    reason: str


class AskUser(BaseModel):
    """Only a human can continue; ask them."""

    action: Literal["ask_user"]
    question: str


class HoloStep(BaseModel):
    note: str = Field(default="", description="task-relevant facts to remember; may be empty")
    thought: str = Field(description="reasoning about the next step, a few lines")
    action: (
        ClickElement
        | WriteElement
        | ScrollPage
        | Hotkey
        | WaitSeconds
        | Answer
        | DoubleClick
        | RightClick
        | MovePointer
        | DragPath
        | KeyDown
        | KeyUp
        | FailTask
        | AskUser
    )


class ClickCoordinates(BaseModel):
    x: float
    y: float


@cache
def _step_schema(convention: CoordinateConvention) -> dict[str, Any]:
    return _constrain(HoloStep.model_json_schema(), convention)


@cache
def _location_schema(convention: CoordinateConvention) -> dict[str, Any]:
    return _constrain(ClickCoordinates.model_json_schema(), convention)


def step_schema(convention: CoordinateConvention) -> dict[str, Any]:
    return copy.deepcopy(_step_schema(convention))


def location_schema(convention: CoordinateConvention) -> dict[str, Any]:
    return copy.deepcopy(_location_schema(convention))


def _constrain(schema: dict[str, Any], convention: CoordinateConvention) -> dict[str, Any]:
    where = {
        CoordinateConvention.NORMALIZED_1000: "normalized 0-1000 across the screenshot",
        CoordinateConvention.RESIZED_PIXELS: "pixels of the screenshot",
        CoordinateConvention.UNIT: "a fraction 0-1 of the screenshot",
    }[convention]
    upper = {CoordinateConvention.NORMALIZED_1000: 1000, CoordinateConvention.UNIT: 1}.get(
        convention
    )
    kind = "number" if convention is CoordinateConvention.UNIT else "integer"
    models = [schema, *schema.get("$defs", {}).values()]
    for model in models:
        props = model.get("properties", {})
        for axis, edge in (("x", "left"), ("y", "top")):
            if axis not in props:
                continue
            prop: dict[str, Any] = {
                "type": kind,
                "minimum": 0,
                "description": f"{axis} from the {edge} edge, {where}",
                "title": axis.upper(),
            }
            if upper is not None:
                prop["maximum"] = upper
            props[axis] = prop
    return schema
