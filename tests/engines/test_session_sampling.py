"""Per-session sampling and the generation record, on engines that need no model:
the scripted engine, the OpenAI wire against the stand-in server, ModelPolicy, and
a real daemon (SessionStart.sampling in, Actions.generation out)."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import grpc
import pytest

from holodesk.daemon.actions import Click, Fail
from holodesk.daemon.dialects import get_dialect
from holodesk.daemon.engines.base import (
    ChatMessage,
    EngineError,
    GenerationRequest,
    SamplingParams,
    TextPart,
)
from holodesk.daemon.engines.openai_engine import OpenAIEngine
from holodesk.daemon.engines.scripted import ScriptedEngine, ScriptError
from holodesk.daemon.frames import EncodedFrame, ImageEncoding
from holodesk.daemon.generation import MAX_CANDIDATES, MAX_SAMPLED_TOKENS, Sampling
from holodesk.daemon.geometry import Size
from holodesk.daemon.policies.model import CANDIDATES_TEMPERATURE, ModelPolicy, call_seed
from holodesk.daemon.steps import StepContext
from holodesk.proto.v1 import agent_pb2
from tests.daemon.support import holo, image_bytes, make_frame, ok_results, running_daemon
from tests.support.openai_server import OpenAIServer

CLICK = holo({"action": "click", "x": 500, "y": 500})
ANSWER = holo({"action": "answer", "content": "done"})


def ask(request_id: str = "s/1/0", n: int = 1, logprobs: bool = False) -> GenerationRequest:
    messages = (ChatMessage("user", (TextPart("go"),)),)
    sampling = SamplingParams(temperature=1.0 if n > 1 else 0.0)
    return GenerationRequest(request_id, messages, sampling, n=n, logprobs=logprobs)


def context(step: int = 1, sampling: Sampling | None = None) -> StepContext:
    frame = EncodedFrame("f1", Size(640, 400), ImageEncoding.PNG, image_bytes(640, 400))
    return StepContext("s1", "task", step, (frame,), sampling=sampling)


# --- the protocol ----------------------------------------------------------------------


def test_n_above_one_needs_a_temperature() -> None:
    messages = (ChatMessage("user", (TextPart("go"),)),)
    with pytest.raises(ValueError, match="temperature above 0"):
        GenerationRequest("r", messages, SamplingParams(temperature=0.0), n=2)
    with pytest.raises(ValueError, match="at least 1"):
        GenerationRequest("r", messages, n=0)


# --- the scripted engine ---------------------------------------------------------------


async def test_scripted_candidates_cycle_and_logprobs_are_the_bytes_with_certainty() -> None:
    engine = ScriptedEngine([["a", "b"], "é"])
    first = await engine.generate(ask("s/1/0", n=3, logprobs=True))
    assert [s.text for s in first.all_samples] == ["a", "b", "a"]
    assert first.text == "a"
    second = await engine.generate(ask("s/2/0", logprobs=True))
    (sample,) = second.all_samples
    assert sample.token_ids == (0xC3, 0xA9)  # "é" in UTF-8
    assert sample.token_logprobs == (0.0, 0.0)
    assert sample.cumulative_logprob == 0.0
    plain = await engine.generate(ask("t/1/0"))
    assert plain.all_samples[0].token_logprobs == ()
    assert plain.all_samples[0].cumulative_logprob is None


def test_scripted_files_take_candidate_lists_and_refuse_empty_ones(tmp_path: Path) -> None:
    good = tmp_path / "good.json"
    good.write_text(json.dumps(["a", ["b", "c"]]))
    assert ScriptedEngine.from_file(good).outputs == ("a", ("b", "c"))
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(["a", []]))
    with pytest.raises(ScriptError, match="non-empty list of strings"):
        ScriptedEngine.from_file(bad)


# --- the OpenAI wire -------------------------------------------------------------------


def counting_answer() -> Any:
    count = iter(range(1000))
    return lambda body, headers: f"answer {next(count)}"


async def test_openai_asks_n_and_logprobs_and_reads_every_choice_in_index_order() -> None:
    async with OpenAIServer(answer=counting_answer()) as server:
        engine = OpenAIEngine(server.base_url, "tiny")
        await engine.start()
        try:
            result = await engine.generate(ask(n=3, logprobs=True))
            plain = await engine.generate(ask("s/2/0"))
        finally:
            await engine.close()
    asked, plain_body = (s.body for s in server.seen)
    assert (asked["n"], asked["logprobs"]) == (3, True)
    # A request for one plain answer stays what every server takes.
    assert "n" not in plain_body
    assert "logprobs" not in plain_body
    assert [s.text for s in result.all_samples] == ["answer 0", "answer 1", "answer 2"]
    for sample in result.all_samples:
        assert len(sample.token_logprobs) == len(sample.text) == sample.completion_tokens
        assert sample.token_logprobs[0] == pytest.approx(-0.01)
        assert sample.cumulative_logprob == pytest.approx(math.fsum(sample.token_logprobs))
        assert sample.token_ids == ()  # OpenAI's API gives none
    assert plain.all_samples[0].token_logprobs == ()


async def test_openai_token_ids_come_from_vllms_token_id_strings() -> None:
    async with OpenAIServer(answer="hé") as server:
        engine = OpenAIEngine(
            server.base_url, "tiny", extra_body={"return_tokens_as_token_ids": True}
        )
        await engine.start()
        try:
            result = await engine.generate(ask(logprobs=True))
        finally:
            await engine.close()
    (sample,) = result.all_samples
    assert sample.token_ids == (ord("h"), ord("é"))
    assert sample.token_logprobs == pytest.approx((-0.01, -0.02))


async def test_openai_logprobs_asked_but_absent_is_an_engine_error() -> None:
    async with OpenAIServer() as server:
        # The extra body turns the request's logprobs off behind the engine's back.
        engine = OpenAIEngine(server.base_url, "tiny", extra_body={"logprobs": False})
        await engine.start()
        try:
            with pytest.raises(EngineError, match="logprobs were asked for"):
                await engine.generate(ask(logprobs=True))
        finally:
            await engine.close()


# --- ModelPolicy -----------------------------------------------------------------------


async def test_the_first_parsing_candidate_is_acted_on_and_all_are_recorded() -> None:
    engine = ScriptedEngine([["not json", CLICK, ANSWER]])
    policy = ModelPolicy(get_dialect("holo"), engine)
    sampling = Sampling(candidates=3, logprobs=True, seed=5)
    decision = await policy.decide(context(sampling=sampling))
    (click,) = decision.actions
    assert isinstance(click, Click)
    generation = decision.generation
    assert generation is not None
    assert [c.text for c in generation.completions] == ["not json", CLICK, ANSWER]
    assert generation.chosen == 1
    assert generation.completions[0].parse_error
    assert generation.completions[1].parsed
    assert generation.completions[2].parsed
    for candidate in generation.completions:
        assert len(candidate.token_logprobs) == len(candidate.token_ids) > 0
    assert generation.messages[-1].images  # the prompt as the engine got it
    # Every candidate's tokens count (the scripted engine's tokens are UTF-8 bytes).
    assert generation.completion_tokens == sum(len(t.encode()) for t in ("not json", CLICK, ANSWER))
    assert generation.engine_seconds >= 0
    (request,) = engine.requests
    assert (request.n, request.logprobs) == (3, True)
    # Several candidates at the dialect's greedy default would all be the same.
    assert request.sampling.temperature == CANDIDATES_TEMPERATURE
    assert request.sampling.seed == call_seed(5, 1, 0)


async def test_a_repair_call_samples_as_many_and_its_candidates_follow() -> None:
    engine = ScriptedEngine([["nope", "nope either"], [ANSWER, CLICK]])
    policy = ModelPolicy(get_dialect("holo"), engine, parse_retries=1)
    sampling = Sampling(temperature=0.7, candidates=2, seed=9)
    decision = await policy.decide(context(step=4, sampling=sampling))
    generation = decision.generation
    assert generation is not None
    assert [c.parsed for c in generation.completions] == [False, False, True, True]
    assert generation.chosen == 2
    assert decision.attempts == 2
    first, repair = engine.requests
    assert repair.n == 2
    # The repair prompt quotes the first candidate; the record keeps the latest prompt.
    assert "nope" in repair.messages[-2].text
    assert generation.messages == repair.messages
    assert (first.sampling.seed, repair.sampling.seed) == (call_seed(9, 4, 0), call_seed(9, 4, 1))
    assert first.sampling.temperature == 0.7


async def test_no_parsing_candidate_fails_the_step_with_everything_recorded() -> None:
    engine = ScriptedEngine([["x", "y"]] * 2)
    policy = ModelPolicy(get_dialect("holo"), engine, parse_retries=1)
    decision = await policy.decide(context(sampling=Sampling(candidates=2)))
    (fail,) = decision.actions
    assert isinstance(fail, Fail)
    assert decision.generation is not None
    assert decision.generation.chosen is None
    assert len(decision.generation.completions) == 4


async def test_session_sampling_overrides_the_dialects_defaults_and_seeds_repeat() -> None:
    engine = ScriptedEngine([CLICK], per_session=False)
    policy = ModelPolicy(get_dialect("holo"), engine)
    await policy.decide(context())
    custom = Sampling(temperature=0.3, top_p=0.8, max_tokens=77, seed=1)
    await policy.decide(context(step=2, sampling=custom))
    await policy.decide(context(step=2, sampling=custom))
    await policy.decide(context(step=3, sampling=custom))
    default, *seeded = engine.requests
    assert default.sampling == get_dialect("holo").sampling()
    assert (default.n, default.logprobs) == (1, False)
    assert (seeded[0].sampling.temperature, seeded[0].sampling.top_p) == (0.3, 0.8)
    assert seeded[0].sampling.max_tokens == 77
    # Same seed, same step: the same engine seed; the next step draws anew.
    assert seeded[0].sampling.seed == seeded[1].sampling.seed != seeded[2].sampling.seed
    assert all(0 <= r.sampling.seed < 2**31 for r in seeded if r.sampling.seed is not None)


# --- through a real daemon -------------------------------------------------------------


async def test_sampling_reaches_the_policy_and_the_generation_reaches_the_client() -> None:
    engine = ScriptedEngine([["garbage", CLICK], ANSWER])
    policy = ModelPolicy(get_dialect("holo"), engine, name="scripted")
    async with running_daemon([policy]) as daemon:
        stream = daemon.stream()
        params = agent_pb2.SamplingParams(temperature=0.9, seed=3, candidates=2, logprobs=True)
        await stream.start("click", sampling=params)
        first = await stream.observe(make_frame("f1", 640, 400))
        generation = first.actions.generation
        assert [c.text for c in generation.completions] == ["garbage", CLICK]
        assert [c.parsed for c in generation.completions] == [False, True]
        assert generation.completions[0].parse_error
        assert generation.chosen == 1
        for completion in generation.completions:
            assert len(completion.token_ids) == len(completion.token_logprobs) > 0
            assert completion.cumulative_logprob == 0.0
        ended = await stream.observe(make_frame("f2", 640, 400), ok_results(first.actions))
        assert ended.ended.outcome == agent_pb2.SESSION_OUTCOME_SUCCEEDED
        await stream.finished_ok()
    request = engine.requests[0]
    assert (request.n, request.logprobs, request.sampling.temperature) == (2, True, 0.9)


async def test_a_session_without_sampling_gets_one_plain_completion() -> None:
    engine = ScriptedEngine([CLICK])
    async with running_daemon([ModelPolicy(get_dialect("holo"), engine)]) as daemon:
        stream = daemon.stream()
        await stream.start("click")
        first = await stream.observe(make_frame("f1", 640, 400))
        (completion,) = first.actions.generation.completions
        assert completion.text == CLICK
        assert completion.parsed
        assert not completion.token_logprobs


@pytest.mark.parametrize(
    ("params", "field"),
    [
        ({"temperature": -0.1}, "start.sampling.temperature"),
        ({"temperature": math.nan}, "start.sampling.temperature"),
        ({"top_p": 0.0}, "start.sampling.top_p"),
        ({"top_p": 1.5}, "start.sampling.top_p"),
        ({"candidates": MAX_CANDIDATES + 1}, "start.sampling.candidates"),
        ({"candidates": 2, "temperature": 0.0}, "start.sampling.candidates"),
        ({"max_tokens": 0}, "start.sampling.max_tokens"),
        ({"max_tokens": MAX_SAMPLED_TOKENS + 1}, "start.sampling.max_tokens"),
    ],
)
async def test_bad_sampling_is_refused_naming_the_field(params: dict[str, Any], field: str) -> None:
    async with running_daemon([ModelPolicy(get_dialect("holo"), ScriptedEngine([]))]) as daemon:
        stream = daemon.stream()
        await stream.start_nowait("x", sampling=agent_pb2.SamplingParams(**params))
        error = await stream.error()
    assert error.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert field in (error.details() or "")
