"""`holodesk model check --dialect auto` against stand-in servers that answer in each format.

Each stand-in (tests/support/dialect_standins.py) is a real OpenAI-compatible
HTTP server on loopback whose "model" answers in one dialect's format whatever
it is asked; the check runs every registered dialect against it through the
real openai engine and ModelPolicy, and must pick the format's dialect, write
it as a file, and that file must drive the daemon's own policy (built by
create_policy, the path `holodeskd --policy openai --policy-opt dialect_file=`
takes) to a click on the target. holo and holotron read answers identically
(same parser, coordinates and prompt), so their stand-ins tie on answers; the
tie rules decide, and the test says which and why.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import importlib.util
import io
import json
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from rich.console import Console

from holodesk.client.cli import main
from holodesk.daemon.actions import Click
from holodesk.daemon.dialects import dialect_names, get_dialect, load_dialect
from holodesk.daemon.geometry import Point
from holodesk.daemon.model_check.auto import run_auto, summary
from holodesk.daemon.model_check.candidates import candidate_dialects, unconstrained
from holodesk.daemon.model_check.check import CheckOptions, Exit
from holodesk.daemon.model_check.progress import countdown_text
from holodesk.daemon.model_check.scoring import DialectScore, rank
from holodesk.daemon.model_check.screenshot import bundled_screenshot, distance_to
from holodesk.daemon.model_check.steps import StepCheck
from holodesk.daemon.policies.model import ModelPolicy
from holodesk.daemon.policies.registry import create_policy
from holodesk.daemon.steps import StepContext
from tests.support.dialect_standins import answering_in, garbage, target_in_model_space
from tests.support.openai_server import Answer, OpenAIServer
from tests.support.tiny_models import build_tiny_nemotron_vl, tiny_nemotron_vl_for_transformers
from tests.support.vllm_server import free_port

needs_transformers = pytest.mark.skipif(
    importlib.util.find_spec("transformers") is None or importlib.util.find_spec("torch") is None,
    reason="needs holodesk-daemon[transformers]",
)

# What auto must pick for a stand-in of each format. holotron's answers are holo's
# (one parser, 0-1000, one prompt; only the image resize differs), so answers tie and
# the cheaper image rule (holo: 1000 tokens for 1280x800, holotron 1792) decides.
TWINS = ("holo", "holotron")


def expected_for(fmt: str) -> tuple[str, tuple[str, ...]]:
    """(the dialect auto must write, the dialects that must tie with it on answers)."""
    return ("holo", TWINS) if fmt in TWINS else (fmt, (fmt,))


def served(server: OpenAIServer, **options: str) -> CheckOptions:
    return CheckOptions(
        model="tiny",
        engine="openai",
        policy_options={"base_url": server.base_url, **options},
        template=False,
    )


@pytest.mark.parametrize("fmt", dialect_names())
async def test_auto_picks_the_dialect_the_server_speaks(fmt: str, tmp_path: Path) -> None:
    expected, tied = expected_for(fmt)
    output = tmp_path / "dialect.toml"
    async with OpenAIServer(answer=answering_in(fmt)) as server:
        out = io.StringIO()
        result = await run_auto(served(server), output, out=out)
        text = out.getvalue()
        assert result.exit == Exit.OK, text
        assert result.ranking is not None
        winner = result.ranking.winner
        assert winner is not None
        assert winner.dialect == expected, text
        assert (winner.parsed, winner.landed) == (2, 2)
        assert result.ranking.tied == tied
        # Every dialect was tried (a dialect registered later would be too), unconstrained.
        assert {s.dialect for s in result.ranking.scores} == set(dialect_names())
        assert len(server.seen) == 2 * len(dialect_names())
        for seen in server.seen:
            assert "response_format" not in seen.body
            assert "guided_json" not in seen.body
        # Every other format reads these answers worse, unless it reads them identically.
        for other in result.ranking.scores[len(tied) :]:
            assert other.answer_key() < winner.answer_key()
        assert result.written == output
        assert f"wrote {output}" in text.splitlines()[-1] or f"wrote {output}" in text
        assert "dialects, best first" in text
        # The file is the daemon's: its policy built from it clicks the target.
        assert load_dialect(output).name == expected
        policy = create_policy("openai", {"base_url": server.base_url, "dialect_file": str(output)})
        assert isinstance(policy, ModelPolicy)
        assert policy.dialect.name == expected
        assert policy.dialect.spec.structured_output == get_dialect(expected).spec.structured_output
        await policy.start()
        try:
            shot = bundled_screenshot()
            context = StepContext("daemon", shot.task, 1, (shot.frame(),))
            decision = await policy.decide(context)
        finally:
            await policy.close()
    (click,) = [a for a in decision.actions if isinstance(a, Click)]
    assert distance_to(shot.target, click.point) == 0.0
    if len(tied) > 1:
        assert result.ranking.tie_rule == "fewest image tokens per screenshot"
        assert "tied on answers with holotron, decided by fewest image tokens" in text


async def test_a_server_that_answers_garbage_has_no_winner(tmp_path: Path) -> None:
    output = tmp_path / "dialect.toml"
    async with OpenAIServer(answer=garbage) as server:
        out = io.StringIO()
        result = await run_auto(served(server), output, out=out)
    assert result.exit == Exit.FAILED
    assert result.written is None
    assert not output.exists()
    assert result.ranking is not None
    assert result.ranking.winner is None
    assert all(s.parsed == 0 for s in result.ranking.scores)
    last = out.getvalue().strip().splitlines()[-1]
    assert "NO WINNER (no dialect parsed any answer" in last
    assert f"{output} was not written" in last


async def test_clicks_that_miss_are_a_best_guess_not_a_pass(tmp_path: Path) -> None:
    """A holo-format model clicking far off the target: holo parses and misses; the
    file is written (it is the best reading) but the exit says it did not pass."""
    output = tmp_path / "dialect.toml"

    def off_target(body: dict[str, object], headers: object) -> str:
        step = {"note": "", "thought": "", "action": {"action": "click_element", "x": 50, "y": 50}}
        return json.dumps(step) if bundled_screenshot().task in json.dumps(body) else '{"x": 50}'

    async with OpenAIServer(answer=off_target) as server:
        out = io.StringIO()
        result = await run_auto(served(server), output, out=out)
    assert result.exit == Exit.FAILED
    assert result.ranking is not None
    assert result.ranking.winner is not None
    assert result.ranking.winner.landed == 0
    assert result.written == output
    assert "BEST GUESS, clicks missed" in out.getvalue()


async def test_a_countdown_runs_while_the_server_is_not_up(tmp_path: Path) -> None:
    port = free_port()
    options = CheckOptions(
        model="tiny",
        engine="openai",
        policy_options={"base_url": f"http://127.0.0.1:{port}/v1", "start_timeout_s": "60"},
        template=False,
    )
    screen = io.StringIO()
    console = Console(file=screen, force_terminal=True, width=120)
    check = asyncio.create_task(run_auto(options, tmp_path / "d.toml", console=console))
    deadline = asyncio.get_running_loop().time() + 30
    while "s left of 60 s" not in screen.getvalue():
        assert not check.done(), screen.getvalue()
        assert asyncio.get_running_loop().time() < deadline, "no countdown shown"
        await asyncio.sleep(0.05)
    async with OpenAIServer(answer=answering_in("uitars"), port=port):
        result = await asyncio.wait_for(check, 60)
    assert result.exit == Exit.OK, screen.getvalue()
    assert result.ranking is not None
    assert result.ranking.winner is not None
    assert result.ranking.winner.dialect == "uitars"
    assert "waiting for the openai engine (tiny)" in screen.getvalue()


def test_countdown_text() -> None:
    assert countdown_text("x", 12.4, 120) == "waiting for x: 108 s left of 120 s"
    assert countdown_text("x", 130, 120) == "waiting for x: 0 s left of 120 s"
    assert countdown_text("x", 3.2, None) == "starting x: 3 s"


# --- the rules ---------------------------------------------------------------------------


def trial(ok: bool, parsed: bool = True, distance: float | None = None) -> StepCheck:
    if not parsed:
        return StepCheck("locate", parse_error="no")
    return StepCheck("navigate", point=Point(1, 1), distance_px=0.0 if ok else distance)


def test_the_score_rule_landing_then_parsing_then_distance() -> None:
    scores = [
        DialectScore("a", (trial(False, distance=10), trial(False, distance=10))),
        DialectScore("b", (trial(True), trial(False, parsed=False))),
        DialectScore("c", (trial(False, distance=300), trial(False, distance=5))),
        DialectScore("d", (trial(False, parsed=False), trial(False, parsed=False))),
    ]
    ranking = rank(scores)
    assert [s.dialect for s in ranking.scores] == ["b", "a", "c", "d"]
    assert ranking.winner is not None
    assert ranking.winner.dialect == "b"
    assert ranking.tied == ("b",)
    assert ranking.tie_rule == ""


def test_the_tie_rules_processor_then_tokens_then_default_then_name() -> None:
    both = (trial(True), trial(True))
    # The processor's count beats the cheaper rule: holotron's tiles match the model.
    by_processor = rank(
        [
            DialectScore("holo", both, image_tokens=1000, processor_gap=792),
            DialectScore("holotron", both, image_tokens=1792, processor_gap=0),
        ]
    )
    assert by_processor.winner is not None
    assert by_processor.winner.dialect == "holotron"
    assert by_processor.tie_rule == "the processor's image-token count"
    by_tokens = rank([DialectScore("x", both, 1792), DialectScore("y", both, 1000)])
    assert by_tokens.winner is not None
    assert (by_tokens.winner.dialect, by_tokens.tie_rule) == (
        "y",
        "fewest image tokens per screenshot",
    )
    by_default = rank([DialectScore("aaa", both, 1000), DialectScore("holotron", both, 1000)])
    assert by_default.winner is not None
    assert by_default.winner.dialect == "holotron"
    assert by_default.tie_rule == "the daemon's default dialect"
    by_name = rank([DialectScore("zz", both), DialectScore("mm", both)])
    assert by_name.winner is not None
    assert (by_name.winner.dialect, by_name.tie_rule, by_name.tied) == (
        "mm",
        "name order",
        ("mm", "zz"),
    )


def test_candidates_are_the_registry_unconstrained() -> None:
    candidates = candidate_dialects()
    assert candidates[0].name == "holotron"
    assert {d.name for d in candidates} == set(dialect_names())
    for dialect in candidates:
        original = get_dialect(dialect.name)
        assert type(dialect) is type(original)
        assert not dialect.spec.structured_output
        assert dialect.step_schema() is None
        assert dialect.location_schema() is None
        restored = {"structured_output": original.spec.structured_output}
        assert dialect.spec.model_copy(update=restored) == original.spec
    free = get_dialect("uitars")
    assert unconstrained(free) is free  # free text already


def test_stand_ins_write_each_format_in_its_own_coordinates() -> None:
    shot = bundled_screenshot()
    holo = target_in_model_space("holo", shot)
    pixels = target_in_model_space("holo1.5", shot)
    assert (round(holo.x, 3), round(holo.y, 3)) == (335.938, 517.5)
    # 1280x800 smart-resized to 1260x784 (factor 28, at most 1280 patches): pixels of
    # that image, another number for the same point.
    assert (round(pixels.x, 2), round(pixels.y, 2)) == (423.28, 405.72)


@pytest.fixture(scope="module")
def tiny_folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The tiny Holotron-architecture checkpoint as transformers loads it (random
    weights; its processor: one image token per 32 px patch)."""
    tiny = build_tiny_nemotron_vl(tmp_path_factory.mktemp("tiny"))
    return tiny_nemotron_vl_for_transformers(tiny, tmp_path_factory.mktemp("tiny-tf"))


@needs_transformers
@pytest.mark.timeout(300)
async def test_the_processor_of_the_checkpoint_breaks_the_tie(
    tiny_folder: Path, tmp_path: Path
) -> None:
    """With the checkpoint's processor (the tiny model's: one token per 32 px
    patch, Qwen3-VL's rule and holo's), its count decides between holo and holotron."""
    folder = tiny_folder
    async with OpenAIServer(answer=answering_in("holotron")) as server:
        options = CheckOptions(
            model="tiny",
            engine="openai",
            policy_options={"base_url": server.base_url, "trust_remote_code": "true"},
            tokenizer=str(folder),
        )
        out = io.StringIO()
        result = await run_auto(options, tmp_path / "d.toml", out=out)
    assert result.exit == Exit.OK, out.getvalue()
    assert result.ranking is not None
    by_name = {s.dialect: s for s in result.ranking.scores}
    assert by_name["holo"].processor_gap == 0
    assert by_name["holotron"].processor_gap == 1792 - 1000
    assert result.ranking.tie_rule == "the processor's image-token count"
    assert all(not s.template_problems for s in result.ranking.scores)
    assert "processor gap 0" in out.getvalue()
    assert "decided by the processor's image-token count" in summary(result)


def test_auto_and_a_dialect_file_are_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    status = main(
        ["model", "check", "--model", "m", "--dialect", "auto", "--dialect-file", "x.toml"]
    )
    assert status == Exit.USAGE
    assert "--dialect auto chooses the dialect" in capsys.readouterr().err


@contextlib.contextmanager
def server_in_a_thread(answer: Answer) -> Iterator[str]:
    """A stand-in server on its own event loop, for the CLI's own asyncio.run."""
    loop = asyncio.new_event_loop()
    started: concurrent.futures.Future[tuple[str, asyncio.Event]] = concurrent.futures.Future()

    async def serve() -> None:
        stop = asyncio.Event()
        async with OpenAIServer(answer=answer) as server:
            started.set_result((server.base_url, stop))
            await stop.wait()

    thread = threading.Thread(target=loop.run_until_complete, args=(serve(),), daemon=True)
    thread.start()
    base_url, stop = started.result(timeout=30)
    try:
        yield base_url
    finally:
        loop.call_soon_threadsafe(stop.set)
        thread.join(30)
        loop.close()


def test_the_cli_writes_the_winner_where_asked(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    output = tmp_path / "out" / "winner.toml"
    with server_in_a_thread(answering_in("uitars1.0")) as base_url:
        status = main(
            [
                "model",
                "check",
                "--model",
                "tiny",
                "--engine",
                "openai",
                "--dialect",
                "auto",
                "--no-template",
                "--policy-opt",
                f"base_url={base_url}",
                "--dialect-out",
                str(output),
            ]
        )
    out = capsys.readouterr().out
    assert status == Exit.OK, out
    assert 'base = "uitars1.0"' in output.read_text()
    assert "#   uitars1.0    2/2     2/2" in output.read_text()
    assert load_dialect(output).name == "uitars1.0"
    assert f"dialect_file={output}" in out
    with server_in_a_thread(garbage) as base_url:
        status = main(
            [
                *("model", "check", "--model", "tiny", "--engine", "openai"),
                *("--dialect", "auto", "--no-template", "--policy-opt", f"base_url={base_url}"),
                *("--dialect-out", str(tmp_path / "none.toml")),
            ]
        )
    assert status == Exit.FAILED
    assert not (tmp_path / "none.toml").exists()
    assert "NO WINNER" in capsys.readouterr().out


@needs_transformers
@pytest.mark.timeout(300)
async def test_a_real_checkpoint_in_process_that_speaks_no_format(
    tiny_folder: Path, tmp_path: Path
) -> None:
    """The tiny checkpoint run in process (the transformers engine, started once for
    every dialect, tool-calling ones included, their tools rendered by its chat
    template): random weights write no format, so no winner and no file, and every
    failure is a parse failure, not an engine one."""
    options = CheckOptions(
        model=str(tiny_folder),
        engine="transformers",
        policy_options={"trust_remote_code": "true", "device": "cpu", "max_new_tokens": "8"},
    )
    out = io.StringIO()
    output = tmp_path / "d.toml"
    result = await run_auto(options, output, out=out)
    assert result.exit == Exit.FAILED, out.getvalue()
    assert not output.exists()
    assert result.ranking is not None
    assert {s.dialect for s in result.ranking.scores} == set(dialect_names())
    for score in result.ranking.scores:
        assert len(score.trials) == 2
        assert all(t.engine_error is None for t in score.trials), score
        assert all(t.parse_error for t in score.trials), score
        assert score.template_problems == (), score
        assert score.processor_gap is not None
    assert "NO WINNER" in out.getvalue().splitlines()[-1]
