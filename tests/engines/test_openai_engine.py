"""OpenAIEngine against a real HTTP server on loopback (tests/support/openai_server.py)."""

from __future__ import annotations

import asyncio
import base64
import socket
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import UTC, datetime
from typing import Any

import pytest

from holodesk.daemon.dialects import get_dialect
from holodesk.daemon.engines.base import (
    ChatMessage,
    Engine,
    EngineError,
    GenerationRequest,
    ImagePart,
    SamplingParams,
    TextPart,
)
from holodesk.daemon.engines.http_retry import RetryPolicy, parse_retry_after
from holodesk.daemon.engines.openai_engine import OpenAIEngine
from holodesk.daemon.policies.model import ModelPolicy
from holodesk.daemon.policies.registry import PolicyConfigError, create_policy
from holodesk.proto.v1 import agent_pb2
from tests.daemon.support import holo, image_bytes, make_frame, ok_results, running_daemon
from tests.support.openai_server import GUARD_S, Drop, Hang, OpenAIServer, Reply


class Pauses:
    """The engine's sleep: records each retry pause and waits no time."""

    def __init__(self) -> None:
        self.delays: list[float] = []

    async def __call__(self, seconds: float) -> None:
        self.delays.append(seconds)
        await asyncio.sleep(0)


def request(request_id: str = "s1/1/0", *, image: bool = False, **kwargs: Any) -> GenerationRequest:
    parts: tuple[TextPart | ImagePart, ...] = (TextPart("what now?"),)
    if image:
        png = image_bytes(64, 48)
        parts = (TextPart("look:"), ImagePart(png, "image/png", 64, 48), TextPart("what now?"))
    messages = (
        ChatMessage("system", (TextPart("You drive a desktop."),)),
        ChatMessage("user", parts),
    )
    return GenerationRequest(request_id, messages, **kwargs)


@asynccontextmanager
async def started(server: OpenAIServer, **kwargs: Any) -> AsyncIterator[OpenAIEngine]:
    kwargs.setdefault("sleep", Pauses())
    engine = OpenAIEngine(server.base_url, kwargs.pop("model", "tiny"), **kwargs)
    await engine.start()
    try:
        yield engine
    finally:
        await engine.close()


def unused_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


# --- the request ---------------------------------------------------------------------------


async def test_body_carries_images_as_data_urls_sampling_and_the_schema(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("HOLODESK_TEST_KEY", "sk-test")
    schema = get_dialect("holo").step_schema()
    assert schema is not None
    async with (
        OpenAIServer(answer='{"ok": true}', api_key="sk-test") as server,
        started(server, api_key_env="HOLODESK_TEST_KEY", extra_body={"top_k": 5}) as engine,
    ):
        assert isinstance(engine, Engine)
        sampling = SamplingParams(max_tokens=300, temperature=0.2, top_p=0.9, seed=7)
        result = await engine.generate(request(image=True, sampling=sampling, json_schema=schema))
    assert (result.text, result.prompt_tokens, result.completion_tokens) == ('{"ok": true}', 42, 7)
    (seen,) = server.seen
    body = seen.body
    assert body["model"] == "tiny"
    assert (body["max_tokens"], body["temperature"], body["top_p"], body["seed"]) == (
        300,
        0.2,
        0.9,
        7,
    )
    assert body["top_k"] == 5
    assert body["stream"] is False
    system, user = body["messages"]
    assert system == {"role": "system", "content": "You drive a desktop."}
    assert user["role"] == "user"
    kinds = [part["type"] for part in user["content"]]
    assert kinds == ["text", "image_url", "text"]
    url = user["content"][1]["image_url"]["url"]
    prefix = "data:image/png;base64,"
    assert url.startswith(prefix)
    assert base64.b64decode(url[len(prefix) :]) == image_bytes(64, 48)
    assert body["response_format"] == {
        "type": "json_schema",
        "json_schema": {"name": schema["title"], "schema": schema, "strict": True},
    }
    assert "guided_json" not in body
    assert seen.headers["authorization"] == "Bearer sk-test"
    assert seen.headers["x-request-id"] == "s1/1/0#0"


async def test_guided_json_for_older_vllm_and_no_schema_when_asked() -> None:
    schema = {"title": "x y", "type": "object"}
    async with OpenAIServer() as server:
        async with started(server, structured_output="guided_json") as engine:
            await engine.generate(request(json_schema=schema))
        async with started(server, structured_output="none") as engine:
            await engine.generate(request(json_schema=schema))
    guided, plain = (s.body for s in server.seen)
    assert guided["guided_json"] == schema
    assert "response_format" not in guided
    assert "guided_json" not in plain
    assert "response_format" not in plain
    assert "seed" not in plain  # SamplingParams.seed is None by default


# --- retries -------------------------------------------------------------------------------


async def test_429_and_503_are_retried_with_backoff_honouring_retry_after() -> None:
    script = [Reply(429, error="slow down", headers={"Retry-After": "2"}), Reply(503), Reply()]
    pauses = Pauses()
    async with (
        OpenAIServer(script=script) as server,
        started(server, sleep=pauses, backoff_s=0.4) as engine,
    ):
        result = await engine.generate(request())
    assert result.text == "ok"
    assert len(server.seen) == 3
    assert [s.headers["x-request-id"] for s in server.seen] == ["s1/1/0#0", "s1/1/0#1", "s1/1/0#2"]
    retry_after, backoff = pauses.delays
    assert retry_after == 2.0
    # Second retry: ceiling 0.4 * 2 = 0.8, half of it fixed, half jitter.
    assert 0.4 <= backoff <= 0.8


async def test_retry_after_is_really_waited() -> None:
    script = [Reply(429, headers={"Retry-After": "1"}), Reply()]
    async with (
        OpenAIServer(script=script) as server,
        started(server, sleep=asyncio.sleep) as engine,
    ):
        await engine.generate(request())
    first, second = server.seen
    # The retry left only after the server's answer plus the pause, so this lower
    # bound holds on any machine, however slow.
    assert second.at - first.at >= 1.0 - 1e-3


async def test_a_retry_after_longer_than_the_cap_fails_at_once() -> None:
    script = [Reply(429, error="come back tomorrow", headers={"Retry-After": "86400"})]
    pauses = Pauses()
    async with OpenAIServer(script=script) as server, started(server, sleep=pauses) as engine:
        with pytest.raises(EngineError, match=r"come back tomorrow.*retry after 86400 s"):
            await engine.generate(request())
    assert len(server.seen) == 1
    assert pauses.delays == []


async def test_other_4xx_are_not_retried_and_the_server_message_surfaces() -> None:
    script = [Reply(400, error="max_tokens must be at most 4096")]
    pauses = Pauses()
    async with OpenAIServer(script=script) as server, started(server, sleep=pauses) as engine:
        with pytest.raises(EngineError, match=r"answered 400: max_tokens must be at most 4096$"):
            await engine.generate(request())
        # An unknown model is a 404 from the server: also final.
        engine.model = "ghost"
        with pytest.raises(EngineError, match="answered 404: The model `ghost` does not exist"):
            await engine.generate(request("s1/2/0"))
    assert len(server.seen) == 2
    assert pauses.delays == []


async def test_persistent_5xx_gives_up_after_max_retries() -> None:
    script = [Reply(502, error="bad gateway")] * 3
    async with (
        OpenAIServer(script=script) as server,
        started(server, max_retries=2) as engine,
    ):
        with pytest.raises(EngineError, match=r"502: bad gateway \(gave up after 3 attempt\(s\)\)"):
            await engine.generate(request())
    assert len(server.seen) == 3


async def test_timeouts_are_retried_then_raise() -> None:
    async with (
        OpenAIServer(script=[Hang()] * 3) as server,
        started(server, timeout_s=0.2, max_retries=2) as engine,
    ):
        with pytest.raises(EngineError, match=r"ReadTimeout.*gave up after 3 attempt\(s\)"):
            await engine.generate(request())
        # Each timed-out attempt closed its connection: the server saw it go.
        await server.wait_for(lambda: server.disconnects == 3)
    assert len(server.seen) == 3


async def test_a_dropped_connection_is_retried() -> None:
    async with OpenAIServer(script=[Drop()]) as server, started(server) as engine:
        result = await engine.generate(request())
    assert result.text == "ok"
    assert len(server.seen) == 2
    assert server.seen[0].peer != server.seen[1].peer  # a fresh connection for the retry


# --- connections and concurrency -----------------------------------------------------------


async def test_sequential_requests_reuse_one_connection() -> None:
    async with OpenAIServer() as server, started(server) as engine:
        for step in range(10):
            await engine.generate(request(f"s1/{step}/0", image=True))
    assert len(server.seen) == 10
    assert server.models_seen == 1
    assert len(server.connections) == 1  # start()'s GET /models included


async def test_twenty_parallel_requests_are_in_flight_together() -> None:
    def echo(body: dict[str, Any], headers: Any) -> str:
        return str(headers["X-Request-Id"])

    # The server answers none until all 20 are in flight: a client that
    # serialized requests would never get an answer.
    async with OpenAIServer(answer=echo, hold_until=20) as server, started(server) as engine:
        ids = [f"s{n}/1/0" for n in range(20)]
        results = await asyncio.wait_for(
            asyncio.gather(*(engine.generate(request(i, image=True)) for i in ids)), GUARD_S
        )
    assert [r.text for r in results] == [f"{i}#0" for i in ids]
    assert server.max_inflight == 20
    assert len(server.connections) == 20


async def test_max_connections_caps_the_pool() -> None:
    script = [Reply(text=str(n), delay_s=0.05) for n in range(12)]
    async with (
        OpenAIServer(script=script) as server,
        started(server, max_connections=3) as engine,
    ):
        results = await asyncio.gather(*(engine.generate(request(f"s{n}/1/0")) for n in range(12)))
    assert sorted(int(r.text) for r in results) == list(range(12))
    assert server.max_inflight <= 3
    assert len(server.connections) <= 3


# --- abort and close -----------------------------------------------------------------------


async def test_abort_cancels_the_in_flight_request_and_the_server_sees_it() -> None:
    async with OpenAIServer(script=[Hang()]) as server, started(server) as engine:
        pending = asyncio.create_task(engine.generate(request("s1/3/0")))
        await server.wait_for(lambda: server.inflight == 1)
        await engine.abort("s1/3/0")
        with pytest.raises(EngineError, match="request s1/3/0 was aborted"):
            await asyncio.wait_for(pending, GUARD_S)
        await server.wait_for(lambda: server.disconnects == 1 and server.inflight == 0)
        await engine.abort("s1/3/0")  # nothing left to abort: a no-op
        # The engine goes on serving other requests.
        assert (await engine.generate(request("s1/4/0"))).text == "ok"


async def test_cancelling_the_caller_also_hangs_up() -> None:
    async with OpenAIServer(script=[Hang()]) as server, started(server) as engine:
        pending = asyncio.create_task(engine.generate(request()))
        await server.wait_for(lambda: server.inflight == 1)
        pending.cancel()
        with pytest.raises(asyncio.CancelledError):
            await pending
        await server.wait_for(lambda: server.disconnects == 1)


async def test_close_ends_in_flight_requests_and_refuses_new_ones() -> None:
    async with OpenAIServer(script=[Hang()]) as server:
        engine = OpenAIEngine(server.base_url, "tiny")
        await engine.start()
        pending = asyncio.create_task(engine.generate(request()))
        await server.wait_for(lambda: server.inflight == 1)
        await engine.close()
        with pytest.raises(EngineError, match="aborted"):
            await pending
        with pytest.raises(EngineError, match="closed"):
            await engine.generate(request("s1/2/0"))
        await server.wait_for(lambda: server.disconnects == 1)


# --- start() -------------------------------------------------------------------------------


async def test_start_fails_clearly_for_an_unreachable_url() -> None:
    url = f"http://127.0.0.1:{unused_port()}/v1"
    engine = OpenAIEngine(url, "tiny")
    try:
        with pytest.raises(EngineError, match=rf"cannot reach {url}/models: ConnectError"):
            await engine.start()
    finally:
        await engine.close()


async def test_start_fails_clearly_when_the_model_is_not_served() -> None:
    async with OpenAIServer(models=["other", "another"]) as server:
        engine = OpenAIEngine(server.base_url, "tiny")
        with pytest.raises(EngineError) as info:
            await engine.start()
        assert str(info.value) == (
            f"{server.base_url}/models does not serve 'tiny'; it has ['other', 'another']"
        )
        # Without a model name there is no single model to pick either.
        unnamed = OpenAIEngine(server.base_url)
        with pytest.raises(EngineError, match="name one with the model option"):
            await unnamed.start()
        await engine.close()
        await unnamed.close()


async def test_start_picks_the_only_served_model() -> None:
    async with (
        OpenAIServer(models=["Hcompany/Holotron-12B"]) as server,
        started(server, model=None) as engine,
    ):
        assert engine.model == "Hcompany/Holotron-12B"
        await engine.generate(request())
    assert server.seen[0].body["model"] == "Hcompany/Holotron-12B"


async def test_start_explains_a_wrong_base_url_and_a_wrong_key() -> None:
    async with OpenAIServer(api_key="right") as server:
        root = server.base_url.removesuffix("/v1")
        engine = OpenAIEngine(root, "tiny", api_key="right")
        with pytest.raises(EngineError, match=r"answered 404.*is base_url the API root"):
            await engine.start()
        wrong_key = OpenAIEngine(server.base_url, "tiny", api_key="wrong")
        with pytest.raises(EngineError, match="answered 401: Unauthorized"):
            await wrong_key.start()
        await engine.close()
        await wrong_key.close()


async def test_start_waits_for_a_server_that_is_still_loading() -> None:
    pauses = Pauses()
    async with OpenAIServer() as server:
        server.models_script.extend([Reply(503, error="loading"), Reply(503, error="loading")])
        async with started(server, sleep=pauses, start_timeout_s=GUARD_S) as engine:
            assert engine.model == "tiny"
    assert server.models_seen == 3
    assert len(pauses.delays) == 2


# --- configuration -------------------------------------------------------------------------


def test_bad_settings_are_refused_with_a_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("HOLODESK_UNSET_KEY", raising=False)
    with pytest.raises(ValueError, match="not an http"):
        OpenAIEngine("localhost:8000/v1", "m")
    with pytest.raises(ValueError, match=r"HOLODESK_UNSET_KEY.*unset"):
        OpenAIEngine("http://h/v1", "m", api_key_env="HOLODESK_UNSET_KEY")
    with pytest.raises(ValueError, match="structured_output 'xml' is not one of"):
        OpenAIEngine("http://h/v1", "m", structured_output="xml")
    with pytest.raises(ValueError, match="max_retries must be >= 0"):
        OpenAIEngine("http://h/v1", "m", max_retries=-1)


async def test_the_openai_policy_is_built_from_cli_options() -> None:
    policy = create_policy(
        "openai",
        {
            "base_url": "http://gpu-1:8000/v1/",
            "model": "Hcompany/Holotron-12B",
            "dialect": "holo1.5",
            "timeout_s": "30",
            "max_retries": "5",
            "extra_body": '{"top_k": 1}',
        },
    )
    assert isinstance(policy, ModelPolicy)
    engine = policy.engine
    assert isinstance(engine, OpenAIEngine)
    assert (engine.base_url, engine.model) == ("http://gpu-1:8000/v1", "Hcompany/Holotron-12B")
    assert engine.retry.max_retries == 5
    assert engine.extra_body == {"top_k": 1}
    assert policy.dialect.name == "holo1.5"
    await policy.close()
    for options, message in [
        ({}, "needs base_url"),
        ({"base_url": "http://h/v1", "max_retries": "many"}, "max_retries must be a whole"),
        ({"base_url": "http://h/v1", "extra_body": "[1]"}, "extra_body must be a JSON object"),
        ({"base_url": "http://h/v1", "temperature": "1"}, "has no option"),
    ]:
        with pytest.raises(PolicyConfigError, match=message):
            create_policy("openai", options)


def test_retry_after_parsing_and_backoff_bounds() -> None:
    now = datetime(2026, 3, 1, 12, 0, 0, tzinfo=UTC)
    assert parse_retry_after("3") == 3.0
    assert parse_retry_after("0.5") == 0.5
    assert parse_retry_after("Sun, 01 Mar 2026 12:00:30 GMT", now=now) == 30.0
    assert parse_retry_after("Sun, 01 Mar 2026 11:00:00 GMT", now=now) == 0.0
    assert parse_retry_after("soon") is None
    assert parse_retry_after(None) is None
    policy = RetryPolicy(backoff_s=1.0, backoff_max_s=5.0)
    for retry, ceiling in [(0, 1.0), (1, 2.0), (2, 4.0), (3, 5.0), (10, 5.0)]:
        assert ceiling / 2 <= policy.backoff(retry) <= ceiling
    assert policy.delay(0, 7.0) == 7.0
    assert policy.delay(0, 61.0) is None


# --- through the daemon --------------------------------------------------------------------


async def test_a_daemon_session_on_the_openai_engine_succeeds() -> None:
    script = [
        Reply(text=holo({"action": "click_element", "element": "box", "x": 500, "y": 250})),
        Reply(text=holo({"action": "answer", "content": "clicked"}, thought="done")),
    ]
    async with OpenAIServer(models=["holo-test"], script=script) as server:
        policy = ModelPolicy(get_dialect("holo"), OpenAIEngine(server.base_url, "holo-test"))
        async with running_daemon([policy]) as daemon:
            stream = daemon.stream()
            await stream.start("click the box", max_steps=5)
            first = await stream.observe(make_frame("f1", 1280, 720))
            (click,) = first.actions.actions
            assert (click.click.point.x, click.click.point.y) == (640.0, 180.0)
            assert click.frame_id == "f1"
            ended = await stream.observe(make_frame("f2", 1280, 720), ok_results(first.actions))
            assert ended.ended.outcome == agent_pb2.SESSION_OUTCOME_SUCCEEDED
            assert ended.ended.answer == "clicked"
            await stream.finished_ok()
    assert len(server.seen) == 2
    for seen in server.seen:
        assert seen.body["model"] == "holo-test"
        assert seen.body["response_format"]["type"] == "json_schema"
        user = seen.body["messages"][-1]
        images = [p for p in user["content"] if p["type"] == "image_url"]
        assert images
        assert all(p["image_url"]["url"].startswith("data:image/") for p in images)
    assert len(server.connections) == 1


async def test_a_client_leaving_mid_step_hangs_up_on_the_model_server() -> None:
    async with OpenAIServer(script=[Hang()]) as server:
        policy = ModelPolicy(get_dialect("holo"), OpenAIEngine(server.base_url, "tiny"))
        # Resume off, so the dropped session is removed rather than detached for a resume.
        async with running_daemon([policy], resume_window_s=0) as daemon:
            stream = daemon.stream()
            await stream.start()
            await stream.observe_nowait(make_frame("f1"))
            await server.wait_for(lambda: server.inflight == 1)
            stream.call.cancel()  # the desktop client goes away while the model thinks
            # The daemon aborted the step, and the model server saw its client leave.
            await server.wait_for(lambda: server.disconnects == 1 and server.inflight == 0)
            await asyncio.wait_for(daemon.running.registry.wait_empty(), GUARD_S)
