"""The directions of the contract the client never takes, for tests: client values
written as protobuf (an action, a frame spec) and read back from it (a frame, a
display, a result), as a daemon or a scripted server would.

They spell the wire with the generated enums' own names, not with the client's
tables, so a round trip through them checks holodesk.client.convert independently.
"""

from __future__ import annotations

from datetime import UTC

from holodesk.client import actions as a
from holodesk.client.frames import FramePatch, FrameSpec, SentFrame
from holodesk.platform.base import DisplayInfo, MouseButton, Region
from holodesk.proto.v1 import action_pb2, frame_pb2, geometry_pb2
from holodesk.values.encoding import ImageEncoding


def _button(button: MouseButton) -> action_pb2.MouseButton.ValueType:
    return action_pb2.MouseButton.Value(f"MOUSE_BUTTON_{button.name}")


def _modifiers(modifiers: tuple[str, ...]) -> list[action_pb2.Modifier.ValueType]:
    return [action_pb2.Modifier.Value(f"MODIFIER_{m.upper()}") for m in modifiers]


def _encoding(encoding: ImageEncoding) -> frame_pb2.ImageEncoding.ValueType:
    return frame_pb2.ImageEncoding.Value(f"IMAGE_ENCODING_{encoding.name}")


def _encoding_back(value: frame_pb2.ImageEncoding.ValueType) -> ImageEncoding:
    return ImageEncoding[frame_pb2.ImageEncoding.Name(value).removeprefix("IMAGE_ENCODING_")]


def _region(rect: geometry_pb2.Rect) -> Region:
    return Region(rect.x, rect.y, rect.width, rect.height)


def _point(p: a.FramePoint) -> geometry_pb2.Point:
    return geometry_pb2.Point(x=p.x, y=p.y)


def action_to_pb(action: a.Action) -> action_pb2.Action:
    """An action as the daemon sends it."""
    pb = action_pb2.Action(action_id=action.action_id, frame_id=action.frame_id)
    if isinstance(action, a.Click):
        pb.click.CopyFrom(
            action_pb2.ClickAction(
                point=_point(action.point),
                button=_button(action.button),
                count=action.count,
                modifiers=_modifiers(action.modifiers),
            )
        )
    elif isinstance(action, a.Move):
        pb.move.point.CopyFrom(_point(action.point))
    elif isinstance(action, a.MouseDown | a.MouseUp):
        target = pb.mouse_down if isinstance(action, a.MouseDown) else pb.mouse_up
        target.button = _button(action.button)
        if action.point is not None:
            target.point.CopyFrom(_point(action.point))
    elif isinstance(action, a.Drag):
        pb.drag.CopyFrom(
            action_pb2.DragAction(
                path=[_point(p) for p in action.path],
                button=_button(action.button),
                modifiers=_modifiers(action.modifiers),
                duration_ms=action.duration_ms,
            )
        )
    elif isinstance(action, a.Scroll):
        pb.scroll.CopyFrom(
            action_pb2.ScrollAction(point=_point(action.point), dx=action.dx, dy=action.dy)
        )
    elif isinstance(action, a.TypeText):
        pb.type_text.text = action.text
    elif isinstance(action, a.KeyChord):
        pb.key_chord.keys.extend(action.keys)
    elif isinstance(action, a.KeyDown):
        pb.key_down.key = action.key
    elif isinstance(action, a.KeyUp):
        pb.key_up.key = action.key
    elif isinstance(action, a.Wait):
        pb.wait.duration_ms = action.duration_ms
    elif isinstance(action, a.Done):
        pb.done.answer = action.answer
    elif isinstance(action, a.Fail):
        pb.fail.reason = action.reason
    elif isinstance(action, a.AskUser):
        pb.ask_user.question = action.question
    elif isinstance(action, a.Navigate):
        pb.navigate.url = action.url
    else:
        raise TypeError(f"no wire form for {action!r}")
    return pb


def frame_spec_to_pb(spec: FrameSpec) -> frame_pb2.FrameSpec:
    """A frame spec as the daemon sends it."""
    return frame_pb2.FrameSpec(
        max_width=spec.max_width,
        max_height=spec.max_height,
        encoding=_encoding(spec.encoding),
        quality=spec.quality,
        max_bytes=spec.max_bytes,
        accept_deltas=spec.accept_deltas,
    )


def frame_from_pb(frame: frame_pb2.Frame) -> SentFrame:
    """A frame as the daemon reads it."""
    return SentFrame(
        frame_id=frame.frame_id,
        width=frame.size.width,
        height=frame.size.height,
        encoding=_encoding_back(frame.encoding) if frame.encoding else ImageEncoding.PNG,
        data=frame.data,
        display_id=frame.display_id,
        source=_region(frame.source),
        scale_factor=frame.scale_factor,
        captured_at=frame.captured_at.ToDatetime(tzinfo=UTC),
        base_frame_id=frame.base_frame_id,
        patches=tuple(
            FramePatch(
                x=p.rect.x,
                y=p.rect.y,
                width=p.rect.width,
                height=p.rect.height,
                encoding=_encoding_back(p.encoding),
                data=p.data,
            )
            for p in frame.patches
        ),
    )


def display_from_pb(display: geometry_pb2.Display) -> DisplayInfo:
    """A display as the daemon reads it."""
    return DisplayInfo(
        display_id=display.display_id,
        bounds=_region(display.bounds),
        scale_factor=display.scale_factor,
        primary=display.primary,
        name=display.name,
    )


def result_from_pb(result: action_pb2.ActionResult) -> a.ActionResult:
    """An action's result as the daemon reads it."""
    name = action_pb2.ActionStatus.Name(result.status).removeprefix("ACTION_STATUS_")
    return a.ActionResult(result.action_id, a.ActionStatus[name], result.error, result.duration_ms)
