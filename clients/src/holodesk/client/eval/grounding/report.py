"""RUN_DIR/report.html: one self-contained page, a card per sample of the run.

Each card shows the sample's image with its target drawn over it (box or polygon;
a refusal says the target is absent) and the predicted point (and box, where the
policy gave one), a close-up around both at the image's own resolution (small icons
on 4K screens vanish in a thumbnail), the instruction, its breakdown groups, the
outcome and the policy's raw answer. Radio buttons filter the cards by outcome with
CSS alone: like holodesk's session report (holodesk.data.report) the page has no
script, loads nothing (its Content-Security-Policy allows only data: images), and
escapes every string a data set or a model wrote.

Drawings are SVG over the image, in the image's own pixels (viewBox), so they stay
exact whatever size the browser shows the picture at.
"""

from __future__ import annotations

import base64
import io
import os
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from PIL import Image, UnidentifiedImageError

from holodesk.client.eval.grounding.outputs import Scored
from holodesk.client.eval.grounding.predictions import Failure, Prediction
from holodesk.data.grounding import Box, GroundingSample, Polygon, Refusal
from holodesk.data.report_words import e
from holodesk.data.writer import PRIVATE_FILE_MODE, prepare_root

FILE_NAME = "report.html"
# The overview picture's width at most, and the close-up's side, in page pixels.
THUMBNAIL_WIDTH = 720
CLOSE_UP = 280
# The close-up shows at least this many image pixels around the target and the point.
CLOSE_UP_MARGIN = 40
# Outcome filters: (class, label); "left" is a sample without an answer.
FILTERS = (
    ("hit", "hits"),
    ("miss", "misses"),
    ("absent", "said absent"),
    ("unparsed", "unparsed"),
    ("left", "left out"),
)

LEGEND = (
    "green: the target (box or polygon); cross: the predicted point, blue on a hit, red "
    "on a miss; dashed grey: the element's box where the policy gave one"
)
_CSS = """
*{box-sizing:border-box}
body{margin:0;font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;
 color:#1d2330;background:#f3f4f7}
main,header{max-width:1280px;margin:0 auto;padding:0 24px}
header{padding-top:24px}
h1{font-size:22px;margin:0 0 8px}
pre.table{background:#fff;color:#1d2330;border-radius:10px;padding:14px 18px;overflow-x:auto;
 white-space:pre;font:12px/1.4 ui-monospace,Menlo,Consolas,monospace;
 box-shadow:0 1px 3px rgba(0,0,0,.08)}
input.filter{position:absolute;opacity:0;pointer-events:none}
nav.filters{max-width:1280px;margin:0 auto 14px;padding:0 24px;display:flex;gap:6px;
 flex-wrap:wrap}
nav.filters label{padding:3px 12px;border-radius:14px;background:#e4e6eb;cursor:pointer;
 font-weight:600;font-size:13px}
#f-all:checked~nav label[for=f-all],#f-hit:checked~nav label[for=f-hit],
#f-miss:checked~nav label[for=f-miss],#f-absent:checked~nav label[for=f-absent],
#f-unparsed:checked~nav label[for=f-unparsed],#f-left:checked~nav label[for=f-left]
{background:#34405a;color:#fff}
#f-hit:checked~main .card:not(.hit),#f-miss:checked~main .card:not(.miss),
#f-absent:checked~main .card:not(.absent),#f-unparsed:checked~main .card:not(.unparsed),
#f-left:checked~main .card:not(.left){display:none}
.card{background:#fff;border-radius:10px;padding:14px 18px;margin-bottom:16px;
 box-shadow:0 1px 3px rgba(0,0,0,.08);border-left:5px solid #c9ccd3}
.card.hit{border-left-color:#1f9d45}.card.miss,.card.absent{border-left-color:#d23b3b}
.card.unparsed,.card.left{border-left-color:#d89a00}
.card h2{font-size:15px;margin:0 0 6px;overflow-wrap:anywhere}
.badge{display:inline-block;padding:1px 8px;border-radius:10px;font-weight:600;font-size:12px;
 background:#e4e6eb;margin-right:6px}
.hit .badge.outcome{background:#d4f5dd;color:#11612a}
.miss .badge.outcome,.absent .badge.outcome{background:#fde0e0;color:#9b1c1c}
.unparsed .badge.outcome,.left .badge.outcome{background:#fff1d0;color:#8a5a00}
.instruction{font-size:15px;margin:6px 0 10px;white-space:pre-wrap;overflow-wrap:anywhere}
.cols{display:flex;flex-wrap:wrap;gap:16px;align-items:flex-start}
.stage{position:relative;max-width:100%}
.stage img{display:block;width:100%;height:auto;border:1px solid #c9ccd3}
.stage svg{position:absolute;left:0;top:0;width:100%;height:100%;overflow:visible}
figure{margin:0}figcaption{color:#5b6374;font-size:12px;margin-top:4px}
.facts{font-size:13px;color:#34405a}
pre{background:#1d2330;color:#e8ebf2;padding:8px 10px;border-radius:6px;white-space:pre-wrap;
 overflow-wrap:anywhere;font:12px/1.4 ui-monospace,Menlo,Consolas,monospace;margin:6px 0}
.missing{padding:30px;background:#eceef2;color:#5b6374}
.legend{color:#5b6374;font-size:13px;margin:0 0 12px}
"""


@dataclass(frozen=True)
class _Picture:
    uri: str
    # The image pixels the picture shows (x, y, width, height).
    view: tuple[float, float, float, float]
    width: int
    height: int


def write_report(
    run_dir: Path,
    title: str,
    samples: Sequence[GroundingSample],
    answers: Mapping[str, Prediction],
    scored: Scored,
) -> Path:
    """Render and write the page atomically, private (0600) like a recording's report:
    it embeds every screenshot of the data set."""
    page = render_report(title, samples, answers, scored)
    prepare_root(run_dir)
    out = run_dir / FILE_NAME
    temporary = out.with_name(f".{out.name}.tmp")
    temporary.unlink(missing_ok=True)
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0)
    with os.fdopen(os.open(temporary, flags, PRIVATE_FILE_MODE), "wb") as file:
        file.write(page.encode("utf-8"))
    os.replace(temporary, out)
    return out


def render_report(
    title: str,
    samples: Sequence[GroundingSample],
    answers: Mapping[str, Prediction],
    scored: Scored,
) -> str:
    outcomes = {s.id: _outcome(s.id, scored) for s in samples}
    counts = {name: sum(1 for o in outcomes.values() if o == name) for name, _ in FILTERS}
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        '<meta http-equiv="Content-Security-Policy" content="default-src \'none\'; '
        "img-src data:; style-src 'unsafe-inline'\">",
        f"<title>holodesk eval · {e(title)}</title>",
        f"<style>{_CSS}</style></head><body>",
        f'<header><h1>{e(title)}</h1><pre class="table">{e(scored.table())}</pre>',
        f'<p class="legend">{LEGEND}</p></header>',
        '<input class="filter" type="radio" name="filter" id="f-all" checked>',
        *(
            f'<input class="filter" type="radio" name="filter" id="f-{name}">'
            for name, _ in FILTERS
        ),
        '<nav class="filters"><label for="f-all">all ' + f"({len(samples)})</label>",
        *(f'<label for="f-{name}">{label} ({counts[name]})</label>' for name, label in FILTERS),
        "</nav><main>",
    ]

    def card(sample: GroundingSample) -> str:
        return _card(sample, answers.get(sample.id), outcomes[sample.id], scored)

    # Decoding and downscaling screenshots is most of the time; Pillow does it outside
    # the GIL, so cards render in parallel (in order).
    with ThreadPoolExecutor(max_workers=min(8, os.cpu_count() or 1)) as pool:
        parts.extend(pool.map(card, samples))
    parts.append("</main></body></html>")
    return "\n".join(parts)


def _outcome(sample_id: str, scored: Scored) -> str:
    verdict = scored.verdicts.get(sample_id)
    return "left" if verdict is None else verdict.outcome


def _card(sample: GroundingSample, answer: Prediction | None, outcome: str, scored: Scored) -> str:
    failure = scored.failures.get(sample.id)
    words = {
        "hit": "hit",
        "miss": "miss",
        "absent": "said absent (a miss)",
        "unparsed": "unparsed answer",
        "left": "left out",
    }[outcome]
    groups = "".join(
        f'<span class="badge">{e(key)}: {e(", ".join(sample.values(key)))}</span>'
        for key in sorted({*sample.groups, *sample.memberships})
    )
    facts = [f"image {e(sample.image.name)} ({sample.width}x{sample.height})"]
    facts.append(f"target: {e(_target_words(sample))}")
    if answer is not None:
        facts.append(f"answer: {e(_answer_words(answer))} in {answer.seconds:.2f} s")
    elif isinstance(failure, Failure):
        facts.append(f"failed: {e(failure.error)}")
    else:
        facts.append("not asked: the run stopped before this sample")
    pictures = _pictures(sample, answer, outcome == "hit")
    raw = (
        f"<details><summary>raw answer</summary><pre>{e(answer.raw_output)}</pre></details>"
        if answer is not None and answer.raw_output
        else ""
    )
    return (
        f'<section class="card {outcome}" id="s-{e(sample.id)}">'
        f'<h2><span class="badge outcome">{words}</span>{e(sample.id)}</h2>'
        f"<div>{groups}</div>"
        f'<p class="instruction">{e(sample.instruction)}</p>'
        f'<div class="cols">{pictures}</div>'
        f'<p class="facts">{"<br>".join(facts)}</p>{raw}</section>'
    )


def _target_words(sample: GroundingSample) -> str:
    target = sample.target
    if isinstance(target, Refusal):
        return "absent from the image (a refusal: only 'absent' hits)"
    x1, y1, x2, y2 = target.bounds()
    if isinstance(target, Polygon):
        return f"polygon of {len(target.points)} vertices within ({x1:g}, {y1:g})-({x2:g}, {y2:g})"
    edges = "edges included" if target.edges == "inclusive" else "edges excluded"
    return f"box ({x1:g}, {y1:g})-({x2:g}, {y2:g}), {edges}"


def _answer_words(answer: Prediction) -> str:
    if answer.status == "found" and answer.x is not None and answer.y is not None:
        return f"point ({answer.x:.1f}, {answer.y:.1f})"
    return {
        "absent": "the target is not in the image",
        "unparseable": "an answer that could not be read as a location",
        "unreported": "not found (the daemon does not say whether absent or unreadable)",
    }.get(answer.status, answer.status)


def _pictures(sample: GroundingSample, answer: Prediction | None, hit: bool) -> str:
    try:
        with Image.open(io.BytesIO(sample.image.load())) as opened:
            image = opened.convert("RGB")
    except (OSError, UnidentifiedImageError, Image.DecompressionBombError) as error:
        return f'<div class="missing">cannot show {e(sample.image.name)}: {e(error)}</div>'
    width, height = image.size
    full = (0.0, 0.0, float(width), float(height))
    scale = min(1.0, THUMBNAIL_WIDTH / width)
    overview = _picture(image, full, scale)
    html = _figure(overview, sample, answer, "the whole image", hit)
    region = _close_up_region(sample, answer, width, height)
    if region is not None:
        side = max(region[2], region[3])
        close = _picture(image, region, min(4.0, CLOSE_UP / side))
        html += _figure(close, sample, answer, "close-up, the image's own pixels", hit)
    return html


def _close_up_region(
    sample: GroundingSample, answer: Prediction | None, width: int, height: int
) -> tuple[float, float, float, float] | None:
    """The part of the image holding the target and the point, with a margin; None
    when there is neither, or when it is most of the image anyway."""
    xs: list[float] = []
    ys: list[float] = []
    bounds = sample.target.bounds()
    if bounds is not None:
        xs += [bounds[0], bounds[2]]
        ys += [bounds[1], bounds[3]]
    if answer is not None and answer.x is not None and answer.y is not None:
        xs.append(answer.x)
        ys.append(answer.y)
    if not xs:
        return None
    x1 = max(0.0, min(xs) - CLOSE_UP_MARGIN)
    y1 = max(0.0, min(ys) - CLOSE_UP_MARGIN)
    x2 = min(float(width), max(xs) + CLOSE_UP_MARGIN)
    y2 = min(float(height), max(ys) + CLOSE_UP_MARGIN)
    if (x2 - x1) * (y2 - y1) > 0.5 * width * height:
        return None
    return (x1, y1, max(1.0, x2 - x1), max(1.0, y2 - y1))


def _picture(image: Image.Image, view: tuple[float, float, float, float], scale: float) -> _Picture:
    x, y, w, h = view
    crop = image.crop((round(x), round(y), round(x + w), round(y + h)))
    shown = (round(x), round(y), crop.width, crop.height)
    size = (max(1, round(crop.width * scale)), max(1, round(crop.height * scale)))
    if size != crop.size:
        resample = Image.Resampling.LANCZOS if scale < 1 else Image.Resampling.NEAREST
        crop = crop.resize(size, resample)
    buffer = io.BytesIO()
    crop.save(buffer, format="JPEG", quality=80)
    uri = "data:image/jpeg;base64," + base64.b64encode(buffer.getvalue()).decode("ascii")
    return _Picture(uri, shown, *size)


def _figure(
    picture: _Picture,
    sample: GroundingSample,
    answer: Prediction | None,
    caption: str,
    hit: bool,
) -> str:
    x, y, w, h = picture.view
    # Strokes a constant size on the page whatever the zoom (image pixels per page pixel).
    unit = w / picture.width
    svg = [
        f'<svg viewBox="{x:g} {y:g} {w:g} {h:g}" preserveAspectRatio="none" '
        'xmlns="http://www.w3.org/2000/svg">'
    ]
    target = sample.target
    style = f'fill="rgba(31,157,69,.18)" stroke="#1f9d45" stroke-width="{2 * unit:g}"'
    if isinstance(target, Box):
        svg.append(
            f'<rect x="{target.x1:g}" y="{target.y1:g}" width="{target.x2 - target.x1:g}" '
            f'height="{target.y2 - target.y1:g}" {style}/>'
        )
    elif isinstance(target, Polygon):
        points = " ".join(f"{px:g},{py:g}" for px, py in target.points)
        svg.append(f'<polygon points="{points}" {style}/>')
    if answer is not None and answer.box is not None:
        bx1, by1, bx2, by2 = answer.box
        svg.append(
            f'<rect x="{bx1:g}" y="{by1:g}" width="{bx2 - bx1:g}" height="{by2 - by1:g}" '
            f'fill="none" stroke="#7a8599" stroke-dasharray="{4 * unit:g}" '
            f'stroke-width="{1.5 * unit:g}"/>'
        )
    if answer is not None and answer.x is not None and answer.y is not None:
        px, py, r = answer.x, answer.y, 7 * unit
        colour = "#1d4ed8" if hit else "#d23b3b"
        stroke = f'stroke="{colour}" stroke-width="{2 * unit:g}"'
        svg.append(
            f'<circle cx="{px:g}" cy="{py:g}" r="{r:g}" fill="none" {stroke}/>'
            f'<line x1="{px - 2 * r:g}" y1="{py:g}" x2="{px + 2 * r:g}" y2="{py:g}" {stroke}/>'
            f'<line x1="{px:g}" y1="{py - 2 * r:g}" x2="{px:g}" y2="{py + 2 * r:g}" {stroke}/>'
        )
    svg.append("</svg>")
    return (
        f'<figure style="width:{picture.width}px;max-width:100%"><div class="stage">'
        f'<img src="{picture.uri}" width="{picture.width}" height="{picture.height}" '
        f'alt="{e(sample.id)}">{"".join(svg)}</div>'
        f"<figcaption>{e(caption)}</figcaption></figure>"
    )
