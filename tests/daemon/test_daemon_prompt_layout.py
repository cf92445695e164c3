"""The append layout (DialectSpec.history_layout): each step's prompt begins with the
previous step's, screenshots leave in blocks, and as many are shown on average as
the window layout shows.

Sessions run through the daemon's own `Session` (its frame window and history),
with each built-in dialect's prompt builder; prompts are compared as a flat text in
which each image is named by its frame.
"""

from __future__ import annotations

import itertools
import json
import statistics
from pathlib import Path

import pytest
from pydantic import ValidationError

from holodesk.daemon.actions import ActionResult, ActionStatus, Click
from holodesk.daemon.dialects import Dialect, dialect_names, get_dialect, load_dialect
from holodesk.daemon.dialects.spec import DialectSpec, auto_block
from holodesk.daemon.dialects.values import key_names_text
from holodesk.daemon.engines.base import ChatMessage, ImagePart
from holodesk.daemon.frames import EncodedFrame, ImageEncoding
from holodesk.daemon.geometry import Point, Size
from holodesk.daemon.policies.base import Decision
from holodesk.daemon.session.sessions import Session
from holodesk.daemon.session.values import SessionRequest
from holodesk.daemon.steps import StepContext

FRAME = Size(1280, 800)
STEPS = 20
TASK = "Rename the report and mail it to finance."


def run(dialect: Dialect, steps: int = STEPS) -> list[tuple[ChatMessage, ...]]:
    """Each step's prompt of a session that clicks once per step; the session keeps
    the frames the layout shows at most (ModelPolicy.history_frames)."""
    session = Session(
        SessionRequest(task=TASK),
        policy_name="test",
        max_steps=steps + 1,
        history_frames=dialect.spec.frames_kept,
    )
    prompts = []
    for step in range(1, steps + 1):
        results = tuple(ActionResult(a.action_id, ActionStatus.OK) for a in session.pending)
        session.accept_results(results, "observation.results")
        session.accept_frame(EncodedFrame(f"f{step}", FRAME, ImageEncoding.PNG), "frame")
        context = session.context()
        images = tuple(ImagePart(f.frame_id.encode(), "image/png", 64, 40) for f in context.frames)
        prompts.append(dialect.step_messages(context, images))
        click = Click(Point(10 * step, 20))
        session.record_decision(Decision((click,), thought=f"thought #{step}#", note=f"#{step}#"))
    return prompts


def flat(messages: tuple[ChatMessage, ...]) -> str:
    """The prompt as one text, images as [img:<frame id>]; the last turn left open, as
    the next step may go on with it."""
    out = []
    for index, message in enumerate(messages):
        out.append(f"<{message.role}>")
        for part in message.content:
            out.append(f"[img:{part.data.decode()}]" if isinstance(part, ImagePart) else part.text)
        if index < len(messages) - 1:
            out.append(f"</{message.role}>")
    return "".join(out)


def shown_frames(messages: tuple[ChatMessage, ...]) -> list[str]:
    return [p.data.decode() for m in messages for p in m.content if isinstance(p, ImagePart)]


APPEND = [name for name in dialect_names() if get_dialect(name).spec.history_layout == "append"]


def test_the_append_layout_is_the_default_where_it_fits() -> None:
    assert {"holotron", "holo", "holo1.5", "uitars", "uitars1.0"} <= set(APPEND)


@pytest.mark.parametrize("name", APPEND)
def test_each_prompt_begins_with_the_previous_one_except_at_block_drops(name: str) -> None:
    dialect = get_dialect(name)
    spec = dialect.spec
    prompts = [flat(p) for p in run(dialect)]
    # The task turn also lists the action space (UI-TARS puts it there).
    task = spec.prompts.task.format(
        task=TASK, action_list=dialect.action_list(), key_names=key_names_text()
    )
    fixed = prompts[0][: prompts[0].index(task)] + task
    drops: list[int] = []
    for step in range(2, STEPS):  # step -> step + 1
        before, after = prompts[step - 1], prompts[step]
        assert after.startswith(fixed), (name, step)
        dropped_image = spec.first_image_step(step + 1) != spec.first_image_step(step)
        dropped_lines = spec.first_history_step(step + 1) != spec.first_history_step(step)
        if not dropped_image:
            # Only screenshot drops may drop step lines (the prefix breaks nowhere else).
            assert not dropped_lines, (name, step)
            assert after.startswith(before), (name, step)
            continue
        drops.append(step + 1)
        assert not after.startswith(before), (name, step)
        if not dropped_lines:
            # Everything before the first dropped screenshot's observation is unchanged.
            first = spec.first_image_step(step)
            cut = before.index(f"[img:f{first}]")
            cut -= len(spec.prompts.observation_open.format(step=first))
            if before[:cut].endswith("<user>"):
                cut -= len("<user>")
            assert after.startswith(before[:cut]), (name, step)
    # One step in image_block drops a block; all the steps between only append.
    assert len(drops) >= 2, (name, drops)
    assert {b - a for a, b in itertools.pairwise(drops)} == {spec.image_block}


@pytest.mark.parametrize("name", APPEND)
def test_screenshots_average_history_images(name: str) -> None:
    dialect = get_dialect(name)
    spec = dialect.spec
    counts = [len(shown_frames(p)) for p in run(dialect, 40)]
    block, average = spec.image_block, spec.history_images
    assert block > 1
    # From the first drop on, whole blocks of steps.
    first_drop = next(i for i in range(1, len(counts)) if counts[i] < counts[i - 1])
    steady = counts[first_drop:]
    steady = steady[: len(steady) // block * block]
    assert len(steady) >= 2 * block
    assert statistics.fmean(steady) == average
    assert min(steady) == average - block // 2
    assert max(steady) == average + block // 2 == spec.frames_kept


@pytest.mark.parametrize("name", APPEND)
def test_the_images_are_the_newest_frames_in_order(name: str) -> None:
    dialect = get_dialect(name)
    for step, messages in enumerate(run(dialect), start=1):
        shown = dialect.spec.images_shown(step)
        assert shown_frames(messages) == [f"f{n}" for n in range(step - shown + 1, step + 1)]
        # The screen now is the last thing before the closing words.
        assert (
            flat(messages)
            .rstrip()
            .endswith(
                f"[img:f{step}]" + dialect.spec.prompts.observation_close.format(step=step).rstrip()
            )
        )


@pytest.mark.parametrize("name", APPEND)
def test_each_shown_earlier_screenshot_is_followed_by_its_step(name: str) -> None:
    """Lines leave only with their screenshot, so the model never sees a screen of its
    past without what it did there; every earlier step in the window is described."""
    dialect = get_dialect(name)
    spec = dialect.spec
    for step, messages in enumerate(run(dialect), start=1):
        text = flat(messages)
        for earlier in range(spec.first_history_step(step), step):
            assert f"#{earlier}#" in text, (name, step, earlier)
        for earlier in range(step - spec.images_shown(step) + 1, step):
            image = text.index(f"[img:f{earlier}]")
            assert text.index(f"#{earlier}#") > image, (name, step, earlier)
            assert text.index(f"[img:f{earlier + 1}]") > text.index(f"#{earlier}#")
        # Older steps stay, as text, about history_steps of them.
        described = step - spec.first_history_step(step)
        assert described <= spec.history_steps + spec.image_block * 2, (name, step)
        if step > spec.history_steps:
            assert described >= spec.history_steps // 2, (name, step)


def test_the_window_layout_is_still_there() -> None:
    """The original: step lines, then the last 3 screenshots, sliding by one: the next
    prompt departs right after the task (what a prefix cache cannot reuse)."""
    holo = get_dialect("holo")
    window = Dialect(holo.spec.model_copy(update={"history_layout": "window"}), holo.parser)
    assert window.spec.frames_kept == window.spec.history_images == 3
    prompts = run(window, 6)
    fifth = prompts[4]
    assert shown_frames(fifth) == ["f3", "f4", "f5"]
    text = flat(fifth)
    assert all(text.index(f"#{n}#") < text.index("[img:f3]") for n in range(1, 5))
    task_end = text.index("</task>\n") + len("</task>\n")
    sixth = flat(prompts[5])
    assert sixth[:task_end] == text[:task_end]
    assert not sixth.startswith(text[: text.index("[img:f3]")])


def test_block_rules() -> None:
    assert [auto_block(k) for k in range(1, 8)] == [1, 3, 3, 3, 5, 5, 7]
    holotron = get_dialect("holotron").spec
    assert (holotron.image_block, holotron.frames_kept) == (3, 4)
    assert [holotron.images_shown(s) for s in range(1, 11)] == [1, 2, 3, 4, 2, 3, 4, 2, 3, 4]
    wide = holotron.model_validate(holotron.model_dump() | {"history_block": 5})
    assert [wide.images_shown(s) for s in range(1, 12)] == [1, 2, 3, 4, 5, 1, 2, 3, 4, 5, 1]
    sliding = holotron.model_validate(holotron.model_dump() | {"history_block": 1})
    assert [sliding.images_shown(s) for s in range(1, 7)] == [1, 2, 3, 3, 3, 3]
    for block, message in ((4, "odd"), (7, "too wide")):
        with pytest.raises(ValidationError, match=message):
            DialectSpec.model_validate(holotron.model_dump() | {"history_block": block})


def test_a_dialect_file_may_change_the_window(tmp_path: Path) -> None:
    path = tmp_path / "d.json"
    path.write_text(json.dumps({"base": "holotron", "history_images": 2}))
    spec = load_dialect(path).spec
    assert (spec.image_block, spec.frames_kept) == (3, 3)  # windows of 1, 2, 3
    path.write_text(json.dumps({"base": "holotron", "history_layout": "window"}))
    assert load_dialect(path).spec.frames_kept == 3


def test_the_append_layout_reaches_the_prefix_target() -> None:
    """What tests/bench/bench_prompt_growth measures, on a small tokenizer: at 1080p,
    >= 60% of each step's prompt tokens begin the previous step's prompt at steady
    state, with the same 3 screenshots on average; the window layout is far below."""
    from tests.bench import bench_prompt_growth as bench

    tokenizer = bench.train_tokenizers(1000, 300_000)["nemotron"]
    holotron = get_dialect("holotron")
    window = bench.with_layout(holotron, "window")
    measured = {
        d.spec.history_layout: bench.reuse(d, bench.run_session(d, tokenizer, 40), 40)
        for d in (holotron, window)
    }
    new, old = measured["append"], measured["window"]
    assert new["images_mean"] == old["images_mean"] == 3
    assert new["share_mean"] >= 0.60
    assert old["share_mean"] < 0.45


@pytest.mark.parametrize("name", ["holotron", "uitars", "holo"])
def test_a_policy_may_make_only_the_images_shown(name: str) -> None:
    """The images go with the newest frames: a policy that makes only the shown ones
    (spec.images_shown) gets the same prompt as one that makes the whole window's."""
    for layout in ("append", "window"):
        base = get_dialect(name)
        dialect = Dialect(base.spec.model_copy(update={"history_layout": layout}), base.parser)
        session = Session(
            SessionRequest(task=TASK), policy_name="t", max_steps=9,
            history_frames=dialect.spec.frames_kept,
        )  # fmt: skip
        for step in range(1, 9):
            session.accept_frame(EncodedFrame(f"f{step}", FRAME, ImageEncoding.PNG), "frame")
            context = session.context()
            images = tuple(
                ImagePart(f.frame_id.encode(), "image/png", 64, 40) for f in context.frames
            )
            shown = images[-dialect.spec.images_shown(step) :]
            assert dialect.step_messages(context, shown) == dialect.step_messages(context, images)
            session.record_decision(Decision((Click(Point(1, 2)),)))
    one_frame = StepContext("s", TASK, 1, frames=context.frames[:1])
    with pytest.raises(ValueError, match="2 images for a window of 1 frames"):
        get_dialect(name).step_messages(one_frame, images[:2])
