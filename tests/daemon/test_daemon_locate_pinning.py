"""Locate says why nothing was found (LocationStatus) and what answered (PolicyPinning):
what `holodesk eval` scores refusals by and records in a run's manifest."""

from __future__ import annotations

from holodesk.daemon.dialects import Dialect, get_dialect
from holodesk.daemon.engines.base import GenerationRequest, GenerationResult
from holodesk.daemon.engines.scripted import ScriptedEngine
from holodesk.daemon.policies.model import ModelPolicy
from holodesk.daemon.policies.ocr.policy import OcrPolicy
from holodesk.proto.v1 import agent_pb2, control_pb2

from .ocr.screens import form_screen
from .support import GUARD_S, make_frame, running_daemon


class OneAnswerEngine(ScriptedEngine):
    """Answers "the OK button" with a point, anything else with prose."""

    async def generate(self, request: GenerationRequest) -> GenerationResult:
        await super().generate(request)
        if "the OK button" in request.messages[-1].text:
            return GenerationResult(text='{"x": 500, "y": 500}')
        return GenerationResult(text="I cannot find it.")


async def test_a_model_policy_reports_unparseable_answers_and_its_pinning() -> None:
    dialect = get_dialect("holotron")
    policy = ModelPolicy(dialect, OneAnswerEngine(()), name="model")
    async with running_daemon([policy]) as daemon:
        request = agent_pb2.LocateRequest(
            frame=make_frame("f", 1280, 720), descriptions=["the OK button", "a unicorn"]
        )
        response = await daemon.agent.Locate(request, timeout=GUARD_S)
        info = await daemon.control.GetServerInfo(
            control_pb2.GetServerInfoRequest(), timeout=GUARD_S
        )
    ok, unicorn = response.locations
    assert (ok.found, ok.status) == (True, agent_pb2.LOCATION_STATUS_FOUND)
    # A model that answers prose did not say "absent": its answer could not be read.
    assert (unicorn.found, unicorn.status) == (False, agent_pb2.LOCATION_STATUS_UNPARSEABLE)
    assert unicorn.raw_output == "I cannot find it."

    pinning = response.policy
    assert (pinning.policy, pinning.engine, pinning.dialect) == ("model", "scripted", "holotron")
    assert pinning.prompt_hash == dialect.prompt_hash
    assert pinning.prompt_hash.startswith("sha256:")
    assert pinning.resize_rule == (
        "tile(tile_size=512,max_tiles=12,min_tiles=1,thumbnail=true,tokens_per_tile=256)"
    )
    assert pinning.coordinates == "normalized_1000"
    assert pinning.sampling.temperature == dialect.spec.temperature
    assert pinning.sampling.max_tokens == dialect.spec.max_tokens
    assert not pinning.sampling.HasField("seed")
    described = {p.name: p for p in info.policies}
    assert described["model"].pinning == pinning


def test_the_prompt_hash_follows_what_is_asked_not_the_name() -> None:
    holo = get_dialect("holo")
    renamed = Dialect(
        holo.spec.model_copy(update={"name": "mine", "description": "a copy"}), holo.parser
    )
    assert renamed.prompt_hash == holo.prompt_hash
    prompts = holo.spec.prompts.model_copy(update={"locate": "Where is {description}?"})
    asked_otherwise = Dialect(holo.spec.model_copy(update={"prompts": prompts}), holo.parser)
    assert asked_otherwise.prompt_hash != holo.prompt_hash
    hotter = Dialect(holo.spec.model_copy(update={"temperature": 0.7}), holo.parser)
    assert hotter.prompt_hash != holo.prompt_hash
    # holotron differs from holo only in its resize rule and frames, and says so.
    holotron = get_dialect("holotron")
    assert holotron.prompt_hash != holo.prompt_hash
    assert holo.spec.resize.rule_text().startswith("smart(factor=")


async def test_the_ocr_policy_says_absent_when_no_text_matches() -> None:
    screen = form_screen()
    async with running_daemon([OcrPolicy()]) as daemon:
        request = agent_pb2.LocateRequest(
            frame=make_frame("f", *screen.image.size, data=screen.png()),
            descriptions=["Email address", "Purple unicorn"],
        )
        response = await daemon.agent.Locate(request, timeout=GUARD_S)
    email, unicorn = response.locations
    assert email.status == agent_pb2.LOCATION_STATUS_FOUND
    assert (unicorn.found, unicorn.status) == (False, agent_pb2.LOCATION_STATUS_ABSENT)
    pinning = response.policy
    assert (pinning.policy, pinning.engine, pinning.resize_rule) == ("ocr", "ocr", "none")
    assert pinning.model.startswith("tesseract ")
    assert not pinning.HasField("sampling")
