"""ModelPolicy + ScriptedEngine without gRPC: prompts, images, retries, registry."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from holodesk.daemon.actions import Click, Fail
from holodesk.daemon.dialects import get_dialect
from holodesk.daemon.engines.base import Engine, EngineError, GenerationRequest, GenerationResult
from holodesk.daemon.engines.scripted import ScriptedEngine, ScriptError
from holodesk.daemon.frames import EncodedFrame, ImageEncoding
from holodesk.daemon.geometry import Point, Size
from holodesk.daemon.policies.base import Policy
from holodesk.daemon.policies.model import ModelPolicy
from holodesk.daemon.policies.registry import PolicyConfigError, create_policy
from holodesk.daemon.steps import StepContext
from tests.daemon.support import holo, image_bytes


def encoded(frame_id: str, width: int = 1920, height: int = 1080) -> EncodedFrame:
    return EncodedFrame(
        frame_id, Size(width, height), ImageEncoding.PNG, image_bytes(width, height)
    )


def context(session: str = "s1", step: int = 1, frames: int = 1) -> StepContext:
    window = tuple(encoded(f"f{i}") for i in range(frames))
    return StepContext(session_id=session, task="find it", step=step, frames=window)


async def test_the_model_sees_the_resized_frame_and_the_schema() -> None:
    engine = ScriptedEngine([holo({"action": "click", "x": 500, "y": 500})])
    policy = ModelPolicy(get_dialect("holo1.5"), engine)
    assert isinstance(policy, Policy)
    assert isinstance(engine, Engine)
    await policy.start()
    assert policy.ready
    decision = await policy.decide(context())
    # holo1.5 pixels of its 1316x728 image: 500 -> 500 * 1920 / 1316.
    (click,) = decision.actions
    assert isinstance(click, Click)
    assert click.point == Point(500 * 1920 / 1316, 500 * 1080 / 728)
    (request,) = engine.requests
    system, user = request.messages
    assert system.role == "system"
    assert '"const":"click_element"' in system.text  # the schema, compact
    assert "- click_element(x, y, element?, button?, count?, modifiers?)" in system.text
    assert "1316x728" in system.text  # the pixel convention names the image size
    (image,) = user.images
    assert (image.width, image.height) == (1316, 728)
    assert image.mime_type == "image/png"
    assert request.json_schema is not None
    # Decoding is held to the image too: no x past its 1316 pixels.
    assert '"maximum": 1316' in json.dumps(request.json_schema)
    assert request.request_id == "s1/1/0"


async def test_retries_then_fails_with_the_parse_error() -> None:
    engine = ScriptedEngine(["nope", "still nope", "{}"])
    policy = ModelPolicy(get_dialect(), engine, parse_retries=2)
    decision = await policy.decide(context())
    assert decision.attempts == 3
    (fail,) = decision.actions
    assert isinstance(fail, Fail)
    assert fail.reason.startswith("model output unparseable after 3 attempt(s)")
    assert [r.request_id for r in engine.requests] == ["s1/1/0", "s1/1/1", "s1/1/2"]
    # Each retry shows the model its answer and why it failed.
    last = engine.requests[-1].messages
    assert [m.role for m in last] == ["system", "user", "assistant", "user", "assistant", "user"]
    assert last[-2].text == "still nope"
    assert "Answer with exactly one JSON object" in last[-1].text


class BrokenEngine(ScriptedEngine):
    async def generate(self, request: GenerationRequest) -> GenerationResult:
        raise EngineError("connection refused")


async def test_engine_errors_become_a_failed_decision() -> None:
    decision = await ModelPolicy(get_dialect(), BrokenEngine([])).decide(context())
    assert decision.actions == (Fail("engine scripted failed: connection refused"),)


async def test_scripted_engine_replays_per_session_and_fails_when_exhausted() -> None:
    policy = ModelPolicy(get_dialect(), ScriptedEngine([holo({"action": "wait"})]))
    first = await policy.decide(context("a"))
    other = await policy.decide(context("b"))
    assert first.actions == other.actions  # each session starts at the top
    exhausted = await policy.decide(context("a", step=2))
    assert exhausted.actions == (Fail("the script ran out of steps"),)


def test_script_files_are_checked(tmp_path: Path) -> None:
    good = tmp_path / "good.json"
    good.write_text(json.dumps(["a", "b"]))
    assert ScriptedEngine.from_file(good).outputs == ("a", "b")
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps([{"action": "click"}]))
    with pytest.raises(ScriptError, match="list of strings"):
        ScriptedEngine.from_file(bad)


def test_the_policy_registry_builds_scripted_policies(tmp_path: Path) -> None:
    script = tmp_path / "s.json"
    script.write_text("[]")
    policy = create_policy("scripted", {"script": str(script), "dialect": "holo1.5"})
    assert policy.name == "scripted"
    # holo1.5 shows 3 screenshots on average, up to 4 (the append layout's block).
    assert policy.history_frames == 4
    with pytest.raises(PolicyConfigError, match="needs a script"):
        create_policy("scripted", {})
    with pytest.raises(PolicyConfigError, match="no option"):
        create_policy("scripted", {"script": str(script), "temperature": "2"})
    with pytest.raises(PolicyConfigError, match="unknown policy"):
        create_policy("gpt", {})


def test_frame_spec_respects_what_the_client_can_encode() -> None:
    dialect = get_dialect()
    # Lossless by default: screens are mostly text.
    assert dialect.frame_spec(()).encoding is ImageEncoding.PNG
    assert dialect.frame_spec((ImageEncoding.JPEG,)).encoding is ImageEncoding.JPEG
    assert dialect.frame_spec((ImageEncoding.PNG,)).encoding is ImageEncoding.PNG
    assert dialect.frame_spec((ImageEncoding.WEBP,)).encoding is ImageEncoding.WEBP
