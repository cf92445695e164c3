"""Prometheus metrics of a real daemon, scraped over HTTP and parsed like Prometheus would."""

from __future__ import annotations

import asyncio
import json
import urllib.request
from pathlib import Path

import grpc
import pytest
from prometheus_client.parser import text_string_to_metric_families

from holodesk.daemon.cli import build_parser, config_from_args
from holodesk.daemon.config import ServerConfig, parse_metrics_address
from holodesk.daemon.generation import StepGeneration
from holodesk.daemon.policies.base import Decision
from holodesk.daemon.policies.model import ModelPolicy
from holodesk.daemon.rpc.metrics_interceptor import DEADLINE_SLACK_S, _code_of
from holodesk.daemon.steps import StepContext
from holodesk.proto.v1 import agent_pb2, control_pb2
from tests.daemon.support import (
    GUARD_S,
    HOLODESKD,
    Daemon,
    RecordingPolicy,
    Stream,
    holo,
    make_frame,
    ok_results,
    running_daemon,
    scripted_policy,
    wait_until,
    write_tokens,
)
from tests.daemon.test_daemon_deltas import HEIGHT, WIDTH, delta, full_frame, noise, patch

CLICK = holo({"action": "click", "x": 500, "y": 500})
ANSWER = holo({"action": "answer", "content": "done"})
Samples = dict[tuple[str, tuple[tuple[str, str], ...]], float]


def _parse(text: str) -> Samples:
    samples: Samples = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            samples[(sample.name, tuple(sorted(sample.labels.items())))] = sample.value
    return samples


def _fetch(url: str) -> str:
    with urllib.request.urlopen(url, timeout=GUARD_S) as response:
        assert response.status == 200
        assert response.headers["Content-Type"].startswith("text/plain")
        return str(response.read().decode())


async def scrape(daemon: Daemon) -> Samples:
    exporter = daemon.running.metrics_exporter
    assert exporter is not None
    return _parse(await asyncio.to_thread(_fetch, exporter.url))


def value(samples: Samples, name: str, **labels: str) -> float:
    """A sample's value; 0 for a labelled series never touched (Prometheus' view too)."""
    return samples.get((name, tuple(sorted(labels.items()))), 0.0)


async def test_three_steps_count_exactly() -> None:
    policy = scripted_policy([CLICK, CLICK, ANSWER])
    async with running_daemon([policy], metrics_address="127.0.0.1:0") as daemon:
        before = await scrape(daemon)
        assert value(before, "holodesk_steps_total", policy="scripted") == 0
        assert value(before, "holodesk_sessions_ended_total", outcome="succeeded") == 0
        assert ("holodesk_sessions_ended_total", (("outcome", "step_limit"),)) in before

        stream = daemon.stream()
        await stream.start()
        frames = [make_frame(f"f{n}", 640 + n, 480) for n in range(3)]
        first = await stream.observe(frames[0])
        during = await scrape(daemon)
        assert value(during, "holodesk_sessions", state="waiting_for_client") == 1
        assert value(during, "holodesk_sessions", state="thinking") == 0
        assert value(during, "holodesk_sessions_started_total") == 1

        second = await stream.observe(frames[1], ok_results(first.actions))
        ended = await stream.observe(frames[2], ok_results(second.actions))
        assert ended.ended.answer == "done"
        await stream.finished_ok()
        await wait_until(lambda: len(daemon.running.registry) == 0, "the session to leave")

        after = await scrape(daemon)
    assert value(after, "holodesk_steps_total", policy="scripted") == 3
    assert value(after, "holodesk_policy_seconds_count", policy="scripted") == 3
    # The third step ended the session: only two Actions messages went out.
    assert value(after, "holodesk_step_latency_seconds_count", policy="scripted") == 2
    assert value(after, "holodesk_frame_bytes_count", rpc="RunSession") == 3
    assert value(after, "holodesk_frame_bytes_sum", rpc="RunSession") == sum(
        len(frame.data) for frame in frames
    )
    assert value(after, "holodesk_sessions_ended_total", outcome="succeeded") == 1
    assert value(after, "holodesk_sessions_ended_total", outcome="cancelled") == 0
    assert all(
        value(after, "holodesk_sessions", state=state) == 0
        for state in ("waiting_for_client", "thinking", "paused", "detached", "ended")
    )
    # No generation reported by a scripted policy: no token series appear.
    assert value(after, "holodesk_prompt_tokens_total", policy="scripted") == 0
    assert not [key for key in after if key[0] == "holodesk_rpc_errors_total"]


async def test_states_follow_a_thinking_then_paused_then_cancelled_session() -> None:
    policy = RecordingPolicy([CLICK], block=True)
    async with running_daemon([policy], metrics_address="127.0.0.1:0") as daemon:
        stream = daemon.stream()
        started = await stream.start()
        await stream.observe_nowait(make_frame("f1"))
        await asyncio.wait_for(policy.thinking.wait(), GUARD_S)
        assert value(await scrape(daemon), "holodesk_sessions", state="thinking") == 1

        await daemon.control.PauseSession(
            control_pb2.PauseSessionRequest(session_id=started.session_id)
        )
        assert value(await scrape(daemon), "holodesk_sessions", state="paused") == 1

        await daemon.control.CancelSession(
            control_pb2.CancelSessionRequest(session_id=started.session_id, reason="operator")
        )
        ended = await stream.recv()
        assert ended.WhichOneof("event") == "ended"
        await wait_until(lambda: len(daemon.running.registry) == 0, "the session to leave")
        samples = await scrape(daemon)
    assert value(samples, "holodesk_sessions_ended_total", outcome="cancelled") == 1
    assert value(samples, "holodesk_sessions", state="paused") == 0
    # The step never finished deciding: no step counted.
    assert value(samples, "holodesk_steps_total", policy="recording") == 0


class GeneratingPolicy(ModelPolicy):
    """A scripted model policy that reports its generation, as engine-backed ones do."""

    def __init__(self) -> None:
        inner = scripted_policy([CLICK, CLICK, ANSWER])
        super().__init__(inner.dialect, inner.engine, name="generating")

    async def decide(self, context: StepContext) -> Decision:
        decision = await super().decide(context)
        generation = StepGeneration(
            messages=(),
            completions=(),
            chosen=None,
            prompt_tokens=1000 + context.step,
            engine_seconds=0.5,
            completion_tokens=20,
        )
        return Decision(decision.actions, decision.thought, generation=generation)


async def test_tokens_and_engine_time_come_from_the_reported_generation() -> None:
    async with running_daemon([GeneratingPolicy()], metrics_address="127.0.0.1:0") as daemon:
        stream = daemon.stream()
        await stream.start()
        first = await stream.observe(make_frame("f1"))
        second = await stream.observe(make_frame("f2"), ok_results(first.actions))
        await stream.observe(make_frame("f3"), ok_results(second.actions))
        samples = await scrape(daemon)
    assert value(samples, "holodesk_prompt_tokens_total", policy="generating") == 1001 + 1002 + 1003
    assert value(samples, "holodesk_completion_tokens_total", policy="generating") == 60
    assert value(samples, "holodesk_engine_seconds_count", policy="generating") == 3
    assert value(samples, "holodesk_engine_seconds_sum", policy="generating") == 1.5
    # 0.5 s lands in the 0.5 bucket (le is inclusive), not in the 0.25 one.
    assert value(samples, "holodesk_engine_seconds_bucket", policy="generating", le="0.5") == 3
    assert value(samples, "holodesk_engine_seconds_bucket", policy="generating", le="0.25") == 0


async def test_errors_are_counted_by_method_and_status_code(tmp_path: Path) -> None:
    tokens = write_tokens(tmp_path, ops="admin")
    policy = scripted_policy([holo({"action": "click", "x": 10, "y": 10})] * 4)
    async with running_daemon(
        [policy], metrics_address="127.0.0.1:0", tokens_file=str(tokens.path)
    ) as daemon:
        with pytest.raises(grpc.aio.AioRpcError) as denied:
            await daemon.control.ListSessions(control_pb2.ListSessionsRequest())
        assert denied.value.code() == grpc.StatusCode.UNAUTHENTICATED
        ok = await daemon.control.ListSessions(
            control_pb2.ListSessionsRequest(), metadata=tokens.metadata("ops")
        )
        assert not ok.sessions
        with pytest.raises(grpc.aio.AioRpcError) as invalid:
            await daemon.agent.Locate(agent_pb2.LocateRequest(), metadata=tokens.metadata("ops"))
        assert invalid.value.code() == grpc.StatusCode.INVALID_ARGUMENT
        frame = make_frame("shot", 320, 200)
        located = await daemon.agent.Locate(
            agent_pb2.LocateRequest(frame=frame, descriptions=["the box"]),
            metadata=tokens.metadata("ops"),
        )
        assert located.locations[0].found
        with pytest.raises(grpc.aio.AioRpcError) as unknown:
            await daemon.channel.unary_unary("/holodesk.v1.Nope/Nothing")(b"")
        assert unknown.value.code() == grpc.StatusCode.UNIMPLEMENTED
        samples = await scrape(daemon)

    errors = {
        (dict(labels)["method"], dict(labels)["code"]): count
        for (name, labels), count in samples.items()
        if name == "holodesk_rpc_errors_total"
    }
    assert errors == {
        ("holodesk.v1.ControlService/ListSessions", "UNAUTHENTICATED"): 1,
        ("holodesk.v1.AgentService/Locate", "INVALID_ARGUMENT"): 1,
        ("unknown", "UNIMPLEMENTED"): 1,
    }
    assert value(samples, "holodesk_locate_calls_total", code="OK") == 1
    assert value(samples, "holodesk_locate_calls_total", code="INVALID_ARGUMENT") == 1
    assert value(samples, "holodesk_locate_seconds_count") == 2
    # The invalid request carried no frame: 0 bytes; the valid one its PNG.
    assert value(samples, "holodesk_frame_bytes_count", rpc="Locate") == 2
    assert value(samples, "holodesk_frame_bytes_sum", rpc="Locate") == len(frame.data)


async def test_a_stream_past_its_deadline_counts_as_deadline_exceeded() -> None:
    policy = RecordingPolicy([CLICK], block=True)
    async with running_daemon([policy], metrics_address="127.0.0.1:0") as daemon:
        stream = Stream(daemon.channel, timeout=1.0)
        await stream.start()
        await stream.observe_nowait(make_frame("f1"))
        assert (await stream.error()).code() == grpc.StatusCode.DEADLINE_EXCEEDED
        method, code = "holodesk.v1.AgentService/RunSession", "DEADLINE_EXCEEDED"

        async def counted() -> float:
            samples = await scrape(daemon)
            return value(samples, "holodesk_rpc_errors_total", method=method, code=code)

        # The server notices the deadline on its own schedule: poll for the count.
        for _ in range(int(GUARD_S / 0.02)):
            if await counted() == 1:
                break
            await asyncio.sleep(0.02)
        assert await counted() == 1


async def test_each_server_counts_on_its_own_registry() -> None:
    one, two = scripted_policy([ANSWER]), scripted_policy([ANSWER])
    async with (
        running_daemon([one], metrics_address="127.0.0.1:0") as first,
        running_daemon([two], metrics_address="127.0.0.1:0") as second,
    ):
        stream = first.stream()
        await stream.start()
        await stream.observe(make_frame("f1"))
        assert first.running.metrics.registry is not second.running.metrics.registry
        assert value(await scrape(first), "holodesk_steps_total", policy="scripted") == 1
        assert value(await scrape(second), "holodesk_steps_total", policy="scripted") == 0


async def test_metrics_are_not_served_without_the_flag() -> None:
    async with running_daemon([scripted_policy([ANSWER])]) as daemon:
        assert daemon.running.metrics_exporter is None
        # Still counted, for an embedding application to expose as it likes.
        stream = daemon.stream()
        await stream.start()
        await stream.observe(make_frame("f1"))
        steps = daemon.running.metrics.registry.get_sample_value(
            "holodesk_steps_total", {"policy": "scripted"}
        )
        assert steps == 1


def test_metrics_address_forms() -> None:
    assert parse_metrics_address("9464") == ("127.0.0.1", 9464)
    assert parse_metrics_address("0.0.0.0:9464") == ("0.0.0.0", 9464)
    assert parse_metrics_address("[::1]:9464") == ("::1", 9464)
    for bad in ("", "localhost", "host:port", "99999", "1.2.3.4:70000"):
        with pytest.raises(ValueError, match="metrics-address"):
            ServerConfig(metrics_address=bad or " ")
    args = build_parser().parse_args(["--metrics-address", "127.0.0.1:9464"])
    assert config_from_args(args).metrics_address == "127.0.0.1:9464"
    assert config_from_args(build_parser().parse_args([])).metrics_address == ""


async def test_a_busy_metrics_port_fails_the_start_with_a_reason() -> None:
    policy = scripted_policy([ANSWER])
    async with running_daemon([policy], metrics_address="127.0.0.1:0") as daemon:
        exporter = daemon.running.metrics_exporter
        assert exporter is not None
        with pytest.raises(OSError, match=f"cannot serve metrics on {exporter.address}"):
            async with running_daemon(
                [scripted_policy([ANSWER])], metrics_address=exporter.address
            ):
                pass


async def test_holodeskd_serves_metrics_where_its_log_says(tmp_path: Path) -> None:
    script = tmp_path / "script.json"
    script.write_text(json.dumps([ANSWER]))
    process = await asyncio.create_subprocess_exec(
        str(HOLODESKD),
        *("--listen", "127.0.0.1:0", "--policy", "scripted", "--script", str(script)),
        *("--metrics-address", "127.0.0.1:0", "--log-format", "json"),
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    assert process.stderr is not None
    try:
        url = ""
        while not url:
            line = await asyncio.wait_for(process.stderr.readline(), GUARD_S)
            assert line, "holodeskd exited before serving metrics"
            entry = json.loads(line)
            if entry["message"].startswith("metrics on "):
                url = entry["message"].removeprefix("metrics on ")
        samples = _parse(await asyncio.to_thread(_fetch, url))
        assert value(samples, "holodesk_sessions_started_total") == 0
        assert value(samples, "holodesk_sessions", state="thinking") == 0
        # What an operator watches on a daemon left running; no doubled series.
        assert value(samples, "process_resident_memory_bytes") > 0
        assert value(samples, "process_open_fds") > 0
        assert not [name for name, _ in samples if name.endswith("_created")]
    finally:
        process.terminate()
        await asyncio.wait_for(process.wait(), GUARD_S)


class _Context:
    def __init__(self, remaining: float | None) -> None:
        self.remaining = remaining

    def code(self) -> None:
        return None

    def time_remaining(self) -> float | None:
        return self.remaining


def test_a_cancel_at_the_deadline_is_a_deadline_not_a_cancel() -> None:
    """The server's deadline starts when it reads the timeout header, after the
    client's: a call the client ran out of time on arrives with a little time left."""
    cancelled = asyncio.CancelledError()
    assert _code_of(_Context(-0.01), cancelled) == "DEADLINE_EXCEEDED"
    assert _code_of(_Context(0.005), cancelled) == "DEADLINE_EXCEEDED"
    assert _code_of(_Context(DEADLINE_SLACK_S + 1.0), cancelled) == "CANCELLED"
    assert _code_of(_Context(None), cancelled) == "CANCELLED"  # no deadline at all


async def test_the_decoded_screens_tiers_and_work_are_exported() -> None:
    """A delta on a full frame misses (its base was decoded from its image), the next
    one finds its base; the screens they rebuilt are held and weigh something."""
    policy = scripted_policy([CLICK, CLICK, ANSWER])
    base = noise(WIDTH, HEIGHT, 1)
    async with running_daemon([policy], metrics_address="127.0.0.1:0") as daemon:
        before = await scrape(daemon)
        assert value(before, "holodesk_decoded_screens", tier="packed") == 0
        assert value(before, "holodesk_decoded_screen_unpacks_total") == 0
        stream = daemon.stream()
        await stream.start()
        step = (await stream.observe(full_frame("f1", base))).actions
        wire = delta("f2", "f1", patch(5, 4, noise(20, 10, 2)))
        step = (await stream.observe(wire, ok_results(step))).actions
        wire = delta("f3", "f2", patch(9, 9, noise(6, 6, 3)))
        ended = (await stream.observe(wire, ok_results(step))).ended
        assert ended.answer == "done"
        after = await scrape(daemon)
    assert value(after, "holodesk_delta_bases_total", found="no") == 1
    assert value(after, "holodesk_delta_bases_total", found="yes") == 1
    assert value(after, "holodesk_decoded_screens", tier="packed") == 2
    assert value(after, "holodesk_decoded_screens_bytes", tier="packed") > 0
    assert value(after, "holodesk_decoded_screens", tier="raw") == 2
    assert value(after, "holodesk_decoded_screens_bytes", tier="raw") == 2 * WIDTH * HEIGHT * 3
