"""Write docs/dialects/<name>.md for every registered dialect, from its spec and its
published action space (daemon/src/holodesk/daemon/dialects/action_space.py).

    uv run python tools/gen_dialect_docs.py          # regenerate in place
    uv run python tools/gen_dialect_docs.py --check  # exit 1 when a page is stale

A page is what a third party writing a model adapter or fine-tuning data needs:
the answer format, every action with its fields and a worked example (the model's
output and the contract actions it becomes), the coordinate convention and resize
rule, the key vocabulary, the history layout, and the prompt templates.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from google.protobuf import json_format

from holodesk.daemon import convert
from holodesk.daemon.actions import Action, ActionKind, map_points
from holodesk.daemon.dialects import Dialect, dialect_names, get_dialect
from holodesk.daemon.dialects.action_space import ActionField, ActionForm, ActionSpace
from holodesk.daemon.dialects.values import key_names_text
from holodesk.daemon.geometry import Size

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "docs" / "dialects"
# Pages of docs/dialects/ written by hand, which the index links to and --check keeps.
HAND_WRITTEN = {"adding-a-family.md": "Adding a model family"}
FRAME = Size(1920, 1080)

_CONVENTIONS = {
    "normalized_1000": "x and y normalized to 0-1000 across the screenshot, (0, 0) top-left, "
    "(1000, 1000) bottom-right, whatever the image size",
    "resized_pixels": "x and y in pixels of the image the model sees (the frame after the "
    "resize rule below), from the top-left corner",
    "unit": "x and y as fractions 0-1 of the screenshot's width and height",
}


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def _contract(kind: ActionKind) -> str:
    wire = convert.action_to_pb(Action("", "", kind))
    value = json_format.MessageToDict(wire)
    return json.dumps(value, ensure_ascii=False)


def _field_type(field: ActionField) -> str:
    if field.kind == "choice" or field.kind == "modifiers":
        listed = " | ".join(field.choices)
        return listed if field.kind == "choice" else f"list of {listed}"
    bounds = ""
    if field.minimum is not None or field.maximum is not None:
        low = "" if field.minimum is None else f"{field.minimum:g}"
        high = "" if field.maximum is None else f"{field.maximum:g}"
        bounds = f" {low}..{high}"
    items = ""
    if field.kind in ("path", "keys") and (field.min_items or field.max_items):
        items = f" ({field.min_items}..{field.max_items if field.max_items else ''} entries)"
    return f"{field.kind}{bounds}{items}"


def _form(out: list[str], dialect: Dialect, space: ActionSpace, form: ActionForm) -> None:
    out += [f"### `{form.name}`", "", form.summary, "", "```", space.signature(form), "```", ""]
    if form.fields:
        out += ["| field | type | required | default | meaning |", "|---|---|---|---|---|"]
        for f in form.fields:
            out.append(
                f"| `{f.name}` | {_cell(_field_type(f))} | {'yes' if f.required else 'no'} "
                f"| {_cell(f.default)} | {_cell(f.description)} |"
            )
        out.append("")
    if form.examples:
        example = form.examples[0]
        geometry = dialect.geometry(FRAME)
        output = space.write(form, example.args, example.thought)
        out += ["Example: the model writes", "", "```", output, "```", ""]
        out += [
            f"and on a {FRAME.width}x{FRAME.height} frame the daemon sends "
            "(holodesk.v1.Action, frame pixels):",
            "",
            "```json",
        ]
        out += [_contract(map_points(k, geometry.to_frame)) for k in example.produces]
        out += ["```", ""]


def _history_example(dialect: Dialect, space: ActionSpace | None) -> list[str]:
    """An earlier step as the prompt shows it: the first example, executed."""
    if space is None or not space.forms or not space.forms[0].examples:
        return []
    spec = dialect.spec
    geometry = dialect.geometry(FRAME)
    example = space.forms[0].examples[0]
    actions = [map_points(k, geometry.to_frame) for k in example.produces]
    fields = {
        "step": 3,
        "thought": example.thought,
        "note": "",
        "actions": dialect.parser.render_actions(actions, spec, geometry),
        "results": "; ".join("ok" for _ in actions),
    }
    template = (
        spec.prompts.history_step if spec.history_style == "text" else (spec.prompts.assistant_step)
    )
    return [
        "",
        f"Step 3's `{space.forms[0].name}` example, executed, as later prompts show it:",
        "",
        "```",
        template.format(**fields).rstrip("\n"),
        "```",
    ]


def _history(dialect: Dialect) -> list[str]:
    spec = dialect.spec
    style = {
        "text": "one user turn holding the task, a line per earlier step (`history_step`) and "
        "the screenshots",
        "turns": "the task in the first user turn, then each earlier step replayed as the "
        "model's own answer (an assistant turn, `assistant_step`), preceded by its "
        "screenshot while that is shown; the screen now as the last user turn",
    }[spec.history_style]
    layout = {
        "append": f"everything in the order it happened (each earlier step right after its "
        f"screenshot), so each prompt begins with the previous one's; screenshots leave "
        f"{spec.image_block} at a time",
        "window": "the step lines first, then the last screenshots, both sliding by one per step",
    }[spec.history_layout]
    return [
        f"- style `{spec.history_style}`: {style}.",
        f"- layout `{spec.history_layout}`: {layout}.",
        f"- screenshots: {spec.history_images} on average, at most {spec.frames_kept}; "
        f"earlier steps described: about {spec.history_steps}.",
        "- each earlier step shows the actions the daemon executed, in the model's own "
        "syntax and coordinates, and their results (ok, failed, rejected, skipped).",
    ]


def _templates(dialect: Dialect) -> list[str]:
    out: list[str] = []
    prompts = dialect.spec.prompts.model_dump()
    for name, template in prompts.items():
        if not template:
            continue
        out += [f"`{name}`:", "", "````text", template.rstrip("\n"), "````", ""]
    return out


def render(name: str) -> str:
    dialect = get_dialect(name)
    spec = dialect.spec
    space = dialect.action_space
    geometry = dialect.geometry(FRAME)
    seen = geometry.model_image
    out = [
        f"# Dialect `{name}`",
        "",
        f"Generated from the dialect's spec and action space by "
        f"`uv run python tools/gen_dialect_docs.py`; do not edit. {spec.description}.",
        "",
        "## Answer format",
        "",
        space.answer_format if space is not None and space.answer_format else "(not published)",
        "",
        f"- parser: `{spec.parser}`; structured decoding: {_decoding(dialect)}.",
        f"- sampling: at most {spec.max_tokens} tokens, temperature {spec.temperature:g}; "
        f"{spec.parse_retries} repair attempt(s) after an unusable answer.",
        "",
        "## Coordinates",
        "",
        f"- convention `{spec.coordinates.value}`: {_CONVENTIONS[spec.coordinates.value]}.",
        f"- resize rule `{spec.resize.kind}`: a {FRAME.width}x{FRAME.height} frame is seen as "
        f"{seen.width}x{seen.height}"
        + (
            f" ({tokens} image tokens)."
            if (tokens := dialect.image_tokens(FRAME)) is not None
            else "."
        ),
        f'- the prompt says: "{spec.coordinate_rule(seen.width, seen.height)}"',
        f"- clients are asked for frames of at most {spec.frame.max_width}x"
        f"{spec.frame.max_height}, {spec.frame.encoding.value}.",
        "- the daemon maps the model's coordinates to frame pixels exactly; a point "
        "outside the image is refused with a hint the repair turn shows the model.",
        "",
    ]
    if space is None:
        out += [
            "## Actions",
            "",
            "This dialect's parser publishes no action space (dialects/action_space.py), so "
            "its actions are not listed here.",
            "",
        ]
    else:
        out += ["## Actions", ""]
        out += [f"- {note}" for note in space.notes]
        out += ["", "Keys: " + key_names_text() + ".", ""]
        for form in space.forms:
            _form(out, dialect, space, form)
        out += ["## What this format has no word for", ""]
        if not space.gaps:
            out += ["Nothing: every action and option of holodesk.v1.Action is reachable.", ""]
        for gap in space.gaps:
            out += [f"- {', '.join(f'`{o}`' for o in gap.options)}: {gap.instead}"]
        out.append("")
    out += ["## History", "", *_history(dialect), *_history_example(dialect, space), ""]
    out += ["## Prompt templates", ""]
    out += [
        "str.format templates; `{action_list}` is the action list above, one line per "
        "action; `{output_schema}` the JSON schema without its descriptions.",
        "",
        *_templates(dialect),
    ]
    schema = dialect.step_schema()
    if schema is not None:
        out += [
            "## JSON schema",
            "",
            "Sent to engines that constrain decoding; pixel coordinates are also bounded by "
            "each step's image.",
            "",
            "```json",
            json.dumps(schema, indent=1, ensure_ascii=False),
            "```",
            "",
        ]
    out += _tools(dialect)
    return "\n".join(out).rstrip() + "\n"


def _decoding(dialect: Dialect) -> str:
    if dialect.tool_use() is not None:
        return "the tools below (a forced call: vLLM constrains it to the call syntax)"
    return "the JSON schema below" if dialect.step_schema() is not None else "none (free text)"


def _tools(dialect: Dialect) -> list[str]:
    use = dialect.tool_use()
    if use is None:
        return []
    return [
        "## Tools",
        "",
        "Native function tools: sent as the request's `tools` (tool_choice "
        f"`{use.choice}`) to an OpenAI-compatible server, which reads the calls with its "
        "own `--tool-call-parser`; rendered through the chat template's `tools` argument "
        f"in process, where vLLM's `{use.parser}` tool parser reads the calls (the spec's "
        "`tool_parser`). Each earlier step goes back as an assistant turn with its call "
        "and a `tool` turn with its result; older screenshots are dropped.",
        "",
        "```json",
        json.dumps(list(use.tools), indent=1, ensure_ascii=False),
        "```",
        "",
    ]


def pages() -> dict[Path, str]:
    pages = {OUT / f"{name}.md": render(name) for name in dialect_names()}
    index = ["# Dialects", "", "Generated by `uv run python tools/gen_dialect_docs.py`.", ""]
    for name in dialect_names():
        index.append(f"- [{name}]({name}.md): {get_dialect(name).spec.description}")
    index += ["", *(f"[{title}]({page})." for page, title in HAND_WRITTEN.items())]
    pages[OUT / "README.md"] = "\n".join(index) + "\n"
    return pages


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--check", action="store_true", help="only check the pages are current")
    args = parser.parse_args()
    wanted = pages()
    if args.check:
        stale = [p for p, text in wanted.items() if not p.exists() or p.read_text() != text]
        extra = [p for p in OUT.glob("*.md") if p not in wanted and p.name not in HAND_WRITTEN]
        if stale or extra:
            names = ", ".join(str(p.relative_to(ROOT)) for p in stale + extra)
            print(f"stale: {names}; run `uv run python tools/gen_dialect_docs.py`", file=sys.stderr)
            return 1
        return 0
    OUT.mkdir(parents=True, exist_ok=True)
    for path in OUT.glob("*.md"):
        if path not in wanted and path.name not in HAND_WRITTEN:
            path.unlink()
    for path, text in wanted.items():
        path.write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
