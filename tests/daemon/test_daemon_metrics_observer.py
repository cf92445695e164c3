"""The metrics are an observer of the session event stream (issue 19): what they count
comes from the events a real Session tells its real registry, and from nowhere else.

The end-to-end counts of a real daemon are test_daemon_metrics.py's; here each event
is checked against the series it moves, plus what only a delta frame or a resume
shows over gRPC (a delta is counted by its bytes on the wire, not the screen rebuilt
from it; a resume is counted apart from a start).
"""

from __future__ import annotations

from pathlib import Path

from holodesk.daemon.actions import Wait
from holodesk.daemon.frames import EncodedFrame, ImageEncoding
from holodesk.daemon.generation import StepGeneration
from holodesk.daemon.geometry import Size
from holodesk.daemon.metrics import DaemonMetrics
from holodesk.daemon.policies.base import Decision
from holodesk.daemon.session.registry import SessionRegistry
from holodesk.daemon.session.session_events import ActionsMade, StreamOpened
from holodesk.daemon.session.sessions import Session
from holodesk.daemon.session.values import SessionRequest
from holodesk.proto.v1 import agent_pb2
from tests.daemon.support import (
    RecordingPolicy,
    Stream,
    holo,
    ok_results,
    proxied,
    running_daemon,
    the_session,
    wait_until,
)
from tests.daemon.test_daemon_deltas import HEIGHT, WIDTH, delta, full_frame, noise, patch

SESSION_DIR = Path(__file__).parents[2] / "daemon" / "src" / "holodesk" / "daemon" / "session"
WAIT = holo({"action": "wait", "duration": 0.1})
ANSWER = holo({"action": "answer", "content": "done"})


def sample(metrics: DaemonMetrics, name: str, **labels: str) -> float:
    found = metrics.registry.get_sample_value(name, labels)
    return 0.0 if found is None else found


def watched_session() -> tuple[DaemonMetrics, Session]:
    registry = SessionRegistry()
    metrics = DaemonMetrics()
    metrics.watch(registry)
    metrics.watch(registry)  # watching twice must not count twice
    session = registry.create(
        SessionRequest(task="t"), policy_name="scripted", max_steps=5, history_frames=2
    )
    return metrics, session


def made(decision: Decision, *, sent: bool, step_seconds: float) -> ActionsMade:
    return ActionsMade(
        agent_pb2.Actions(step=1),
        decision,
        (),
        policy_seconds=0.25,
        sent=sent,
        step_seconds=step_seconds,
    )


async def test_each_session_event_moves_its_series() -> None:
    metrics, session = watched_session()
    session.publish(StreamOpened(resumed=False))
    session.publish(StreamOpened(resumed=True))
    session.publish(StreamOpened(resumed=True))
    assert sample(metrics, "holodesk_sessions_started_total") == 1
    assert sample(metrics, "holodesk_sessions_resumed_total") == 2

    frame = EncodedFrame("f1", Size(8, 8), ImageEncoding.PNG, data=b"x" * 100)
    session.accept_frame(frame, "frame", wire_bytes=37)
    session.accept_frame(EncodedFrame("f2", Size(8, 8), ImageEncoding.PNG, data=b"y" * 5), "frame")
    assert sample(metrics, "holodesk_frame_bytes_count", rpc="RunSession") == 2
    assert sample(metrics, "holodesk_frame_bytes_sum", rpc="RunSession") == 37 + 5

    generation = StepGeneration(
        messages=(), completions=(), chosen=None, prompt_tokens=11, completion_tokens=4
    )
    session.publish(made(Decision((Wait(100),), generation=generation), sent=True, step_seconds=2))
    # Never sent (a done with no actions): a decision all the same, but no latency.
    session.publish(made(Decision(()), sent=False, step_seconds=9.0))
    assert sample(metrics, "holodesk_steps_total", policy="scripted") == 2
    assert sample(metrics, "holodesk_policy_seconds_sum", policy="scripted") == 0.5
    assert sample(metrics, "holodesk_step_latency_seconds_count", policy="scripted") == 1
    assert sample(metrics, "holodesk_step_latency_seconds_sum", policy="scripted") == 2.0
    assert sample(metrics, "holodesk_prompt_tokens_total", policy="scripted") == 11
    assert sample(metrics, "holodesk_completion_tokens_total", policy="scripted") == 4
    # No engine time reported: no engine series moves.
    assert sample(metrics, "holodesk_engine_seconds_count", policy="scripted") == 0


def test_no_session_module_counts_anything_itself() -> None:
    """The session code tells events; the metrics module listens. Any session module
    naming it would be the runner calling metrics again."""
    modules = sorted(SESSION_DIR.glob("*.py"))
    assert len(modules) > 10, f"no session modules found in {SESSION_DIR}"
    naming = [m.name for m in modules if "daemon.metrics" in m.read_text(encoding="utf-8")]
    assert naming == []


async def test_a_delta_is_counted_by_its_wire_bytes_and_a_resume_apart_from_a_start() -> None:
    policy = RecordingPolicy([WAIT, WAIT, WAIT, ANSWER])
    async with running_daemon([policy]) as daemon, proxied(daemon) as (proxy, channel):
        metrics = daemon.running.metrics
        stream = Stream(channel)
        started = await stream.start()
        full = full_frame("f1", noise(WIDTH, HEIGHT, 1))
        step = (await stream.observe(full)).actions
        wire = delta("f2", "f1", patch(5, 4, noise(20, 10, 2)))
        step = (await stream.observe(wire, ok_results(step))).actions
        patch_bytes = sum(len(p.data) for p in wire.patches)
        assert sample(metrics, "holodesk_frame_bytes_count", rpc="RunSession") == 2
        assert (
            sample(metrics, "holodesk_frame_bytes_sum", rpc="RunSession")
            == len(full.data) + patch_bytes
        )
        assert sample(metrics, "holodesk_sessions_started_total") == 1

        # Its connection drops while it waits for step 3's frame: a resume follows.
        await proxy.reset_all()
        await wait_until(lambda: not the_session(daemon).attached, "the session to detach")
        again = daemon.stream()
        resumed = await again.start("", resume_token=started.resume_token)
        assert resumed.resumed
        # Step 2's actions ran before the drop: their results come with the fresh frame.
        fresh = full_frame("f3", noise(WIDTH, HEIGHT, 3))
        step = (await again.observe(fresh, ok_results(step))).actions
        ended = await again.observe(full_frame("f4", noise(WIDTH, HEIGHT, 4)), ok_results(step))
        assert ended.ended.outcome == agent_pb2.SESSION_OUTCOME_SUCCEEDED
        await wait_until(lambda: len(daemon.running.registry) == 0, "the session to leave")
        assert sample(metrics, "holodesk_sessions_started_total") == 1
        assert sample(metrics, "holodesk_sessions_resumed_total") == 1
        assert sample(metrics, "holodesk_sessions_ended_total", outcome="succeeded") == 1
        assert sample(metrics, "holodesk_steps_total", policy=policy.name) == 4
        # Every step but the answer went out as an Actions message.
        assert sample(metrics, "holodesk_step_latency_seconds_count", policy=policy.name) == 3
