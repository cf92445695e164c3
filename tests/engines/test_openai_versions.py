"""The openai engine stamps each sample with the policy version its server reports
(engines/remote_version.py), against the stand-in server (tests/support/openai_server.py)
serving vLLM's dev route /weight_info."""

from __future__ import annotations

import asyncio
import logging
import re
import socket
import time
from collections.abc import AsyncIterator, Iterator, Mapping
from contextlib import asynccontextmanager, contextmanager
from typing import Any

import httpx
import pytest

from holodesk.daemon.dialects import get_dialect
from holodesk.daemon.engines.base import (
    ChatMessage,
    GenerationRequest,
    GenerationResult,
    SamplingParams,
    TextPart,
)
from holodesk.daemon.engines.openai_engine import OpenAIEngine
from holodesk.daemon.engines.remote_version import (
    VersionSource,
    served_version,
    weight_info_url,
)
from holodesk.daemon.policies.model import ModelPolicy
from holodesk.daemon.policies.registry import PolicyConfigError, create_policy
from holodesk.values.generation import VersionSpan
from tests.daemon.support import holo, make_frame, running_daemon
from tests.support.openai_server import OpenAIServer, Reply

ANSWER = "answer"


def ask(request_id: str = "s1/1/0", **kwargs: Any) -> GenerationRequest:
    messages = (ChatMessage("user", (TextPart("what now?"),)),)
    kwargs.setdefault("logprobs", True)
    return GenerationRequest(request_id, messages, **kwargs)


@asynccontextmanager
async def started(server: OpenAIServer, **kwargs: Any) -> AsyncIterator[OpenAIEngine]:
    engine = OpenAIEngine(server.base_url, "tiny", max_retries=0, **kwargs)
    await engine.start()
    try:
        yield engine
    finally:
        await engine.close()


@contextmanager
def refusing_port() -> Iterator[int]:
    """A port bound and not listening: a connection to it is refused at once."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        yield int(sock.getsockname()[1])


def spans(result: GenerationResult) -> list[tuple[VersionSpan, ...]]:
    return [sample.versions for sample in result.all_samples]


# --- labels and numbers ---------------------------------------------------------------


def test_a_label_is_a_number_when_it_is_one_or_through_the_pattern() -> None:
    assert served_version("12").number == 12
    assert served_version("default") == served_version("default", None)
    assert served_version("default").number == 0
    assert served_version("-3").number == 0
    assert served_version("llama-3").number == 0  # no guessing from a model's name
    step = re.compile(r"step-(\d+)")
    assert served_version("policy-step-40", step).number == 40
    assert served_version("policy", step).number == 0
    assert served_version("v7", re.compile(r"\d+")).number == 7


def test_weight_info_sits_at_the_server_root() -> None:
    assert weight_info_url("http://gpu:8000/v1") == "http://gpu:8000/weight_info"
    assert weight_info_url("http://gpu:8000/v1/") == "http://gpu:8000/weight_info"
    assert weight_info_url("http://router/llm") == "http://router/llm/weight_info"


# --- weight_info ----------------------------------------------------------------------


async def test_each_sample_carries_the_version_weight_info_reports() -> None:
    async with (
        OpenAIServer(answer=ANSWER, weight_version="3") as server,
        started(server, version_fresh_s=0.0) as engine,
        httpx.AsyncClient(trust_env=False) as trainer,
    ):
        assert engine.versions.source is VersionSource.WEIGHT_INFO  # auto found it
        first = await engine.generate(ask(n=2, sampling=SamplingParams(temperature=1.0)))
        # A trainer's update ends by naming the new version (finish_weight_update
        # does it through the same call in vLLM).
        answer = await trainer.post(
            f"http://127.0.0.1:{server.port}/update_weight_version", json={"new_version": "4"}
        )
        answer.raise_for_status()
        second = await engine.generate(ask("s1/2/0"))
    tokens = len(ANSWER)  # the stand-in's tokens are characters
    assert spans(first) == [(VersionSpan(3, 0, tokens),)] * 2
    assert first.policy_label == "3"
    assert spans(second) == [(VersionSpan(4, 0, tokens),)]
    assert second.policy_label == "4"
    assert engine.versions.stats.straddled == 0


async def test_an_update_while_a_request_runs_shows_both_versions_over_its_tokens() -> None:
    server = OpenAIServer(weight_version="7")

    def answer(body: dict[str, Any], headers: Mapping[str, str]) -> str:
        # The trainer finishes an update while this request is being answered.
        server.weight_version = "8"
        return ANSWER

    server.answer = answer
    async with server, started(server) as engine:
        result = await engine.generate(ask())
    tokens = len(ANSWER)
    # Both versions, each over every token: the chat API does not say where the
    # boundary fell. Its newest version is the later one.
    assert spans(result) == [(VersionSpan(7, 0, tokens), VersionSpan(8, 0, tokens))]
    assert result.policy_label == "8"
    assert engine.versions.stats.straddled == 1


async def test_a_change_from_a_label_without_a_number_still_counts_as_mixed() -> None:
    server = OpenAIServer(weight_version="default")  # what vLLM reports before any update

    def answer(body: dict[str, Any], headers: Mapping[str, str]) -> str:
        server.weight_version = "1"
        return ANSWER

    server.answer = answer
    async with server, started(server, version_fresh_s=0.0) as engine:
        result = await engine.generate(ask())
        server.answer = lambda body, headers: ANSWER
        server.weight_version = "default"
        steady = await engine.generate(ask("s1/2/0"))
    tokens = len(ANSWER)
    assert spans(result) == [(VersionSpan(0, 0, tokens), VersionSpan(1, 0, tokens))]
    # No number: no span; the label still tells.
    assert spans(steady) == [()]
    assert steady.policy_label == "default"


async def test_the_version_pattern_reads_a_number_from_a_label() -> None:
    async with (
        OpenAIServer(answer=ANSWER, weight_version="ckpt-step-12") as server,
        started(server, version_pattern=r"step-(\d+)") as engine,
    ):
        result = await engine.generate(ask())
    assert spans(result) == [(VersionSpan(12, 0, len(ANSWER)),)]
    assert result.policy_label == "ckpt-step-12"


async def test_without_logprobs_the_span_is_over_the_counted_tokens() -> None:
    async with (
        OpenAIServer(answer=ANSWER, weight_version="5", usage=(42, 9)) as server,
        started(server) as engine,
    ):
        result = await engine.generate(ask(logprobs=False))
    # The answer's usage.completion_tokens, the only count the server gave.
    assert spans(result) == [(VersionSpan(5, 0, 9),)]


# --- what it costs --------------------------------------------------------------------


async def test_steps_in_a_row_cost_one_read_each() -> None:
    # Steps closer together than the cache's age: the read after one step is the
    # next one's read before.
    async with (
        OpenAIServer(answer=ANSWER, weight_version="2") as server,
        started(server, version_fresh_s=60.0) as engine,
    ):
        for step in range(5):
            await engine.generate(ask(f"s1/{step}/0"))
    # The start-up probe, then one read after each step.
    assert server.weight_info_seen == 1 + 5
    assert engine.versions.stats.reads == 6


async def test_a_hundred_sessions_share_their_reads() -> None:
    sessions = 100
    async with OpenAIServer(answer=ANSWER, weight_version="9", hold_until=sessions) as server:
        # A read that takes a while, as on a busy server (it waits for an engine step).
        server.weight_info_delay_s = 0.2
        async with started(server) as engine:
            probe_reads = server.weight_info_seen
            results = await asyncio.gather(
                *(engine.generate(ask(f"s{i}/1/0")) for i in range(sessions))
            )
    reads = server.weight_info_seen - probe_reads
    print(f"\n{sessions} concurrent steps: {reads} GET /weight_info ({reads / sessions:.2f}/step)")
    assert all(spans(r) == [(VersionSpan(9, 0, len(ANSWER)),)] for r in results)
    # One read at a time, each shared by every step that finished before it began.
    assert server.weight_info_max_inflight == 1
    assert reads <= 10


# --- other sources --------------------------------------------------------------------


async def test_auto_on_a_server_without_weight_info_labels_with_the_model_name(
    caplog: pytest.LogCaptureFixture,
) -> None:
    # No dev routes: a 404.
    with caplog.at_level(logging.WARNING, "holodesk.daemon.engines.remote_version"):
        async with OpenAIServer(answer=ANSWER) as server, started(server) as engine:
            assert engine.versions.source is VersionSource.MODEL
            result = await engine.generate(ask())
            await engine.generate(ask("s1/2/0"))
    assert not caplog.records  # the usual case is no cause for a warning
    assert server.weight_info_seen == 1  # the start-up probe, never again
    assert spans(result) == [()]
    assert result.policy_label == "tiny"


async def test_the_model_source_reads_the_name_the_answer_gives() -> None:
    # A router that resolves an alias answers with what served it.
    async with (
        OpenAIServer(answer=ANSWER, weight_version="1", served_as="policy-step-6") as server,
        started(server, version_source="model", version_pattern=r"step-(\d+)") as engine,
    ):
        result = await engine.generate(ask())
    assert server.weight_info_seen == 0
    assert result.policy_label == "policy-step-6"
    assert spans(result) == [(VersionSpan(6, 0, len(ANSWER)),)]


async def test_off_asks_nothing_and_stamps_nothing() -> None:
    async with (
        OpenAIServer(answer=ANSWER, weight_version="1") as server,
        started(server, version_source="off") as engine,
    ):
        result = await engine.generate(ask())
    assert server.weight_info_seen == 0
    assert spans(result) == [()]
    assert result.policy_label == ""


# --- a weight_info that fails ---------------------------------------------------------


async def test_an_unreachable_weight_info_fails_no_step_and_warns_once(
    caplog: pytest.LogCaptureFixture,
) -> None:
    # Every step wants a fresh read.
    async with (
        OpenAIServer(answer=ANSWER, weight_version="3") as server,
        started(server, version_fresh_s=0.0) as engine,
    ):
        server.weight_info_script.extend([Reply(status=503)] * 10)
        reads = server.weight_info_seen
        with caplog.at_level(logging.WARNING, "holodesk.daemon.engines.remote_version"):
            results = [await engine.generate(ask(f"s1/{i}/0")) for i in range(4)]
    for result in results:
        assert spans(result) == [()]
        assert result.policy_label == "tiny"  # the served model name
    warnings = [r for r in caplog.records if "weight_info" in r.getMessage()]
    assert len(warnings) == 1
    assert "503" in warnings[0].getMessage()
    # Left alone for retry_s after the failure: no GET per step.
    assert server.weight_info_seen - reads == 1
    assert engine.versions.stats.fallbacks == 4


async def test_weight_info_is_asked_again_after_retry_s_and_stamps_again(
    caplog: pytest.LogCaptureFixture,
) -> None:
    async with (
        OpenAIServer(answer=ANSWER, weight_version="3") as server,
        started(server, version_fresh_s=0.0, version_retry_s=0.0) as engine,
    ):
        server.weight_info_script.append(Reply(status=500))
        with caplog.at_level(logging.INFO, "holodesk.daemon.engines.remote_version"):
            failed = await engine.generate(ask())
            recovered = await engine.generate(ask("s1/2/0"))
    assert spans(failed) == [()]
    assert spans(recovered) == [(VersionSpan(3, 0, len(ANSWER)),)]
    assert any("answers again" in r.getMessage() for r in caplog.records)


async def test_a_weight_info_at_an_address_nobody_listens_on_fails_no_step() -> None:
    with refusing_port() as port:
        async with (
            OpenAIServer(answer=ANSWER) as server,
            started(
                server,
                version_source="weight_info",
                version_url=f"http://127.0.0.1:{port}/weight_info",
            ) as engine,
        ):
            started_at = time.monotonic()
            result = await engine.generate(ask())
            elapsed = time.monotonic() - started_at
    assert result.policy_label == "tiny"
    assert spans(result) == [()]
    assert elapsed < 5.0  # refused at once, and not asked again for retry_s


# --- through ModelPolicy and the daemon -----------------------------------------------


async def test_a_daemon_step_on_a_remote_vllm_says_which_version_made_it() -> None:
    answer = holo({"action": "answer", "content": "done"})
    async with OpenAIServer(models=["holo-test"], answer=answer, weight_version="11") as server:
        policy = ModelPolicy(get_dialect("holo"), OpenAIEngine(server.base_url, "holo-test"))
        async with running_daemon([policy]) as daemon:
            stream = daemon.stream()
            await stream.start("finish", max_steps=3)
            ended = await stream.observe(make_frame("f1", 640, 480))
            await stream.finished_ok()
    generation = ended.ended.generation
    assert generation.policy_version == 11
    assert generation.policy_label == "11"
    (completion,) = generation.completions
    assert [span.version for span in completion.versions] == [11]


async def test_the_version_options_come_from_the_cli() -> None:
    policy = create_policy(
        "openai",
        {
            "base_url": "http://gpu-1:8000/v1",
            "version_source": "weight_info",
            "version_url": "http://gpu-1:9000/weight_info",
            "version_pattern": r"step-(\d+)",
        },
    )
    assert isinstance(policy, ModelPolicy)
    engine = policy.engine
    assert isinstance(engine, OpenAIEngine)
    assert engine.versions.source is VersionSource.WEIGHT_INFO
    assert engine.versions.url == "http://gpu-1:9000/weight_info"
    await policy.close()
    for options, message in [
        ({"version_source": "server"}, "version_source 'server' is not one of"),
        ({"version_pattern": "step-("}, "not a regular expression"),
        ({"version_url": "gpu-1:9000"}, "version_url 'gpu-1:9000' is not an http"),
    ]:
        with pytest.raises(PolicyConfigError, match=message):
            create_policy("openai", {"base_url": "http://gpu-1:8000/v1", **options})
