"""`holodesk model check` on tiny models built here, and how the CLI finds it.

The full check runs through the transformers engine on the tiny Holotron-
architecture model (see tests/engines/test_transformers_engine.py for why that
model is seen through transformers' `nemotron_h_omni` class). Random weights
answer gibberish, so the check must report both parse failures cleanly, print
the rendered template and exit non-zero. The template checks run on
tokenizers whose templates are broken in the ways real checkpoints are.
"""

from __future__ import annotations

import importlib.util
import io
import json
import shutil
import sys
import textwrap
from collections.abc import Callable, Mapping
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from PIL import Image

from holodesk.client.cli import build_parser, entry_point_commands, load_commands, main
from holodesk.daemon.dialects import get_dialect
from holodesk.daemon.geometry import Point, Rect
from holodesk.daemon.model_check.check import CheckOptions, Exit, run_check
from holodesk.daemon.model_check.command import COMMAND
from holodesk.daemon.model_check.screenshot import Screenshot, bundled_screenshot, distance_to
from holodesk.daemon.model_check.steps import StepCheck
from holodesk.daemon.model_check.template import TemplateReport, check_template
from tests.support.openai_server import OpenAIServer
from tests.support.tiny_models import (
    TinyModel,
    build_tiny_nemotron_vl,
    tiny_nemotron_vl_for_transformers,
)

REPO = Path(__file__).resolve().parents[2]
needs_transformers = pytest.mark.skipif(
    importlib.util.find_spec("transformers") is None or importlib.util.find_spec("torch") is None,
    reason="needs holodesk-daemon[transformers]",
)


@pytest.fixture(scope="module")
def tiny_model(tmp_path_factory: pytest.TempPathFactory) -> TinyModel:
    return build_tiny_nemotron_vl(tmp_path_factory.mktemp("tiny-holotron"))


@pytest.fixture(scope="module")
def tiny_path(tiny_model: TinyModel, tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tiny_nemotron_vl_for_transformers(tiny_model, tmp_path_factory.mktemp("tiny-tf"))


def tool() -> ModuleType:
    """tools/make_model_check_screenshot.py, imported from its path."""
    path = REPO / "tools" / "make_model_check_screenshot.py"
    spec = importlib.util.spec_from_file_location("make_model_check_screenshot", path)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


# --- the full check ---------------------------------------------------------------------


@needs_transformers
@pytest.mark.timeout(300)
def test_the_check_reports_gibberish_and_exits_non_zero(
    tiny_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    status = main(
        [
            "model",
            "check",
            "--model",
            str(tiny_path),
            "--engine",
            "transformers",
            "--policy-opt",
            "trust_remote_code=true",
            "--policy-opt",
            "device=cpu",
            "--policy-opt",
            "max_new_tokens=24",
        ]
    )
    out = capsys.readouterr().out
    assert status == Exit.FAILED
    # (a) the model's own template, rendered with the holotron dialect's messages.
    assert "rendered by the processor's template" in out
    assert "    <|im_start|>system\n    You operate a computer" in out  # indented
    assert "    <|im_start|>assistant" in out  # the tail, with the generation prompt
    assert "image tokens: dialect estimate 1792, processor 1536" in out  # 3x2 tiles + thumbnail
    assert "PROBLEM" not in out
    assert "template: ok" in out
    # (b), (c): both answers shown raw, both failing to parse.
    assert out.count("raw output: ") == 2
    assert "localization: FAILED: output does not parse:" in out
    assert "navigation: FAILED: output does not parse:" in out
    assert "target box: x=360 y=388 w=140 h=52" in out
    summary = out.strip().splitlines()[-1]
    assert summary.startswith("model check: FAILED (")
    assert "locate: output does not parse" in summary
    assert "navigate: output does not parse" in summary


def answering(click: tuple[float, float]) -> Callable[[dict[str, Any], Mapping[str, str]], str]:
    """A stand-in model that answers both steps in the holotron dialect (0-1000),
    clicking `click`."""
    x, y = click

    def answer(body: dict[str, Any], headers: Mapping[str, str]) -> str:
        if "Localize an element" in json.dumps(body):
            return json.dumps({"x": x, "y": y})
        action = {"action": "click_element", "element": "Submit", "x": x, "y": y}
        return json.dumps({"note": "", "thought": "Submit the form.", "action": action})

    return answer


def served(server: OpenAIServer, tokenizer: Path | None) -> CheckOptions:
    return CheckOptions(
        model="tiny",
        engine="openai",
        policy_options={"base_url": server.base_url, "dialect": "holotron"},
        tokenizer=str(tokenizer) if tokenizer else None,
        template=tokenizer is not None,
    )


@needs_transformers
async def test_a_model_that_answers_right_passes(tiny_model: TinyModel) -> None:
    # The Submit button's centre (430, 414) of 1280x800, in 0-1000 units.
    async with OpenAIServer(answer=answering((335.9375, 517.5))) as server:
        out = io.StringIO()
        result = await run_check(served(server, tiny_model.path), out=out)
    assert result.exit == Exit.OK, out.getvalue()
    locate, navigate = result.steps
    assert locate.inside
    assert navigate.inside
    assert navigate.point is not None
    assert abs(navigate.point.x - 430) < 0.01
    assert abs(navigate.point.y - 414) < 0.01
    assert out.getvalue().splitlines()[-1].startswith("model check: PASSED")
    # Each step sent the screenshot, as the model would see it.
    assert len(server.seen) == 2
    assert all("data:image/png;base64," in json.dumps(s.body) for s in server.seen)


async def test_a_click_off_the_target_fails_with_its_distance() -> None:
    # (100, 100) in 0-1000 is (128, 80) on the frame: 232 px left of and 308 px above the box.
    async with OpenAIServer(answer=answering((100, 100))) as server:
        out = io.StringIO()
        result = await run_check(served(server, None), out=out)
    assert result.exit == Exit.FAILED
    assert all(s.parsed for s in result.steps)
    assert [s.verdict() for s in result.steps] == ["click 386 px from the target"] * 2
    assert "parsed: click at (128.0, 80.0)" in out.getvalue()


async def test_an_engine_that_cannot_start_is_its_own_failure() -> None:
    out = io.StringIO()
    options = CheckOptions(
        model="served-model",
        engine="openai",
        # A closed port, no waiting for it to come up.
        policy_options={"base_url": "http://127.0.0.1:9/v1", "start_timeout_s": "0"},
        template=False,
    )
    result = await run_check(options, out=out)
    assert result.exit == Exit.ENGINE
    assert result.steps == ()
    assert "the openai engine could not start" in out.getvalue().splitlines()[-1]


async def test_bad_options_are_a_usage_error() -> None:
    out = io.StringIO()
    result = await run_check(
        CheckOptions(model="m", engine="vllm", policy_options={"dialect": "nope"}), out=out
    )
    assert result.exit == Exit.USAGE
    assert "unknown dialect" in out.getvalue() or "nope" in out.getvalue()
    with pytest.raises(ValueError, match="engine 'tgi'"):
        CheckOptions(model="m", engine="tgi")


# --- the template checks ----------------------------------------------------------------


def tokenizer_folder(tiny_model: TinyModel, folder: Path, template: str | None) -> Path:
    """The tiny model's tokenizer alone, with `template` as its chat template (None: none)."""
    folder.mkdir()
    shutil.copy(tiny_model.path / "tokenizer.json", folder)
    config = json.loads((tiny_model.path / "tokenizer_config.json").read_text())
    config.pop("chat_template", None)
    (folder / "tokenizer_config.json").write_text(json.dumps(config))
    if template is not None:
        (folder / "chat_template.jinja").write_text(template)
    return folder


def template_report(folder: Path) -> TemplateReport:
    return check_template(str(folder), get_dialect("holotron"), bundled_screenshot())


CHATML_PARTS = (
    "{% for m in messages %}<|im_start|>{{ m['role'] }}\n"
    "{% for p in m['content'] %}{% if p['type'] == 'image' %}<image>"
    "{% else %}{{ p['text'] }}{% endif %}{% endfor %}<|im_end|>\n{% endfor %}"
    "<|im_start|>assistant\n"
)


@needs_transformers
def test_a_tokenizer_without_a_chat_template_is_a_problem(
    tiny_model: TinyModel, tmp_path: Path
) -> None:
    report = template_report(tokenizer_folder(tiny_model, tmp_path / "none", None))
    assert not report.ok
    assert report.problems[0].startswith("no chat template:")
    assert report.rendered == ""


@needs_transformers
def test_a_good_template_without_a_processor_counts_text_tokens(
    tiny_model: TinyModel, tmp_path: Path
) -> None:
    report = template_report(tokenizer_folder(tiny_model, tmp_path / "good", CHATML_PARTS))
    assert report.ok, report.problems
    assert report.source == "tokenizer"
    assert report.rendered.count("<image>") == 1
    assert report.prompt_tokens is not None
    assert report.prompt_tokens > 100
    assert report.image_tokens_estimate == 1792
    assert report.image_tokens_actual is None
    assert any("no image processor" in note for note in report.notes)


@needs_transformers
@pytest.mark.parametrize(
    ("name", "template", "problem"),
    [
        (
            "system role",
            "{% if messages[0]['role'] == 'system' %}"
            "{{ raise_exception('System role not supported') }}{% endif %}" + CHATML_PARTS,
            "the template rejects the system role",
        ),
        (
            "string content",
            "{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n"
            "{% endfor %}<|im_start|>assistant\n",
            "the template printed the content parts as a list",
        ),
        (
            "string content, strict",
            "{% for m in messages %}{% if m['content'] is not string %}"
            "{{ raise_exception('content must be a string') }}{% endif %}"
            "{{ m['content'] }}{% endfor %}",
            "the template rejects list-of-parts content",
        ),
        (
            "no image placeholder",
            "{% for m in messages %}<|im_start|>{{ m['role'] }}\n{% for p in m['content'] %}"
            "{% if p['type'] == 'text' %}{{ p['text'] }}{% endif %}{% endfor %}<|im_end|>\n"
            "{% endfor %}<|im_start|>assistant\n",
            "the template writes no image placeholder",
        ),
        (
            "system dropped",
            "{% for m in messages %}{% if m['role'] != 'system' %}<|im_start|>{{ m['role'] }}\n"
            "{% for p in m['content'] %}{% if p['type'] == 'image' %}<image>{% else %}"
            "{{ p['text'] }}{% endif %}{% endfor %}<|im_end|>\n{% endif %}{% endfor %}",
            "the template drops the system message",
        ),
    ],
)
def test_template_problems_are_named(
    tiny_model: TinyModel, tmp_path: Path, name: str, template: str, problem: str
) -> None:
    report = template_report(tokenizer_folder(tiny_model, tmp_path / "t", template))
    assert any(p.startswith(problem) for p in report.problems), (name, report.problems)


# --- the bundled screenshot -------------------------------------------------------------


def test_the_bundled_target_is_what_the_generator_draws(tmp_path: Path) -> None:
    make = tool()
    shot = bundled_screenshot()
    box = make.layout().submit
    assert shot.target == Rect(box.x, box.y, box.width, box.height)
    bundled_json = (
        REPO / "daemon/src/holodesk/daemon/model_check/assets/form-1280x800.json"
    ).read_text()
    assert json.loads(bundled_json) == make.record(box)
    png, meta = make.write(tmp_path)
    assert meta.read_text() == bundled_json
    # The bundled picture has the button exactly there: its border on the box's edge,
    # the window's white just outside, and the same size as a fresh drawing.
    with Image.open(io.BytesIO(shot.png)) as image, Image.open(png) as fresh:
        assert image.size == fresh.size == (shot.size.width, shot.size.height) == (1280, 800)
        rgb = image.convert("RGB")
        left, top, right, bottom = box.corners
        for x, y in ((left, top), (right, bottom), (left, (top + bottom) // 2)):
            assert rgb.getpixel((x, y)) == make.BUTTON_BORDER
        for x, y in ((left - 2, top), (right + 2, bottom), (left, top - 2)):
            assert rgb.getpixel((x, y)) == make.WINDOW


def test_clicks_are_judged_against_the_box() -> None:
    box = Rect(360, 388, 140, 52)
    assert distance_to(box, Point(430, 414)) == 0.0
    assert distance_to(box, Point(360, 388)) == 0.0  # the edge counts
    assert distance_to(box, Point(500, 440)) == 0.0
    assert distance_to(box, Point(503, 444)) == 5.0
    assert distance_to(box, Point(10, 414)) == 350.0
    inside = StepCheck("locate", point=Point(430, 414), distance_px=0.0)
    outside = StepCheck("navigate", point=Point(10, 414), distance_px=350.0)
    no_click = StepCheck("navigate", actions="write 'x'")
    assert inside.ok
    assert not outside.ok
    assert not no_click.ok
    assert outside.verdict() == "click 350 px from the target"
    assert no_click.verdict() == "no click in the answer (write 'x')"


def test_a_screenshot_becomes_a_png_frame() -> None:
    shot: Screenshot = bundled_screenshot()
    frame = shot.frame()
    assert frame.size == shot.size
    assert frame.data.startswith(b"\x89PNG")


# --- how `holodesk` finds the command ---------------------------------------------------

PLUGIN = textwrap.dedent(
    """
    class Hello:
        name = "hello"
        help = "say hello"

        def configure(self, parser):
            parser.add_argument("--who", default="world")

        def run(self, args):
            print(f"hello {args.who}")
            return 7


    COMMAND = Hello()
    NOT_A_COMMAND = object()
    """
)


def fake_distribution(root: Path, entries: dict[str, str]) -> None:
    """A distribution installed in `root` (a sys.path entry) with holodesk.commands."""
    (root / "holodesk_fake_plugin.py").write_text(PLUGIN)
    info = root / "holodesk_fake_plugin-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: holodesk-fake-plugin\n")
    lines = "\n".join(f"{name} = {target}" for name, target in entries.items())
    (info / "entry_points.txt").write_text(f"[holodesk.commands]\n{lines}\n")


def test_the_daemon_registers_model_check_as_an_entry_point() -> None:
    commands = {c.name: c for c in entry_point_commands()}
    # The workspace is installed (uv sync), so the daemon's entry point is there.
    assert commands["model"] is COMMAND
    parser = build_parser(load_commands())
    args = parser.parse_args(["model", "check", "--model", "m", "--engine", "transformers"])
    assert (args.model, args.engine, args.parse_retries) == ("m", "transformers", 0)


def test_entry_point_commands_need_not_import_the_client(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    fake_distribution(
        tmp_path,
        {
            "hello": "holodesk_fake_plugin:COMMAND",
            "broken": "holodesk_fake_plugin:NOT_A_COMMAND",
            "missing": "holodesk_no_such_module:COMMAND",
        },
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    status = main(["hello", "--who", "tester"])
    captured = capsys.readouterr()
    assert status == 7
    assert "hello tester" in captured.out
    # Bad plugins are named on stderr and skipped; the CLI still works.
    assert "'broken' command (holodesk_fake_plugin:NOT_A_COMMAND) is a object without" in (
        captured.err
    )
    assert "cannot load the 'missing' command" in captured.err
    names = [c.name for c in load_commands(stderr=io.StringIO())]
    assert names[:2] == ["run", "demo"]  # built-ins first
    assert {"hello", "model"} <= set(names)
    assert "broken" not in names
    assert "missing" not in names
