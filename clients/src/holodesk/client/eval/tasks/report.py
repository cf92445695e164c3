"""A self-contained HTML page of a suite's results: one row per task run, with its
score, how the session ended, the evaluator's note and every step's screenshot
(embedded as small JPEG thumbnails; each links to its full PNG beside it)."""

from __future__ import annotations

import base64
import html
import io
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from PIL import Image

from holodesk.client.eval.tasks.model import Task
from holodesk.client.eval.tasks.results import RESULT, TRAJECTORY, Layout, read_run, read_score
from holodesk.client.eval.tasks.summary import table

REPORT = "report.html"
THUMBNAIL = (200, 125)

_STYLE = """
body{font:14px system-ui,sans-serif;margin:1.5em;color:#222}
table{border-collapse:collapse;width:100%}
td,th{border:1px solid #ccc;padding:4px 6px;vertical-align:top;text-align:left}
tr.pass td.score{background:#d9f2d9} tr.fail td.score{background:#f6d5d5}
tr.none td.score{background:#eee}
.shots{display:flex;flex-wrap:wrap;gap:4px;min-width:640px}
.shots figure{margin:0;font-size:11px;width:200px}
.shots img{display:block;border:1px solid #999}
pre{white-space:pre-wrap;margin:0}
"""


def write_report(layout: Layout, tasks: Sequence[Task], summary: dict[str, Any]) -> Path:
    rows = [_row(layout, task, r) for task in tasks for r in range(layout.k)]
    page = (
        "<!doctype html><html><head><meta charset='utf-8'>"
        f"<title>holodesk eval tasks: {html.escape(layout.model)}</title>"
        f"<style>{_STYLE}</style></head><body>"
        f"<h1>Task suite results: {html.escape(layout.model)}</h1>"
        f"{_settings(summary)}<pre>{html.escape(table(summary))}</pre>"
        "<table><tr><th>domain</th><th>task</th><th>run</th><th>score</th><th>ended</th>"
        "<th>steps</th><th>seconds</th><th>note</th><th>screens</th></tr>"
        + "".join(rows)
        + "</table></body></html>"
    )
    path = layout.base / REPORT
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(page, encoding="utf-8")
    return path


def _settings(summary: dict[str, Any]) -> str:
    settings = summary.get("settings") or {}
    if not settings:
        return ""
    shown = ", ".join(f"{k}: {v}" for k, v in settings.items())
    return f"<p>{html.escape(shown)}</p>"


def _row(layout: Layout, task: Task, repeat: int) -> str:
    folder = layout.run_dir(task, repeat)
    score = read_score(folder / RESULT)
    run = read_run(folder)
    kind = "none" if score is None else ("pass" if score >= 1.0 else "fail")
    error = folder / "error.txt"
    note = run.get("note", "") or (error.read_text(encoding="utf-8") if error.is_file() else "")
    ended = run.get("outcome", "not scored" if score is None else "")
    cells = [
        task.domain,
        f"<b>{html.escape(task.id)}</b><br>{html.escape(task.instruction)}",
        str(repeat),
        "-" if score is None else f"{score:g}",
        html.escape(str(ended))
        + (f"<br>{html.escape(run['reason'])}" if run.get("reason") else ""),
        str(run.get("steps", "")),
        str(run.get("seconds", "")),
        f"<pre>{html.escape(note)}</pre>",
        _shots(layout, folder),
    ]
    plain = {0, 2, 3, 5, 6}
    return (
        f"<tr class='{kind}'>"
        + "".join(
            f"<td class='{'score' if i == 3 else ''}'>{html.escape(c) if i in plain else c}</td>"
            for i, c in enumerate(cells)
        )
        + "</tr>"
    )


def _shots(layout: Layout, folder: Path) -> str:
    figures = []
    for line in _lines(folder / TRAJECTORY):
        name = line.get("screenshot_file")
        if not name or not (folder / name).is_file():
            continue
        thumb = _thumbnail(folder / name)
        link = (folder / name).relative_to(layout.base).as_posix()
        caption = html.escape(f"{line.get('step_num')}: {line.get('action', '')}")
        figures.append(
            f"<figure><a href='{html.escape(link)}'><img src='data:image/jpeg;base64,{thumb}' "
            f"alt='step {line.get('step_num')}'></a><figcaption>{caption}</figcaption></figure>"
        )
    return f"<div class='shots'>{''.join(figures)}</div>"


def _lines(path: Path) -> list[dict[str, Any]]:
    try:
        text = path.read_text(encoding="utf-8")
    except OSError:
        return []
    found = []
    for line in text.splitlines():
        try:
            found.append(json.loads(line))
        except ValueError:
            continue
    return found


def _thumbnail(path: Path) -> str:
    with Image.open(path) as image:
        image.thumbnail(THUMBNAIL)
        out = io.BytesIO()
        image.convert("RGB").save(out, "JPEG", quality=70)
    return base64.b64encode(out.getvalue()).decode("ascii")
