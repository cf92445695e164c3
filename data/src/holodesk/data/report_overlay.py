"""The drawing over a report's frame: each pointer action as SVG in the frame's own
pixel coordinates (the SVG's viewBox is the frame size, so the drawing scales with
the image), numbered as in the step's action list."""

from __future__ import annotations

import math
from dataclasses import dataclass

from holodesk.data.report_words import button_name, click_label, e, scroll_words
from holodesk.data.stepview import FrameRef, Json, LoadedRecording

# Marker colours per kind of pointer action (tests look for CLICK_COLOR's pixels).
CLICK_COLOR = "#e6007e"
DRAG_COLOR = "#0077ff"
SCROLL_COLOR = "#ff8c00"
MOVE_COLOR = "#8e44ad"
PRESS_COLOR = "#00a383"


@dataclass(frozen=True)
class _Scale:
    """Marker sizes in frame pixels, and the mapping of another frame's points onto this one."""

    unit: float
    width: int
    height: int
    sx: float = 1.0
    sy: float = 1.0

    def point(self, raw: object) -> tuple[float, float] | None:
        if not isinstance(raw, dict):
            return None
        try:
            return float(raw.get("x", 0.0)) * self.sx, float(raw.get("y", 0.0)) * self.sy
        except (TypeError, ValueError):
            return None


def overlay(step: int, frame: FrameRef, actions: list[Json], recording: LoadedRecording) -> str:
    width, height = frame.width, frame.height
    unit = max(8.0, max(width, height) / 90)
    shapes: list[str] = []
    for number, action in enumerate(actions, start=1):
        scale = _scale_for(action, frame, recording, unit)
        shapes.append(_shape(step, number, action, scale))
    body = "".join(s for s in shapes if s)
    if not body:
        return ""
    defs = "".join(
        f'<marker id="arrow-{step}-{kind}" viewBox="0 0 10 10" refX="7" refY="5" '
        f'markerWidth="4" markerHeight="4" orient="auto-start-reverse">'
        f'<path d="M0,0 L10,5 L0,10 z" fill="{color}"/></marker>'
        for kind, color in (("drag", DRAG_COLOR), ("scroll", SCROLL_COLOR))
    )
    return (
        f'<svg class="overlay" viewBox="0 0 {width} {height}" preserveAspectRatio="none" '
        f'xmlns="http://www.w3.org/2000/svg" aria-hidden="true"><defs>{defs}</defs>{body}</svg>'
    )


def _scale_for(action: Json, frame: FrameRef, recording: LoadedRecording, unit: float) -> _Scale:
    # Coordinates are in the pixels of the frame the action names; draw them on this one.
    named = recording.frames.get(str(action.get("frame_id") or ""))
    if named is None or named.frame_id == frame.frame_id or not named.width or not named.height:
        return _Scale(unit, frame.width, frame.height)
    return _Scale(
        unit, frame.width, frame.height, frame.width / named.width, frame.height / named.height
    )


def _shape(step: int, number: int, action: Json, s: _Scale) -> str:
    u = s.unit
    stroke = f"{0.3 * u:.2f}"
    if "click" in action:
        click = action["click"]
        point = s.point(click.get("point"))
        if point is None:
            return ""
        x, y = point
        label = click_label(click)
        return (
            f'<g class="click" data-action="{number}">'
            f'<circle cx="{x:.1f}" cy="{y:.1f}" r="{1.5 * u:.1f}" fill="none" '
            f'stroke="{CLICK_COLOR}" stroke-width="{stroke}"/>'
            f'<circle cx="{x:.1f}" cy="{y:.1f}" r="{0.5 * u:.1f}" fill="{CLICK_COLOR}"/>'
            f"{_badge(number, x, y, s, CLICK_COLOR, label)}</g>"
        )
    if "drag" in action:
        points = [p for p in (s.point(r) for r in action["drag"].get("path") or []) if p]
        if len(points) < 2:
            return ""
        path = " ".join(f"{x:.1f},{y:.1f}" for x, y in points)
        x0, y0 = points[0]
        return (
            f'<g class="drag" data-action="{number}">'
            f'<polyline points="{path}" fill="none" stroke="{DRAG_COLOR}" stroke-width="{stroke}" '
            f'stroke-linejoin="round" stroke-linecap="round" marker-end="url(#arrow-{step}-drag)"/>'
            f'<circle cx="{x0:.1f}" cy="{y0:.1f}" r="{0.5 * u:.1f}" fill="{DRAG_COLOR}"/>'
            f"{_badge(number, x0, y0, s, DRAG_COLOR, 'drag')}</g>"
        )
    if "scroll" in action:
        scroll = action["scroll"]
        point = s.point(scroll.get("point"))
        if point is None:
            return ""
        x, y = point
        dx, dy = int(scroll.get("dx", 0)), int(scroll.get("dy", 0))
        length = math.hypot(dx, dy)
        if not length:
            return ""
        reach = 2.5 * u + u * min(length, 10)
        x1, y1 = x + dx / length * reach, y + dy / length * reach
        return (
            f'<g class="scroll" data-action="{number}">'
            f'<line x1="{x:.1f}" y1="{y:.1f}" x2="{x1:.1f}" y2="{y1:.1f}" stroke="{SCROLL_COLOR}" '
            f'stroke-width="{stroke}" stroke-linecap="round" '
            f'marker-end="url(#arrow-{step}-scroll)"/>'
            f'<circle cx="{x:.1f}" cy="{y:.1f}" r="{0.5 * u:.1f}" fill="{SCROLL_COLOR}"/>'
            f"{_badge(number, x, y, s, SCROLL_COLOR, scroll_words(dx, dy))}</g>"
        )
    for kind, color, word in (
        ("move", MOVE_COLOR, "move"),
        ("mouse_down", PRESS_COLOR, "down"),
        ("mouse_up", PRESS_COLOR, "up"),
    ):
        if kind in action:
            point = s.point(action[kind].get("point"))
            if point is None:
                return ""
            x, y = point
            button = button_name(action[kind].get("button"))
            label = word if kind == "move" or button == "left" else f"{word} {button}"
            return (
                f'<g class="{kind}" data-action="{number}">'
                f'<circle cx="{x:.1f}" cy="{y:.1f}" r="{1.1 * u:.1f}" fill="none" '
                f'stroke="{color}" stroke-width="{stroke}" stroke-dasharray="{0.6 * u:.1f}"/>'
                f"{_badge(number, x, y, s, color, label)}</g>"
            )
    return ""


def _badge(number: int, x: float, y: float, s: _Scale, color: str, label: str) -> str:
    """The action's number in a disc up and right of the point (kept inside the frame), and
    a short label beside it: the dot at the point itself stays visible."""
    u = s.unit
    r = 0.95 * u
    bx = min(max(x + 2.2 * u, r), s.width - r)
    by = min(max(y - 2.2 * u, r), s.height - r)
    font = f"{1.2 * u:.1f}"
    text = (
        f'<text x="{bx + 1.3 * u:.1f}" y="{by + 0.42 * u:.1f}" font-size="{font}" '
        f'font-family="sans-serif" font-weight="700" fill="{color}" stroke="#fff" '
        f'stroke-width="{0.25 * u:.2f}" paint-order="stroke">{e(label)}</text>'
        if label
        else ""
    )
    return (
        f'<circle cx="{bx:.1f}" cy="{by:.1f}" r="{r:.1f}" fill="{color}" stroke="#fff" '
        f'stroke-width="{0.15 * u:.2f}"/>'
        f'<text x="{bx:.1f}" y="{by + 0.42 * u:.1f}" font-size="{font}" text-anchor="middle" '
        f'font-family="sans-serif" font-weight="700" fill="#fff">{number}</text>{text}'
    )


def is_pointer(action: Json) -> bool:
    if any(k in action for k in ("click", "drag", "scroll", "move")):
        return True
    return any(k in action and "point" in action[k] for k in ("mouse_down", "mouse_up"))


def number_color(action: Json) -> str:
    for kind, color in (
        ("click", CLICK_COLOR),
        ("drag", DRAG_COLOR),
        ("scroll", SCROLL_COLOR),
        ("move", MOVE_COLOR),
        ("mouse_down", PRESS_COLOR),
        ("mouse_up", PRESS_COLOR),
    ):
        if kind in action:
            return color
    return "#7a8599"
