"""Malformed and hostile input: hypothesis drives every decoder and validator with
random bytes and random field values, atheris fuzzes them with coverage feedback,
and a live daemon takes mutated messages on the wire without an INTERNAL or a hang.

The rule everywhere: the daemon returns, or raises InvalidArgument naming a field.
"""

from __future__ import annotations

import asyncio
import math
import os
import random
import resource
import struct
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

import grpc
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from holodesk.daemon import convert
from holodesk.daemon.actions import ActionStatus, Click
from holodesk.daemon.dialects import dialect_names
from holodesk.daemon.errors import InvalidArgument
from holodesk.daemon.frames import validate_frame
from holodesk.daemon.geometry import Point
from holodesk.daemon.policies.base import Decision
from holodesk.daemon.session.sessions import Session
from holodesk.daemon.session.values import SessionRequest
from holodesk.proto.v1 import action_pb2, agent_pb2, frame_pb2, geometry_pb2
from tests.daemon import fuzz_targets
from tests.daemon.support import (
    GUARD_S,
    holo,
    image_bytes,
    make_frame,
    observation,
    ok_results,
    running_daemon,
    scripted_policy,
    start_request,
)

T = TypeVar("T")
FUZZ = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
uint32 = st.integers(0, 2**32 - 1)
int32 = st.integers(-(2**31), 2**31 - 1)
any_float = st.floats(allow_nan=True, allow_infinity=True, width=32)
text = st.text(max_size=40)
PNG = image_bytes(32, 24)
POLICIES = [scripted_policy([], dialect=name) for name in dialect_names()]


def only_invalid_argument(fn: Callable[..., T], *args: object) -> T | None:
    """fn's result, or None when it raised InvalidArgument (which must name a field)."""
    try:
        return fn(*args)
    except InvalidArgument as exc:
        field = exc.field
    assert field
    return None


# Random bytes -------------------------------------------------------------------------


@FUZZ
@given(st.binary(max_size=4096))
def test_random_bytes_through_every_inbound_decoder(data: bytes) -> None:
    """RunSessionRequest and LocateRequest from random bytes, converted and validated."""
    fuzz_targets.all_targets(data)


VALID = [
    start_request("t").SerializeToString(),
    observation(
        make_frame("f", 32, 24),
        [action_pb2.ActionResult(action_id="a", status=action_pb2.ACTION_STATUS_OK)],
    ).SerializeToString(),
    agent_pb2.LocateRequest(frame=make_frame("l", 32, 24), descriptions=["x"]).SerializeToString(),
]


@FUZZ
@given(
    base=st.sampled_from(VALID),
    flips=st.lists(st.tuples(st.integers(0, 10_000), st.integers(0, 255)), max_size=8),
    cut=st.integers(0, 10_000),
)
def test_mutated_valid_messages(base: bytes, flips: list[tuple[int, int]], cut: int) -> None:
    """Valid messages with bytes overwritten and tails cut: deep into the converters
    (real PNG headers with corrupted fields), not just the protobuf parser."""
    data = bytearray(base)
    for position, value in flips:
        data[position % len(data)] = value
    fuzz_targets.all_targets(bytes(data[: max(1, cut % (len(data) + 1))]))


@FUZZ
@given(
    st.binary(max_size=2048),
    st.integers(0, 65535),
    st.integers(0, 65535),
    st.integers(0, 255),
    st.booleans(),
)
def test_validate_frame_with_random_image_bytes(
    data: bytes, width: int, height: int, encoding: int, real_header: bool
) -> None:
    """Any bytes, any declared size and encoding; also a real PNG header with any body."""
    body = PNG[:64] + data if real_header else data
    fuzz_targets.frame_bytes(struct.pack("<HHB", width, height, encoding) + body)


# Random field values ------------------------------------------------------------------

frames = st.builds(
    frame_pb2.Frame,
    frame_id=text,
    size=st.builds(geometry_pb2.Size, width=uint32, height=uint32),
    encoding=st.integers(0, 2**31 - 1),
    data=st.one_of(st.binary(max_size=256), st.just(PNG)),
    display_id=text,
    source=st.builds(geometry_pb2.Rect, x=int32, y=int32, width=uint32, height=uint32),
    scale_factor=any_float,
)


@FUZZ
@given(frames)
def test_frames_with_random_field_values(frame: frame_pb2.Frame) -> None:
    """NaN, infinite or negative scales, zero or 4-billion-pixel sizes, unknown encodings:
    frame_from_pb then validate_frame, InvalidArgument or a usable frame."""
    decoded = only_invalid_argument(convert.frame_from_pb, frame, "frame")
    if decoded is not None:
        assert decoded.scale_factor > 0
        assert math.isfinite(decoded.scale_factor)
        only_invalid_argument(validate_frame, decoded, fuzz_targets.LIMITS, "frame")


displays = st.builds(
    geometry_pb2.Display,
    display_id=st.sampled_from(["", "a", "b"]),
    bounds=st.builds(geometry_pb2.Rect, x=int32, y=int32, width=uint32, height=uint32),
    scale_factor=any_float,
    primary=st.booleans(),
)


@FUZZ
@given(
    task=text,
    displays=st.lists(displays, max_size=4),
    encodings=st.lists(st.integers(0, 2**31 - 1), max_size=4),
    max_steps=uint32,
    token=text,
)
def test_session_starts_with_random_field_values(
    task: str,
    displays: list[geometry_pb2.Display],
    encodings: list[int],
    max_steps: int,
    token: str,
) -> None:
    """Duplicate display ids, unknown encodings, degenerate or NaN geometry: InvalidArgument,
    or a request from which every built-in dialect computes a frame spec."""
    start = agent_pb2.SessionStart(
        task=task,
        displays=displays,
        encodings=[frame_pb2.ImageEncoding.ValueType(e) for e in encodings],
        max_steps=max_steps,
        resume_token=token,
    )
    request = only_invalid_argument(convert.session_request_from_pb, start)
    if request is not None:
        assert isinstance(request, SessionRequest)
        for display in request.displays:
            assert math.isfinite(display.scale_factor)
            assert display.scale_factor > 0
        for policy in POLICIES:
            spec = policy.frame_spec(request.encodings, request.primary_screen())
            assert spec.max_width >= 0
            assert spec.max_height >= 0


results = st.builds(
    action_pb2.ActionResult,
    action_id=st.sampled_from(["", "s-1", "s-2", "s-3", "other"]),
    status=st.integers(0, 2**31 - 1),
    error=text,
    duration_ms=uint32,
)


@FUZZ
@given(st.lists(results, max_size=5), st.booleans())
def test_results_with_random_ids_and_statuses_against_a_session(
    reported: list[action_pb2.ActionResult], resuming: bool
) -> None:
    """Whatever results arrive for a pending batch (wrong ids, repeats, unknown statuses,
    NOT_DELIVERED outside a resume): recorded exactly, or InvalidArgument, and on
    InvalidArgument nothing was recorded."""
    session = Session(SessionRequest(task="t"), policy_name="p", max_steps=5, history_frames=1)
    session.session_id = "s"
    session.accept_frame(convert.frame_from_pb(make_frame("f", 32, 24), "frame"), "frame")
    session.record_decision(Decision((Click(Point(1, 1)), Click(Point(2, 2)))))
    if resuming:
        session.detach()
        session.attach("fresh")
    try:
        session.accept_results(convert.results_from_pb(reported, "results"), "results")
    except InvalidArgument as exc:
        field = exc.field
    else:
        assert sorted(session.executed) == ["s-1", "s-2"]
        if not resuming:
            assert ActionStatus.NOT_DELIVERED not in {r.status for r in session.executed.values()}
        return
    assert field.startswith("results")
    assert session.executed == {}
    assert session.pending_ids == ("s-1", "s-2")


# On the wire, against a live daemon ------------------------------------------------------


async def test_hostile_messages_on_the_wire_never_crash_the_daemon() -> None:
    """300 streams, each opened with a mutated or random message sent as raw bytes: every
    one ends with a precise status (never INTERNAL or UNKNOWN), and afterwards a proper
    session still runs to its end."""
    rng = random.Random(20260601)
    valid_first = [
        start_request("t").SerializeToString(),
        observation(make_frame("f", 32, 24)).SerializeToString(),
    ]
    payloads: list[bytes] = []
    for _ in range(300):
        if rng.random() < 0.3:
            payloads.append(rng.randbytes(rng.randint(0, 200)))
            continue
        data = bytearray(rng.choice(valid_first))
        for _ in range(rng.randint(1, 6)):
            data[rng.randrange(len(data))] = rng.randrange(256)
        payloads.append(bytes(data[: rng.randint(1, len(data))]))

    allowed = {
        grpc.StatusCode.OK,
        grpc.StatusCode.INVALID_ARGUMENT,
        grpc.StatusCode.FAILED_PRECONDITION,
        grpc.StatusCode.NOT_FOUND,
    }
    click = holo({"action": "click", "x": 1, "y": 1})
    answer = holo({"action": "answer", "content": "fine"})
    async with running_daemon([scripted_policy([click, answer])]) as daemon:
        raw = daemon.channel.stream_stream("/holodesk.v1.AgentService/RunSession")

        async def hostile(payload: bytes) -> grpc.StatusCode:
            call = raw()
            await call.write(payload)
            await call.done_writing()
            try:
                async for _ in call:
                    pass
            except grpc.aio.AioRpcError as exc:
                return exc.code()
            return grpc.StatusCode.OK

        codes = await asyncio.wait_for(asyncio.gather(*map(hostile, payloads)), GUARD_S * 2)
        assert set(codes) <= allowed, set(codes) - allowed
        assert grpc.StatusCode.INVALID_ARGUMENT in codes
        await asyncio.wait_for(daemon.running.registry.wait_empty(), GUARD_S)

        stream = daemon.stream()
        await stream.start()
        step = (await stream.observe(make_frame("ok"))).actions
        ended = await stream.observe(make_frame("ok2"), ok_results(step))
        assert ended.ended.outcome == agent_pb2.SESSION_OUTCOME_SUCCEEDED


async def test_undecodable_messages_are_invalid_argument_for_unary_and_streams() -> None:
    """Bytes that are not a protobuf message of the method's type: INVALID_ARGUMENT
    naming the request (gRPC alone would say UNKNOWN or INTERNAL)."""
    garbage = b"\xff\xff\xff\x0f\x08"
    async with running_daemon([scripted_policy([])]) as daemon:
        locate = daemon.channel.unary_unary("/holodesk.v1.AgentService/Locate")
        with pytest.raises(grpc.aio.AioRpcError) as unary:
            await locate(garbage)
        assert unary.value.code() == grpc.StatusCode.INVALID_ARGUMENT
        assert "not a valid protobuf message" in (unary.value.details() or "")

        call = daemon.channel.stream_stream("/holodesk.v1.AgentService/RunSession")()
        await call.write(start_request("t").SerializeToString())
        await call.read()
        await call.write(garbage)
        with pytest.raises(grpc.aio.AioRpcError) as stream:
            await call.read()
        assert stream.value.code() == grpc.StatusCode.INVALID_ARGUMENT
        assert "RunSessionRequest" in (stream.value.details() or "")


# Coverage-guided ------------------------------------------------------------------------


def test_atheris_finds_no_crash_in_the_decoders(tmp_path: Path) -> None:
    """libFuzzer via atheris, seeded with valid messages, 50k runs over the same
    targets; a crash prints the input and fails here."""
    pytest.importorskip("atheris", reason="atheris has wheels for Linux x86_64 only")
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    for index, data in enumerate(VALID):
        (corpus / f"seed{index}").write_bytes(data)
    root = Path(__file__).resolve().parents[2]
    # libFuzzer's RSS limit reads the process's peak RSS, which Linux carries over a
    # fork and exec: the child starts at this test process's peak (2.2 GB late in a
    # full run, after in-process vLLM tests), past libFuzzer's 2 GB default. Give the
    # targets their 2 GB on top of what the child inherits.
    inherited_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "tests.daemon.atheris_fuzz",
            str(corpus),
            "-runs=50000",
            "-seed=1",
            "-max_len=4096",
            f"-rss_limit_mb={inherited_mb + 2048}",
            f"-artifact_prefix={tmp_path}{os.sep}",
        ],
        cwd=root,
        capture_output=True,
        text=True,
        timeout=GUARD_S * 4,
        check=False,
    )
    assert result.returncode == 0, result.stderr[-4000:]
    assert "Done 50000 runs" in result.stderr
