"""A recording -> one self-contained HTML page (inline CSS, images as data: URIs, no JS).

Per step: the frame the policy saw, with its pointer actions drawn over it as
SVG in the frame's own pixel coordinates (the SVG's viewBox is the frame size,
so the drawing scales with the image), the model's thought, the actions with
their results, timings, the policy version that made it (when the daemon's
weights change while sessions run: versions.py reads it), and the raw output in
a collapsed <details>.

Every recorded string is untrusted (a task, a web page's text echoed by the
model) and goes through html.escape (report_words.e); nothing is ever interpolated
raw. The drawing over each frame is report_overlay.py, the actions' words
report_words.py.
"""

from __future__ import annotations

import base64
import io
import os
from dataclasses import dataclass
from pathlib import Path

from PIL import Image

from holodesk.data.format import TextPart
from holodesk.data.report_overlay import is_pointer, number_color, overlay
from holodesk.data.report_words import describe, e
from holodesk.data.stepview import FrameRef, Json, LoadedRecording, StepView
from holodesk.data.versions import describe_versions, step_versions
from holodesk.data.writer import PRIVATE_FILE_MODE, prepare_root

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


@dataclass(frozen=True)
class ReportOptions:
    # Downscale wider frames to this many pixels for the page (0: embed as recorded).
    max_image_width: int = 0


def write_report(
    recording: str | os.PathLike[str] | LoadedRecording,
    out: Path,
    options: ReportOptions | None = None,
) -> Path:
    """Render and write the page atomically; returns its path.

    The page embeds every screen of the session, so it is as private as the
    recording (holodesk.data.writer): 0600 whatever the umask, in a folder made
    0700 when it does not exist yet (an existing one is left as its owner set it).
    """
    loaded = (
        recording if isinstance(recording, LoadedRecording) else LoadedRecording.load(recording)
    )
    page = render_report(loaded, options)
    prepare_root(out.parent)
    temporary = out.with_name(f".{out.name}.tmp")
    # A leftover from an interrupted write keeps its old mode if opened again: start anew.
    temporary.unlink(missing_ok=True)
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0)
    with os.fdopen(os.open(temporary, flags, PRIVATE_FILE_MODE), "wb") as file:
        file.write(page.encode("utf-8"))
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
    versions = describe_versions(
        v for step in steps for v in step_versions(step.generation).versions
    )
    if versions:
        facts.append(("Policy versions", e(versions)))
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
    side.append(_action_list(step, actions) if actions or step.sent else _ending(recording))
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
    drawing = overlay(step.step, frame, actions, recording)
    return _frame_figure(frame, options, drawing, captions)


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


def _captions(actions: list[Json]) -> str:
    """Actions without a point (typing, keys, waits, endings) as text under the frame."""
    items = [
        f'<li><span class="num">{number}</span>{e(describe(action))}</li>'
        for number, action in enumerate(actions, start=1)
        if not is_pointer(action)
    ]
    return f'<ul class="captions">{"".join(items)}</ul>' if items else ""


# -- the side column --------------------------------------------------------------------


def _action_list(step: StepView, actions: list[Json]) -> str:
    if not actions:
        return '<p class="muted">no actions</p>'
    items: list[str] = []
    for number, action in enumerate(actions, start=1):
        result = step.result_for(str(action.get("action_id") or ""))
        status = _result_html(result, observed=step.observation is not None)
        color = number_color(action)
        items.append(
            f'<li><span class="num" style="background:{color}">{number}</span>'
            f"{e(describe(action))}{status}</li>"
        )
    return f'<ol class="actions">{"".join(items)}</ol>'


def _ending(recording: LoadedRecording) -> str:
    """The last step when it ran nothing (a done or fail alone): what it decided."""
    end = recording.end
    outcome = recording.outcome or "unfinished"
    said = (end.answer or end.reason) if end is not None else ""
    detail = f": {e(_short(said, 200))}" if said else ""
    return f'<p class="ending">ended the session, {e(outcome)}{detail}; nothing to run</p>'


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
    version = _version_text(step)
    if version:
        rows.append(("policy version", version))
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


def _version_text(step: StepView) -> str:
    """The step's version as "v3 (its label)", plus which versions its tokens came
    from when an update landed while it was sampled; "" when none was recorded."""
    versions = step_versions(step.generation)
    if not versions.known:
        return ""
    text = f"v{versions.policy_version}"
    if versions.policy_label:
        text += f" ({versions.policy_label})"
    if versions.mixed:
        text += f" · tokens from {describe_versions(versions.versions)}"
    return text


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
