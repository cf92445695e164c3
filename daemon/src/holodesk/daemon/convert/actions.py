"""Actions out (action.proto, a step's Actions message) and their results back in.

The enum tables (buttons, modifiers, statuses) sit beside the two functions that
use them; actions_violation is here because an action's payload cannot be cut to
its limit without changing what it does (the runner refuses to send it instead).
"""

from __future__ import annotations

from collections.abc import Iterable

from holodesk.daemon import actions as act
from holodesk.daemon.convert.generation import generation_to_pb
from holodesk.daemon.convert.geometry import point_to_pb
from holodesk.daemon.errors import InvalidArgument
from holodesk.daemon.generation import StepGeneration
from holodesk.daemon.geometry import Point
from holodesk.proto import limits
from holodesk.proto.limits import clip
from holodesk.proto.v1 import action_pb2, agent_pb2, geometry_pb2

_BUTTONS_PB = {
    act.MouseButton.LEFT: action_pb2.MOUSE_BUTTON_LEFT,
    act.MouseButton.RIGHT: action_pb2.MOUSE_BUTTON_RIGHT,
    act.MouseButton.MIDDLE: action_pb2.MOUSE_BUTTON_MIDDLE,
    act.MouseButton.BACK: action_pb2.MOUSE_BUTTON_BACK,
    act.MouseButton.FORWARD: action_pb2.MOUSE_BUTTON_FORWARD,
}

_MODIFIERS_PB = {
    act.Modifier.CTRL: action_pb2.MODIFIER_CTRL,
    act.Modifier.SHIFT: action_pb2.MODIFIER_SHIFT,
    act.Modifier.ALT: action_pb2.MODIFIER_ALT,
    act.Modifier.META: action_pb2.MODIFIER_META,
}

_STATUSES = {
    action_pb2.ACTION_STATUS_OK: act.ActionStatus.OK,
    action_pb2.ACTION_STATUS_FAILED: act.ActionStatus.FAILED,
    action_pb2.ACTION_STATUS_REJECTED: act.ActionStatus.REJECTED,
    action_pb2.ACTION_STATUS_SKIPPED: act.ActionStatus.SKIPPED,
    action_pb2.ACTION_STATUS_NOT_DELIVERED: act.ActionStatus.NOT_DELIVERED,
}
_STATUSES_PB = {status: value for value, status in _STATUSES.items()}


def result_from_pb(result: action_pb2.ActionResult, field: str) -> act.ActionResult:
    if not result.action_id:
        raise InvalidArgument(f"{field}.action_id", "must be set")
    status = _STATUSES.get(result.status)
    if status is None:
        raise InvalidArgument(
            f"{field}.status", "must be OK, FAILED, REJECTED, SKIPPED or NOT_DELIVERED"
        )
    return act.ActionResult(result.action_id, status, result.error, result.duration_ms)


def result_to_pb(result: act.ActionResult) -> action_pb2.ActionResult:
    """A result back out (ComputerService answers its caller with what its desktop did)."""
    return action_pb2.ActionResult(
        action_id=result.action_id,
        status=_STATUSES_PB[result.status],
        error=result.error,
        duration_ms=result.duration_ms,
    )


def results_from_pb(
    results: Iterable[action_pb2.ActionResult], field: str
) -> tuple[act.ActionResult, ...]:
    return tuple(result_from_pb(r, f"{field}[{i}]") for i, r in enumerate(results))


def _point_or_none(point: Point | None) -> geometry_pb2.Point | None:
    return None if point is None else point_to_pb(point)


def action_to_pb(action: act.Action) -> action_pb2.Action:
    out = action_pb2.Action(action_id=action.action_id, frame_id=action.frame_id)
    match action.kind:
        case act.Click(point=p, button=b, count=c, modifiers=m):
            out.click.CopyFrom(
                action_pb2.ClickAction(
                    point=point_to_pb(p),
                    button=_BUTTONS_PB[b],
                    count=c,
                    modifiers=[_MODIFIERS_PB[x] for x in m],
                )
            )
        case act.Move(point=p):
            out.move.CopyFrom(action_pb2.MoveAction(point=point_to_pb(p)))
        case act.MouseDown(button=b, point=p):
            out.mouse_down.CopyFrom(
                action_pb2.MouseDownAction(button=_BUTTONS_PB[b], point=_point_or_none(p))
            )
        case act.MouseUp(button=b, point=p):
            out.mouse_up.CopyFrom(
                action_pb2.MouseUpAction(button=_BUTTONS_PB[b], point=_point_or_none(p))
            )
        case act.Drag(path=path, button=b, modifiers=m, duration_ms=ms):
            out.drag.CopyFrom(
                action_pb2.DragAction(
                    path=[point_to_pb(p) for p in path],
                    button=_BUTTONS_PB[b],
                    modifiers=[_MODIFIERS_PB[x] for x in m],
                    duration_ms=ms,
                )
            )
        case act.Scroll(point=p, dx=dx, dy=dy):
            out.scroll.CopyFrom(action_pb2.ScrollAction(point=point_to_pb(p), dx=dx, dy=dy))
        case act.TypeText(text=t):
            out.type_text.CopyFrom(action_pb2.TypeTextAction(text=t))
        case act.KeyChord(keys=keys):
            out.key_chord.CopyFrom(action_pb2.KeyChordAction(keys=list(keys)))
        case act.KeyDown(key=k):
            out.key_down.CopyFrom(action_pb2.KeyDownAction(key=k))
        case act.KeyUp(key=k):
            out.key_up.CopyFrom(action_pb2.KeyUpAction(key=k))
        case act.Wait(duration_ms=ms):
            out.wait.CopyFrom(action_pb2.WaitAction(duration_ms=ms))
        case act.Done(answer=a):
            out.done.CopyFrom(action_pb2.DoneAction(answer=a))
        case act.Fail(reason=r):
            out.fail.CopyFrom(action_pb2.FailAction(reason=r))
        case act.AskUser(question=q):
            out.ask_user.CopyFrom(action_pb2.AskUserAction(question=clip(q, limits.TEXT_CHARS)))
        case act.Navigate(url=u):
            out.navigate.CopyFrom(action_pb2.NavigateAction(url=u))
    return out


def actions_violation(message: agent_pb2.Actions) -> limits.Violation | None:
    """The first action of a batch whose payload (text to type, URL, keys, path) is
    over its contract limit. Such text cannot be cut without changing what the
    action does, so the session runner refuses to send it at all."""
    for index, action in enumerate(message.actions):
        violation = limits.first_violation(action, f"actions[{index}]")
        if violation is not None:
            return violation
    return None


def actions_to_pb(
    step: int,
    actions: tuple[act.Action, ...],
    thought: str,
    *,
    generation: StepGeneration | None = None,
) -> agent_pb2.Actions:
    out = agent_pb2.Actions(
        step=step,
        actions=[action_to_pb(a) for a in actions],
        thought=clip(thought, limits.TEXT_CHARS),
    )
    if generation is not None:
        out.generation.CopyFrom(generation_to_pb(generation))
    return out
