"""A recording -> one self-contained HTML page (inline CSS, images as data: URIs, no JS).

Per step: the frame the policy saw, with its pointer actions drawn over it as
SVG in the frame's own pixel coordinates (the SVG's viewBox is the frame size,
so the drawing scales with the image), the model's thought, the actions with
their results, timings, and the raw output in a collapsed <details>.

Every recorded string is untrusted (a task, a web page's text echoed by the
model) and goes through html.escape; nothing is ever interpolated raw.
"""

from __future__ import annotations

import base64
import html
import io
import math
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from PIL import Image

from holodesk.data.format import TextPart
from holodesk.data.stepview import FrameRef, Json, LoadedRecording, StepView

# Marker colours per kind of pointer action (tests look for CLICK_COLOR's pixels).
CLICK_COLOR = "#e6007e"
DRAG_COLOR = "#0077ff"
SCROLL_COLOR = "#ff8c00"
MOVE_COLOR = "#8e44ad"
PRESS_COLOR = "#00a383"

_OUTCOME_CLASS = {
    "succeeded": "good",
    "failed": "bad",
    "cancelled": "warn",
    "step_limit": "warn",
    "time_limit": "warn",
}
_STATUS_WORDS = {
    "ACTION_STATUS_OK": "ok",
    "ACTION_STATUS_FAILED": "failed",
    "ACTION_STATUS_REJECTED": "rejected",
    "ACTION_STATUS_SKIPPED": "skipped",
    "ACTION_STATUS_NOT_DELIVERED": "not delivered",
}
_SCROLL_ARROWS = {(0, 1): "↓", (0, -1): "↑", (1, 0): "→", (-1, 0): "←"}

_CSS = """
*{box-sizing:border-box}
body{margin:0;font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;
 color:#1d2330;background:#f3f4f7}
main{max-width:1280px;margin:0 auto;padding:24px}
header.summary{background:#fff;border-radius:10px;padding:20px 24px;margin-bottom:20px;
 box-shadow:0 1px 3px rgba(0,0,0,.08)}
h1{font-size:22px;margin:0 0 12px;white-space:pre-wrap;overflow-wrap:anywhere}
h2{font-size:17px;margin:0 0 12px}
dl.facts{display:grid;grid-template-columns:max-content 1fr;gap:4px 16px;margin:0}
dl.facts dt{color:#5b6374}
dl.facts dd{margin:0;white-space:pre-wrap;overflow-wrap:anywhere}
.badge{display:inline-block;padding:1px 8px;border-radius:10px;font-weight:600;font-size:12px;
 background:#e4e6eb}
.good{background:#d4f5dd;color:#11612a}.bad{background:#fde0e0;color:#9b1c1c}
.warn{background:#fff1d0;color:#8a5a00}
nav.steps{margin:12px 0 0;display:flex;flex-wrap:wrap;gap:4px}
nav.steps a{padding:1px 7px;border-radius:6px;background:#e4e6eb;color:#1d2330;
 text-decoration:none;font-size:12px}
section.step{background:#fff;border-radius:10px;padding:18px 20px;margin-bottom:18px;
 box-shadow:0 1px 3px rgba(0,0,0,.08)}
.cols{display:flex;flex-wrap:wrap;gap:20px;align-items:flex-start}
figure.frame{margin:0;flex:0 1 auto;max-width:100%}
.stage{position:relative;max-width:100%}
.stage img{display:block;width:100%;height:auto;border:1px solid #c9ccd3}
.stage svg{position:absolute;left:0;top:0;width:100%;height:100%;overflow:visible}
figcaption{color:#5b6374;font-size:12px;margin-top:4px}
.side{flex:1 1 320px;min-width:280px}
.thought{background:#f6f7fb;border-left:3px solid #7a8599;padding:8px 12px;margin:0 0 12px;
 white-space:pre-wrap;overflow-wrap:anywhere}
ol.actions{margin:0 0 12px;padding-left:0;list-style:none}
ol.actions li{padding:4px 0;border-bottom:1px solid #eceef2;overflow-wrap:anywhere}
.num{display:inline-block;min-width:20px;text-align:center;border-radius:10px;color:#fff;
 font-weight:700;font-size:12px;margin-right:6px;background:#7a8599}
.status{float:right;font-size:12px;font-weight:600;margin-left:8px}
.status.ok{color:#11612a}.status.failed,.status.rejected{color:#9b1c1c}
.status.skipped,.status.not-delivered,.status.unknown{color:#8a5a00}
.error{display:block;color:#9b1c1c;font-size:12px}
ul.captions{margin:6px 0 0;padding-left:0;list-style:none}
ul.captions li{font-size:13px;overflow-wrap:anywhere}
table.timing{border-collapse:collapse;font-size:12px;margin-bottom:10px}
table.timing td{padding:1px 12px 1px 0}table.timing td:first-child{color:#5b6374}
details{margin:6px 0}
summary{cursor:pointer;color:#34405a;font-weight:600}
pre{background:#1d2330;color:#e8ebf2;padding:10px 12px;border-radius:6px;white-space:pre-wrap;
 overflow-wrap:anywhere;font:12px/1.4 ui-monospace,Menlo,Consolas,monospace;margin:6px 0}
.missing{padding:40px;background:#eceef2;color:#5b6374;text-align:center}
.muted{color:#5b6374;font-weight:400;font-size:13px}
"""


def e(value: object) -> str:
    """Escaped for HTML text and double-quoted attribute values."""
    return html.escape(str(value), quote=True)


@dataclass(frozen=True)
class ReportOptions:
    # Downscale wider frames to this many pixels for the page (0: embed as recorded).
    max_image_width: int = 0


def write_report(
    recording: str | os.PathLike[str] | LoadedRecording,
    out: Path,
    options: ReportOptions | None = None,
) -> Path:
    """Render and write the page atomically; returns its path."""
    loaded = (
        recording if isinstance(recording, LoadedRecording) else LoadedRecording.load(recording)
    )
    page = render_report(loaded, options)
    out.parent.mkdir(parents=True, exist_ok=True)
    temporary = out.with_name(f".{out.name}.tmp")
    temporary.write_text(page, encoding="utf-8")
    os.replace(temporary, out)
    return out


def render_report(recording: LoadedRecording, options: ReportOptions | None = None) -> str:
    options = options or ReportOptions()
    manifest = recording.manifest
    steps = recording.steps()
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        # No network, ever: even a hostile recording cannot make the page load anything.
        '<meta http-equiv="Content-Security-Policy" content="default-src \'none\'; '
        "img-src data:; style-src 'unsafe-inline'\">",
        f"<title>holodesk · {e(_short(manifest.task, 80) or recording.recording_id)}</title>",
        f"<style>{_CSS}</style></head><body><main>",
        _header(recording, steps),
    ]
    parts.extend(_step_section(step, recording, options) for step in steps)
    final = steps[-1].next_frame if steps else recording.first_frame()
    if final is not None:
        parts.append(_final_section(final, options))
    parts.append("</main></body></html>")
    return "\n".join(parts)


# -- header -----------------------------------------------------------------------------


def _header(recording: LoadedRecording, steps: list[StepView]) -> str:
    manifest = recording.manifest
    outcome = recording.outcome
    end = recording.end
    answer = manifest.answer or (end.answer if end else "")
    reason = manifest.reason or (end.reason if end else "")
    facts: list[tuple[str, str]] = [
        (
            "Outcome",
            f'<span class="badge {_OUTCOME_CLASS.get(outcome or "", "")}">'
            f"{e(outcome or 'unfinished')}</span>",
        ),
    ]
    if answer:
        facts.append(("Answer", e(answer)))
    if reason:
        facts.append(("Reason", e(reason)))
    reward, success = recording.reward, recording.success
    if reward is not None or success is not None:
        shown = [] if reward is None else [f"{reward:g}"]
        if success is not None:
            shown.append("success" if success else "no success")
        note = f" ({e(manifest.reward_note)})" if manifest.reward_note else ""
        facts.append(("Reward", e(", ".join(shown)) + note))
    facts.append(("Policy", e(manifest.policy or "—")))
    if manifest.model:
        facts.append(("Model", e(manifest.model)))
    if manifest.dialect:
        facts.append(("Dialect", e(manifest.dialect)))
    duration = recording.duration_s()
    facts.append(("Steps", e(len(steps))))
    if duration is not None:
        facts.append(("Total time", e(_seconds(duration))))
    facts.append(("Started", e(manifest.started_at.isoformat(timespec="seconds"))))
    client = manifest.client
    described = " · ".join(
        x for x in (client.os, client.backend, client.hostname, client.client_version) if x
    )
    if described:
        facts.append(("Client", e(described)))
    if manifest.sampling:
        sampling = ", ".join(f"{k}={v}" for k, v in sorted(manifest.sampling.items()))
        facts.append(("Sampling", e(sampling)))
    facts.append(("Recording", e(recording.recording_id)))
    rows = "".join(f"<dt>{name}</dt><dd>{value}</dd>" for name, value in facts)
    nav = "".join(f'<a href="#step-{s.step}">{s.step}</a>' for s in steps)
    return (
        f'<header class="summary"><h1 class="task">{e(manifest.task)}</h1>'
        f'<dl class="facts">{rows}</dl>'
        + (f'<nav class="steps">{nav}</nav>' if nav else "")
        + "</header>"
    )


# -- steps ------------------------------------------------------------------------------


def _step_section(step: StepView, recording: LoadedRecording, options: ReportOptions) -> str:
    actions = step.action_list
    at = f"t = {_seconds(step.frame.event.t)}" if step.frame is not None else ""
    figure = _figure(step, recording, actions, options)
    side = [f'<p class="thought">{e(step.thought)}</p>' if step.thought else ""]
    side.append(_action_list(step, actions))
    side.append(_timing_table(step))
    side.append(_generation_details(step))
    return (
        f'<section class="step" id="step-{e(step.step)}">'
        f'<h2>Step {e(step.step)} <span class="muted">{e(at)}</span></h2>'
        f'<div class="cols">{figure}<div class="side">{"".join(side)}</div></div></section>'
    )


def _figure(
    step: StepView, recording: LoadedRecording, actions: list[Json], options: ReportOptions
) -> str:
    frame = step.frame
    captions = _captions(actions)
    if frame is None:
        return (
            f'<figure class="frame"><div class="missing">no frame recorded</div>{captions}</figure>'
        )
    overlay = _overlay(step.step, frame, actions, recording)
    return _frame_figure(frame, options, overlay, captions)


def _frame_figure(frame: FrameRef, options: ReportOptions, overlay: str, captions: str) -> str:
    data_uri = _data_uri(frame, options)
    caption = (
        f"<figcaption>frame {e(frame.frame_id)} · {frame.width}×{frame.height}"
        + (f" · display {e(frame.event.display_id)}" if frame.event.display_id else "")
        + "</figcaption>"
    )
    if data_uri is None:
        image = f'<div class="missing">frame file {e(frame.path.name)} is missing</div>'
        return f'<figure class="frame">{image}{caption}{captions}</figure>'
    # Shown at its own size, never wider than the column; the SVG follows the image.
    stage = (
        f'<div class="stage" style="width:{frame.width}px">'
        f'<img src="{data_uri}" width="{frame.width}" height="{frame.height}" '
        f'alt="frame {e(frame.frame_id)}">{overlay}</div>'
    )
    return f'<figure class="frame">{stage}{caption}{captions}</figure>'


def _final_section(frame: FrameRef, options: ReportOptions) -> str:
    return (
        '<section class="step" id="final"><h2>Final screen '
        f'<span class="muted">t = {e(_seconds(frame.event.t))}</span></h2>'
        f"{_frame_figure(frame, options, '', '')}</section>"
    )


def _data_uri(frame: FrameRef, options: ReportOptions) -> str | None:
    try:
        data = frame.path.read_bytes()
    except OSError:
        return None
    mime = frame.mime_type
    if options.max_image_width and frame.width > options.max_image_width:
        with Image.open(io.BytesIO(data)) as opened:
            image = opened.convert("RGB")
        height = max(1, round(frame.height * options.max_image_width / frame.width))
        image = image.resize((options.max_image_width, height), Image.Resampling.LANCZOS)
        buffer = io.BytesIO()
        image.save(buffer, format="JPEG", quality=85)
        data, mime = buffer.getvalue(), "image/jpeg"
    return f"data:{mime};base64,{base64.b64encode(data).decode('ascii')}"


# -- the overlay ------------------------------------------------------------------------


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


def _overlay(step: int, frame: FrameRef, actions: list[Json], recording: LoadedRecording) -> str:
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
        label = _click_label(click)
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
            f"{_badge(number, x, y, s, SCROLL_COLOR, _scroll_words(dx, dy))}</g>"
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
            button = _button(action[kind].get("button"))
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


def _captions(actions: list[Json]) -> str:
    """Actions without a point (typing, keys, waits, endings) as text under the frame."""
    items = [
        f'<li><span class="num">{number}</span>{e(describe(action))}</li>'
        for number, action in enumerate(actions, start=1)
        if not _is_pointer(action)
    ]
    return f'<ul class="captions">{"".join(items)}</ul>' if items else ""


def _is_pointer(action: Json) -> bool:
    if any(k in action for k in ("click", "drag", "scroll", "move")):
        return True
    return any(k in action and "point" in action[k] for k in ("mouse_down", "mouse_up"))


# -- the side column --------------------------------------------------------------------


def _action_list(step: StepView, actions: list[Json]) -> str:
    if not actions:
        return '<p class="muted">no actions</p>'
    items: list[str] = []
    for number, action in enumerate(actions, start=1):
        result = step.result_for(str(action.get("action_id") or ""))
        status = _result_html(result, observed=step.observation is not None)
        color = _number_color(action)
        items.append(
            f'<li><span class="num" style="background:{color}">{number}</span>'
            f"{e(describe(action))}{status}</li>"
        )
    return f'<ol class="actions">{"".join(items)}</ol>'


def _result_html(result: Json | None, *, observed: bool) -> str:
    if result is None:
        word = "no result" if observed else "not reported"
        return f'<span class="status unknown">{word}</span>'
    word = _STATUS_WORDS.get(str(result.get("status") or ""), "unknown")
    duration = result.get("duration_ms")
    timing = f" · {int(duration)} ms" if isinstance(duration, int | float) and duration else ""
    error = result.get("error")
    detail = f'<span class="error">{e(error)}</span>' if error else ""
    css = word.replace(" ", "-")
    return f'<span class="status {css}">{e(word)}{timing}</span>{detail}'


def _timing_table(step: StepView) -> str:
    rows: list[tuple[str, str]] = []
    if step.actions.policy_seconds:
        rows.append(("policy", _seconds(step.actions.policy_seconds)))
    generation = step.generation or {}
    engine = generation.get("engine_seconds")
    if isinstance(engine, int | float) and engine:
        rows.append(("engine", _seconds(float(engine))))
    tokens = generation.get("prompt_tokens")
    if isinstance(tokens, int) and tokens:
        rows.append(("prompt tokens", f"{tokens:,}"))
    ran = [r.get("duration_ms") for r in step.results]
    total_ms = sum(int(d) for d in ran if isinstance(d, int | float))
    if step.results:
        rows.append(("actions ran", f"{total_ms} ms"))
    if step.frame is not None and step.next_frame is not None:
        rows.append(
            ("step, frame to frame", _seconds(step.next_frame.event.t - step.frame.event.t))
        )
    if not rows:
        return ""
    body = "".join(f"<tr><td>{e(k)}</td><td>{e(v)}</td></tr>" for k, v in rows)
    return f'<table class="timing">{body}</table>'


def _generation_details(step: StepView) -> str:
    generation = step.generation
    if generation is None:
        return ""
    completions = [c for c in generation.get("completions") or [] if isinstance(c, dict)]
    chosen = step.chosen_completion()
    parts: list[str] = []
    if chosen is not None:
        parts.append(
            "<details><summary>Raw model output</summary>"
            f"<pre>{e(chosen.get('text') or '')}</pre></details>"
        )
    others = [c for c in completions if c is not chosen]
    if others:
        shown = "".join(
            f"<pre>{e(c.get('text') or '')}</pre>"
            + (f'<span class="error">{e(c["parse_error"])}</span>' if c.get("parse_error") else "")
            for c in others
        )
        parts.append(
            f"<details><summary>Other candidates ({len(others)})</summary>{shown}</details>"
        )
    if step.actions.prompt:
        texts = "".join(
            f"<pre>{e(message.role)}: {e(part.text)}</pre>"
            for message in step.actions.prompt
            for part in message.content
            if isinstance(part, TextPart)
        )
        parts.append(f"<details><summary>Prompt text</summary>{texts}</details>")
    return "".join(parts)


# -- words ------------------------------------------------------------------------------


def describe(action: Json) -> str:
    """One line per action, from the Actions message's JSON (coordinates in frame pixels)."""
    for kind, words in _DESCRIBERS.items():
        if kind in action:
            body = action[kind] if isinstance(action[kind], dict) else {}
            return words(body)
    return "unknown action"


def _pt(raw: object) -> str:
    if not isinstance(raw, dict):
        return "(?)"
    return f"({float(raw.get('x', 0)):g}, {float(raw.get('y', 0)):g})"


def _button(raw: object) -> str:
    return str(raw or "MOUSE_BUTTON_LEFT").removeprefix("MOUSE_BUTTON_").lower()


def _modifiers(body: Json) -> str:
    mods = [str(m).removeprefix("MODIFIER_").lower() for m in body.get("modifiers") or []]
    return "".join(f"+{m}" for m in mods)


def _click_label(click: Json) -> str:
    button = _button(click.get("button"))
    count = int(click.get("count") or 1)
    words = [] if button == "left" else [button]
    if count > 1:
        words.append(f"×{count}")
    if click.get("modifiers"):
        words.append(_modifiers(click).lstrip("+"))
    return " ".join(words)


def _scroll_words(dx: int, dy: int) -> str:
    parts = []
    if dy:
        parts.append(f"{_SCROLL_ARROWS[(0, 1 if dy > 0 else -1)]}{abs(dy)}")
    if dx:
        parts.append(f"{_SCROLL_ARROWS[(1 if dx > 0 else -1, 0)]}{abs(dx)}")
    return "scroll " + " ".join(parts)


def _click_words(b: Json) -> str:
    count = int(b.get("count") or 1)
    times = f" ×{count}" if count > 1 else ""
    return f"click {_button(b.get('button'))}{times}{_modifiers(b)} at {_pt(b.get('point'))}"


def _drag_words(b: Json) -> str:
    path = " → ".join(_pt(p) for p in b.get("path") or [])
    return f"drag {_button(b.get('button'))}{_modifiers(b)} {path}"


def _press_words(verb: str, b: Json) -> str:
    where = f" at {_pt(b['point'])}" if "point" in b else ""
    return f"{verb} {_button(b.get('button'))}{where}"


def _scroll_action_words(b: Json) -> str:
    words = _scroll_words(int(b.get("dx", 0)), int(b.get("dy", 0)))
    return f"{words} at {_pt(b.get('point'))}"


_DESCRIBERS: dict[str, Callable[[Json], str]] = {
    "click": _click_words,
    "move": lambda b: f"move to {_pt(b.get('point'))}",
    "mouse_down": lambda b: _press_words("mouse down", b),
    "mouse_up": lambda b: _press_words("mouse up", b),
    "drag": _drag_words,
    "scroll": _scroll_action_words,
    "type_text": lambda b: f"type “{b.get('text', '')}”",
    "key_chord": lambda b: "keys " + "+".join(str(k) for k in b.get("keys") or []),
    "key_down": lambda b: f"key down {b.get('key', '')}",
    "key_up": lambda b: f"key up {b.get('key', '')}",
    "wait": lambda b: f"wait {int(b.get('duration_ms') or 0)} ms",
    "navigate": lambda b: f"open {b.get('url', '')}",
    "done": lambda b: f"done: {b.get('answer', '')}",
    "fail": lambda b: f"fail: {b.get('reason', '')}",
    "ask_user": lambda b: f"ask the user: {b.get('question', '')}",
}


def _number_color(action: Json) -> str:
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


def _seconds(value: float) -> str:
    if value < 60:
        return f"{value:.2f} s"
    minutes, seconds = divmod(value, 60)
    if minutes < 60:
        return f"{int(minutes)} min {seconds:04.1f} s"
    hours, minutes = divmod(minutes, 60)
    return f"{int(hours)} h {int(minutes):02d} min"


def _short(text: str, limit: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"
