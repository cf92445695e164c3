"""Whole RunSession streams against a real grpc.aio daemon on 127.0.0.1:0."""

from __future__ import annotations

import asyncio

import grpc
import pytest

from holodesk.daemon.policies.base import Decision
from holodesk.daemon.steps import StepContext
from holodesk.proto.v1 import action_pb2, agent_pb2, frame_pb2, geometry_pb2
from tests.daemon.support import (
    GUARD_S,
    RecordingPolicy,
    holo,
    make_frame,
    ok_results,
    running_daemon,
    scripted_policy,
)


async def test_full_scripted_session_maps_coordinates_into_frame_pixels() -> None:
    policy = scripted_policy(
        [
            holo({"action": "click_element", "element": "box", "x": 500, "y": 250}),
            holo({"action": "write_element_abs", "content": "héllo ✓", "x": 100, "y": 900}),
            holo({"action": "hotkey", "keys": "ctrl+s"}),
            holo({"action": "answer", "content": "saved"}, thought="all done"),
        ]
    )
    async with running_daemon([policy]) as daemon:
        stream = daemon.stream()
        started = await stream.start("save the file", max_steps=10)
        assert started.session_id
        assert started.resume_token
        assert started.policy == "scripted"
        assert started.max_steps == 10
        assert started.frame_spec.encoding == frame_pb2.IMAGE_ENCODING_PNG
        assert started.frame_spec.max_width == 1920
        assert started.frame_spec.max_bytes == 16 * 1024 * 1024

        # Step 1: holo normalizes to 0-1000, so (500, 250) is the middle, a quarter down.
        first = await stream.observe(make_frame("f1", 1280, 720, fmt="JPEG"))
        assert first.actions.step == 1
        assert first.actions.thought == "thinking"
        (click,) = first.actions.actions
        assert click.frame_id == "f1"
        assert click.WhichOneof("kind") == "click"
        assert (click.click.point.x, click.click.point.y) == (640.0, 180.0)
        assert click.click.button == action_pb2.MOUSE_BUTTON_LEFT

        # Step 2 on an odd-sized frame: write = click then type, exact fractional pixels.
        second = await stream.observe(make_frame("f2", 1001, 777), ok_results(first.actions))
        press, typed = second.actions.actions
        assert press.frame_id == "f2"
        assert press.click.point.x == pytest.approx(100.1)
        assert press.click.point.y == pytest.approx(699.3)
        assert typed.type_text.text == "héllo ✓"
        assert typed.frame_id == ""  # no coordinates, no frame

        third = await stream.observe(make_frame("f3"), ok_results(second.actions))
        assert list(third.actions.actions[0].key_chord.keys) == ["ctrl", "s"]

        ids = {a.action_id for r in (first, second, third) for a in r.actions.actions}
        assert len(ids) == 4  # unique across the session

        last = await stream.observe(make_frame("f4"), ok_results(third.actions))
        assert last.ended.outcome == agent_pb2.SESSION_OUTCOME_SUCCEEDED
        assert last.ended.answer == "saved"
        assert last.ended.steps == 4
        await stream.finished_ok()
    assert len(daemon.running.registry) == 0


async def test_done_after_actions_waits_for_their_results() -> None:
    step = holo({"action": "click", "x": 10, "y": 10})
    batch = '{"thought": "t", "actions": [{"action": "click", "x": 10, "y": 10},'
    batch += ' {"action": "answer", "content": "ok"}]}'
    async with running_daemon([scripted_policy([step, batch])]) as daemon:
        stream = daemon.stream()
        await stream.start()
        first = await stream.observe(make_frame("a"))
        second = await stream.observe(make_frame("b"), ok_results(first.actions))
        # The click goes out first; done is not sent as an action.
        kinds = [a.WhichOneof("kind") for a in second.actions.actions]
        assert kinds == ["click"]
        # Its results may come without a frame; then the session ends.
        ended = await stream.observe(None, ok_results(second.actions))
        assert ended.ended.outcome == agent_pb2.SESSION_OUTCOME_SUCCEEDED
        assert ended.ended.answer == "ok"
        await stream.finished_ok()


async def test_fail_action_ends_the_session_failed() -> None:
    policy = scripted_policy([holo({"action": "fail", "reason": "no such button"})])
    async with running_daemon([policy]) as daemon:
        stream = daemon.stream()
        await stream.start()
        ended = await stream.observe(make_frame("f1"))
        assert ended.ended.outcome == agent_pb2.SESSION_OUTCOME_FAILED
        assert ended.ended.reason == "no such button"
        assert ended.ended.steps == 1
        await stream.finished_ok()


async def test_unparseable_outputs_are_retried_then_the_session_fails_cleanly() -> None:
    outputs = ["I think I should click", '{"thought": "x"}', holo({"action": "fly"})]
    policy = scripted_policy(outputs)
    async with running_daemon([policy]) as daemon:
        stream = daemon.stream()
        await stream.start()
        ended = await stream.observe(make_frame("f1"))
        assert ended.ended.outcome == agent_pb2.SESSION_OUTCOME_FAILED
        assert "unparseable after 3 attempt(s)" in ended.ended.reason
        assert "unknown action 'fly'" in ended.ended.reason
        await stream.finished_ok()
    engine = policy.engine
    assert len(engine.requests) == 3  # type: ignore[attr-defined]
    retry = engine.requests[1]  # type: ignore[attr-defined]
    assert [m.role for m in retry.messages][-2:] == ["assistant", "user"]
    assert "no JSON object" in retry.messages[-1].text


async def test_a_parse_retry_that_succeeds_continues_the_session() -> None:
    outputs = ["{not json", holo({"action": "wait", "seconds": 1})]
    async with running_daemon([scripted_policy(outputs)]) as daemon:
        stream = daemon.stream()
        await stream.start()
        response = await stream.observe(make_frame("f1"))
        assert response.actions.actions[0].wait.duration_ms == 1000


async def test_step_limit_ends_the_session() -> None:
    click = holo({"action": "click", "x": 1, "y": 1})
    async with running_daemon([scripted_policy([click] * 5)], max_steps=2) as daemon:
        stream = daemon.stream()
        started = await stream.start(max_steps=50)  # the daemon's own limit wins
        assert started.max_steps == 2
        first = await stream.observe(make_frame("1"))
        second = await stream.observe(make_frame("2"), ok_results(first.actions))
        assert second.actions.step == 2
        ended = await stream.observe(make_frame("3"), ok_results(second.actions))
        assert ended.ended.outcome == agent_pb2.SESSION_OUTCOME_STEP_LIMIT
        assert ended.ended.steps == 2
        assert "2 steps" in ended.ended.reason


async def test_client_cancel_ends_the_session_cancelled() -> None:
    async with running_daemon([scripted_policy([])]) as daemon:
        stream = daemon.stream()
        await stream.start()
        await stream.send(
            agent_pb2.RunSessionRequest(cancel=agent_pb2.CancelSession(reason="user pressed stop"))
        )
        ended = await stream.recv()
        assert ended.ended.outcome == agent_pb2.SESSION_OUTCOME_CANCELLED
        assert ended.ended.reason == "user pressed stop"
        await stream.finished_ok()


async def test_client_cancel_while_the_policy_thinks_aborts_it() -> None:
    policy = RecordingPolicy([], block=True)
    async with running_daemon([policy]) as daemon:
        stream = daemon.stream()
        started = await stream.start()
        await stream.send(
            agent_pb2.RunSessionRequest(observation=agent_pb2.Observation(frame=make_frame("f")))
        )
        await asyncio.wait_for(policy.thinking.wait(), GUARD_S)
        await stream.send(agent_pb2.RunSessionRequest(cancel=agent_pb2.CancelSession()))
        ended = await stream.recv()
        assert ended.ended.outcome == agent_pb2.SESSION_OUTCOME_CANCELLED
        assert ended.ended.reason == "cancelled by the client"
        assert started.session_id in policy.aborted


async def test_disconnect_aborts_the_policy_and_removes_the_session() -> None:
    """With resume disabled (--resume-window-s 0) a dropped stream ends its session."""
    policy = RecordingPolicy([], block=True)
    async with running_daemon([policy], resume_window_s=0) as daemon:
        stream = daemon.stream()
        started = await stream.start()
        await stream.send(
            agent_pb2.RunSessionRequest(observation=agent_pb2.Observation(frame=make_frame("f")))
        )
        await asyncio.wait_for(policy.thinking.wait(), GUARD_S)
        assert len(daemon.running.registry) == 1
        stream.call.cancel()  # the client goes away mid-step
        await asyncio.wait_for(policy.abort_seen.wait(), GUARD_S)
        await asyncio.wait_for(daemon.running.registry.wait_empty(), GUARD_S)
        assert policy.aborted == [started.session_id]


async def test_half_close_before_the_end_cancels_the_session() -> None:
    async with running_daemon([scripted_policy([])]) as daemon:
        stream = daemon.stream()
        await stream.start()
        await stream.call.done_writing()
        ended = await stream.recv()
        assert ended.ended.outcome == agent_pb2.SESSION_OUTCOME_CANCELLED
        assert "closed its stream" in ended.ended.reason
        await asyncio.wait_for(daemon.running.registry.wait_empty(), GUARD_S)


async def test_ask_user_goes_to_the_client_and_the_reply_reaches_the_policy() -> None:
    outputs = [
        holo({"action": "ask_user", "question": "Which account?"}),
        holo({"action": "answer", "content": "done"}),
    ]
    policy = scripted_policy(outputs)
    async with running_daemon([policy]) as daemon:
        stream = daemon.stream()
        await stream.start()
        asked = await stream.observe(make_frame("1"))
        assert asked.actions.actions[0].ask_user.question == "Which account?"
        ended = await stream.observe(make_frame("2"), ok_results(asked.actions), "the work one")
        assert ended.ended.outcome == agent_pb2.SESSION_OUTCOME_SUCCEEDED
    prompt = policy.engine.requests[-1].messages[-1].text  # type: ignore[attr-defined]
    assert "the work one" in prompt
    assert "ask_user: Which account?" in prompt


async def test_the_prompt_keeps_the_last_frames_and_earlier_actions() -> None:
    click = holo({"action": "click", "x": 500, "y": 500}, note="remember 7")
    policy = scripted_policy([click] * 5)
    async with running_daemon([policy]) as daemon:
        stream = daemon.stream()
        await stream.start("count")
        response = await stream.observe(make_frame("0", 640, 480))
        for i in range(1, 5):
            response = await stream.observe(
                make_frame(str(i), 640, 480), ok_results(response.actions)
            )
    last = policy.engine.requests[-1]  # type: ignore[attr-defined]
    user = last.messages[-1]
    # holo shows the newest screenshots, 3 on average (step 5: those of steps 4 and 5).
    shown = min(policy.history_frames, policy.dialect.spec.images_shown(5))
    assert shown == 2
    assert len(user.images) == shown
    assert "<observation step=5>" in user.text
    assert f"<observation step={5 - shown + 1}>" in user.text
    assert f"<observation step={5 - shown}>" not in user.text
    # Earlier steps are shown to the model in its own coordinates (0-1000).
    assert "step 1: click at (500, 500) -> ok. note: remember 7" in user.text
    assert last.json_schema is not None


async def test_locate_maps_the_answer_into_frame_pixels() -> None:
    policy = scripted_policy(['{"x": 250, "y": 750}'])
    async with running_daemon([policy]) as daemon:
        response = await daemon.agent.Locate(
            agent_pb2.LocateRequest(
                frame=make_frame("img", 800, 600), descriptions=["OK", "Cancel"]
            )
        )
    assert [loc.description for loc in response.locations] == ["OK", "Cancel"]
    for location in response.locations:
        assert location.found
        assert (location.point.x, location.point.y) == (200.0, 450.0)


async def test_locate_rejects_a_bad_request() -> None:
    async with running_daemon([scripted_policy([])]) as daemon:
        with pytest.raises(grpc.aio.AioRpcError) as caught:
            await daemon.agent.Locate(agent_pb2.LocateRequest(frame=make_frame("img")))
    assert caught.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert "descriptions" in (caught.value.details() or "")


class IdlePolicy(RecordingPolicy):
    """Decides nothing at all on its first step (a policy that just waits)."""

    async def decide(self, context: StepContext) -> Decision:
        if context.step == 1:
            return Decision(actions=(), thought="nothing to do yet")
        return await super().decide(context)


async def test_an_empty_decision_still_asks_for_the_next_frame() -> None:
    policy = IdlePolicy([holo({"action": "answer", "content": "x"})] * 2)
    async with running_daemon([policy]) as daemon:
        stream = daemon.stream()
        await stream.start()
        idle = await stream.observe(make_frame("1"))
        assert idle.WhichOneof("event") == "actions"
        assert not idle.actions.actions
        assert idle.actions.thought == "nothing to do yet"
        ended = await stream.observe(make_frame("2"))
        assert ended.ended.outcome == agent_pb2.SESSION_OUTCOME_SUCCEEDED
        assert ended.ended.steps == 2


@pytest.mark.parametrize(
    ("primary_size", "expected_box"),
    [
        # Holotron (Nemotron VL) sees 2560x1440 as a 4x2 grid of 512 px tiles (2048x1024):
        # the client is asked for no more than that.
        ((2560, 1440), (2048, 1024)),
        # 1920x1080 is within 1.2x of its grid image: asked for as it is, so the text is
        # resampled once (by the daemon), not twice.
        ((1920, 1080), (1920, 1080)),
    ],
)
async def test_frame_spec_follows_what_the_model_sees_of_the_primary_display(
    primary_size: tuple[int, int], expected_box: tuple[int, int]
) -> None:
    policy = scripted_policy([holo({"action": "answer", "content": ""})], dialect="holotron")
    secondary = geometry_pb2.Display(
        display_id="left", bounds=geometry_pb2.Rect(x=-3840, y=0, width=3840, height=2160)
    )
    width, height = primary_size
    primary = geometry_pb2.Display(
        display_id="main",
        bounds=geometry_pb2.Rect(x=0, y=0, width=width, height=height),
        primary=True,
    )
    async with running_daemon([policy]) as daemon:
        started = await daemon.stream().start("look", displays=[secondary, primary])
    # The primary display's box, not the 4K secondary's.
    assert (started.frame_spec.max_width, started.frame_spec.max_height) == expected_box
