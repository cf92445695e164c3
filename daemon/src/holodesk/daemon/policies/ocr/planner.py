"""Plan step + screenshot -> the next action, written as a holo-dialect model answer.

The baseline answers exactly like the model would, `{"note", "thought", "action"}`
with coordinates normalized to 0-1000 of the image, so its output goes through
the same parser and coordinate mapping as a real model's, and a recording of a
baseline run reads like one of a model run.

A type into a field replaces what the field holds: click into it, select all of
its text with the keys of the client's platform (replace.py), type. And it is not
done when its actions ran: the next screen must show the field holding the text,
all of it (typing_check.py). Until it does the planner looks once more; then, if
the text did reach the field but beside other text (its old text was not
replaced), it fails saying what the field shows; if the text is nowhere, it types
into the next field beside the label, then fails. An action that reported OK is no
proof that the app received anything.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from PIL import Image

from holodesk.daemon.policies.ocr.fields import fields_beside, find_field
from holodesk.daemon.policies.ocr.instructions import (
    Click,
    Done,
    InstructionError,
    Press,
    Scroll,
    Step,
    TypeText,
    Wait,
    describe,
    parse,
)
from holodesk.daemon.policies.ocr.matching import DEFAULT_THRESHOLD, Match, find_all, find_text
from holodesk.daemon.policies.ocr.progress import Progress, marker
from holodesk.daemon.policies.ocr.reader import TextBox, read_text
from holodesk.daemon.policies.ocr.replace import CUA_SELECT_ALL, Chord
from holodesk.daemon.policies.ocr.typing_check import check_typing

Reader = Callable[[Image.Image], list[TextBox]]
Box = tuple[int, int, int, int]  # left, top, right, bottom, pixels


@dataclass(frozen=True)
class PlannerConfig:
    # Looks at a new frame when a step's text is not on screen, before failing:
    # apps take a moment to open windows and menus.
    max_retries: int = 3
    retry_wait_s: float = 1.0
    match_threshold: float = DEFAULT_THRESHOLD
    # Places tried for a type step whose text the screen does not show: where
    # find_field points, then each field beside the label.
    max_type_tries: int = 3
    # Pressed in order after the click into a field, before typing: they select its
    # text so that the typing replaces it (replace.select_all_keys per platform).
    select_all: tuple[Chord, ...] = CUA_SELECT_ALL


@dataclass(frozen=True)
class _Place:
    """Where a type step clicks, and the outline of the field there (None: the label
    itself, a placeholder inside a field or a text with no field found)."""

    point: tuple[float, float]
    field: Box | None


def plan(
    task: str,
    progress: Progress,
    image: Image.Image,
    config: PlannerConfig = PlannerConfig(),
    read: Reader = read_text,
) -> str:
    """The holo JSON answer for the next step of `task` on `image`.

    A task outside the baseline's language gets a fail answer whose reason lists
    the supported forms. OCR failures (OcrError) propagate: they are the host's
    problem, not the task's.
    """
    try:
        steps = parse(task)
    except InstructionError as exc:
        return _answer("", "The task is not in the OCR baseline's language.", _fail(str(exc)))
    return plan_step(steps, progress, image, config, read)


def plan_step(
    steps: Sequence[Step],
    progress: Progress,
    image: Image.Image,
    config: PlannerConfig = PlannerConfig(),
    read: Reader = read_text,
) -> str:
    total = len(steps)
    if progress.step >= total:
        return _answer(f"[ocr {total}/{total} complete]", "Every step is done.", _done(""))
    step = steps[progress.step]
    if progress.retries > config.max_retries:
        reason = (
            f"step {progress.step + 1} ({describe(step)}) did not run after "
            f"{progress.retries} tries; the last error: {progress.error or 'unknown'}"
        )
        return _answer(f"[ocr {progress.step + 1}/{total} failed]", reason + ".", _fail(reason))
    note = f"{marker(progress.step, total)} {describe(step)}"
    target = _target_of(step)
    if target is None:
        return _answer(note, f"Step {progress.step + 1}: {describe(step)}.", _blind(step))
    words = read(image)
    if isinstance(step, TypeText) and progress.typed:
        return _check_typed(steps, step, progress, image, words, config)
    found = find_text(target, words, config.match_threshold)
    if found is None:
        return _not_found(step, target, words, progress, total, config)
    if isinstance(step, TypeText):
        return _type_at(step, progress, total, image, found, 1, config)
    x, y = found.center
    thought = f"{_seen(found)}; {describe(step)} at ({x:.0f}, {y:.0f}) px."
    return _answer(note, thought, _grounded(step, _normalize(x, y, image)))


def _type_places(image: Image.Image, label: Match) -> list[_Place]:
    """Where to click before typing, in the order to try them: the field find_field
    picks (or the label itself), then every other field beside the label."""
    first = find_field(image, label.box)
    places = [_Place(_center(first), first) if first is not None else _Place(label.center, None)]
    for box in fields_beside(image, label.box):
        if not any(_inside(place.point, box) for place in places):
            places.append(_Place(_center(box), box))
    return places


def _type_at(
    step: TypeText,
    progress: Progress,
    total: int,
    image: Image.Image,
    label: Match,
    attempt: int,
    config: PlannerConfig,
) -> str:
    """Try `attempt` (1-based) of a type step: click its place, select the field's
    text, type over it; checked at the next look."""
    places = _type_places(image, label)
    x, y = places[min(attempt, len(places)) - 1].point
    note = f"{marker(progress.step, total, typed=attempt)} {describe(step)}"
    where = "" if attempt == 1 else f" (try {attempt}: the field beside the label)"
    thought = (
        f"{_seen(label)}; {describe(step)} at ({x:.0f}, {y:.0f}) px{where}, "
        "replacing what the field holds."
    )
    nx, ny = _normalize(x, y, image)
    actions: list[dict[str, Any]] = [
        {"action": "click_element", "element": step.into, "x": nx, "y": ny},
        *({"action": "hotkey", "keys": list(chord)} for chord in config.select_all),
        {"action": "write", "content": step.text},
    ]
    return _answer_all(note, thought, actions)


def _check_typed(
    steps: Sequence[Step],
    step: TypeText,
    progress: Progress,
    image: Image.Image,
    words: list[TextBox],
    config: PlannerConfig,
) -> str:
    """After typing: on to the next step if the field shows the text, all of it; else
    look once more (apps repaint late), then fail if the text reached the field beside
    other text, else type into the next place, then fail."""
    total = len(steps)
    label = find_text(step.into or "", words, config.match_threshold)
    places = _type_places(image, label) if label is not None else []
    field = places[min(progress.typed, len(places)) - 1].field if places else None
    check = check_typing(step.text, words, label.box if label is not None else None, field)
    if not check.checkable or check.shown:
        seen = (
            f'the field shows "{check.seen}" for step {progress.step + 1}'
            if check.shown
            else f"step {progress.step + 1}'s text has nothing OCR can read back"
        )
        following = json.loads(
            plan_step(steps, Progress(progress.step + 1), image, config, lambda _: words)
        )
        following["thought"] = f"{seen}; {following['thought']}"
        return json.dumps(following, ensure_ascii=False)
    if check.landed:
        missing = f'the field shows "{check.seen}", not "{step.text}": its text was not replaced'
    else:
        missing = f'the screen does not show "{check.expected}" near "{step.into}"'
    if not progress.looked:
        note = f"{marker(progress.step, total, typed=progress.typed, looked=True)} checking"
        thought = f"{missing} after try {progress.typed}; looking again."
        return _answer(note, thought, {"action": "wait", "seconds": config.retry_wait_s})
    tries = min(len(places), config.max_type_tries)
    if label is not None and not check.landed and progress.typed < tries:
        return _type_at(step, progress, total, image, label, progress.typed + 1, config)
    reason = (
        f"step {progress.step + 1} ({describe(step)}): typed it {progress.typed} time(s) "
        f"but {missing}"
    )
    return _answer(f"[ocr {progress.step + 1}/{total} failed]", missing + ".", _fail(reason))


def _center(box: tuple[int, int, int, int]) -> tuple[float, float]:
    return (box[0] + box[2]) / 2, (box[1] + box[3]) / 2


def _inside(point: tuple[float, float], box: tuple[int, int, int, int]) -> bool:
    return box[0] <= point[0] < box[2] and box[1] <= point[1] < box[3]


def _target_of(step: Step) -> str | None:
    """The on-screen text a step needs, if any."""
    match step:
        case Click(target, _, _):
            return target
        case TypeText(_, into) | Scroll(_, _, into):
            return into
    return None


def _blind(step: Step) -> dict[str, Any]:
    """Actions that need nothing from the screen."""
    match step:
        case TypeText(text, _):
            return {"action": "write", "content": text}
        case Press(keys):
            return {"action": "hotkey", "keys": list(keys)}
        case Scroll(direction, amount, _):
            return {"action": "scroll", "direction": direction, "amount": amount}
        case Wait(seconds):
            return {"action": "wait", "seconds": seconds}
        case Done(answer):
            return _done(answer)
    raise AssertionError(f"{step!r} needs a target")  # pragma: no cover


def _grounded(step: Step, point: tuple[int, int]) -> dict[str, Any]:
    x, y = point
    match step:
        case Click(target, "right", _):
            return {"action": "right_click", "element": target, "x": x, "y": y}
        case Click(target, _, 2):
            return {"action": "double_click", "element": target, "x": x, "y": y}
        case Click(target, _, _):
            return {"action": "click_element", "element": target, "x": x, "y": y}
        case Scroll(direction, amount, _):
            return {"action": "scroll", "direction": direction, "amount": amount, "x": x, "y": y}
    raise AssertionError(f"{step!r} has no target")  # pragma: no cover


def _not_found(
    step: Step,
    target: str,
    words: list[TextBox],
    progress: Progress,
    total: int,
    config: PlannerConfig,
) -> str:
    nearest = find_all(target, words, threshold=0.5)
    closest = f' (closest text: "{nearest[0].text}")' if nearest else ""
    missing = f'"{target}" is not on the screen{closest}'
    if progress.retries < config.max_retries:
        retry = progress.retries + 1
        note = f"{marker(progress.step, total, retry)} waiting for {describe(step)}"
        thought = f"{missing}; looking again (retry {retry} of {config.max_retries})."
        return _answer(note, thought, {"action": "wait", "seconds": config.retry_wait_s})
    looks = config.max_retries + 1
    reason = f"step {progress.step + 1} ({describe(step)}): {missing} after {looks} looks"
    note = f"[ocr {progress.step + 1}/{total} failed]"  # not a marker: the session ends
    return _answer(note, missing + ".", _fail(reason))


def _seen(match: Match) -> str:
    if match.score >= 1.0:
        return f'read "{match.text}"'
    return f'read "{match.text}" for "{match.phrase}" (similarity {match.score:.2f})'


def _normalize(x: float, y: float, image: Image.Image) -> tuple[int, int]:
    """Frame pixels -> the holo convention, 0-1000 on each axis."""
    nx = round(x * 1000 / max(image.width, 1))
    ny = round(y * 1000 / max(image.height, 1))
    return min(max(nx, 0), 1000), min(max(ny, 0), 1000)


def _done(answer: str) -> dict[str, Any]:
    return {"action": "answer", "content": answer}


def _fail(reason: str) -> dict[str, Any]:
    return {"action": "fail", "reason": reason}


def _answer(note: str, thought: str, action: dict[str, Any]) -> str:
    return json.dumps({"note": note, "thought": thought, "action": action}, ensure_ascii=False)


def _answer_all(note: str, thought: str, actions: list[dict[str, Any]]) -> str:
    """An answer of several actions, run in order in one step (the holo dialect's
    "actions" list)."""
    body = {"note": note, "thought": thought, "actions": actions}
    return json.dumps(body, ensure_ascii=False)
