"""Sessions that keep stepping while a trainer changes the weights under them.

Shared by the weight-update benchmark (bench_weight_update.py) and its CI test
(tests/engines/test_update_under_load.py), so both check the same promises the
same way: a `LoopSession` is a raw RunSession stream that answers every action
with an OK result and sends the next frame at once, until told to stop, and
keeps everything an update could break:

- every action id it received, in order (an id seen twice is an action sent
  twice: `duplicates`);
- how its stream ended before it was told to stop (`ended`: a SessionEnded or a
  stream error; an update must cause neither);
- each step's send and receive times on one monotonic clock, its policy version
  and each completion's version spans, so a caller can tell the steps decided
  before, across and after an update (`Step`, `steps_between`).

Frames are tiny pre-encoded PNGs (the model sees one 512 px tile whatever is
sent), and the dialect (`click_only`, examples/rl_loop/serving.py) holds the
random-weight model to one click per step through structured decoding: every
step parses, so no session ends for its own reasons and any ending is the
update's.
"""

from __future__ import annotations

import asyncio
import io
import itertools
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import grpc
from PIL import Image, ImageDraw

from holodesk.daemon.engines.vllm_engine import VllmEngine
from holodesk.proto.v1 import (
    action_pb2,
    agent_pb2,
    agent_pb2_grpc,
    frame_pb2,
    geometry_pb2,
    trainer_pb2,
    trainer_pb2_grpc,
)

# How long to wait for nearly every session to be generating before updating anyway
# (the response's requests_in_flight says what was).
SETTLE_S = 120.0
# Hang guard for one message (never a timing assertion): a step of 100 sessions on
# two shared cores can take tens of seconds, and an update's pause adds to it.
GUARD_S = 300.0
CHANNEL_OPTIONS = [
    ("grpc.max_send_message_length", 64 * 1024 * 1024),
    ("grpc.max_receive_message_length", 64 * 1024 * 1024),
    ("grpc.use_local_subchannel_pool", 1),
]
MODES = {
    "keep": trainer_pb2.UPDATE_MODE_KEEP,
    "wait": trainer_pb2.UPDATE_MODE_WAIT,
    "abort": trainer_pb2.UPDATE_MODE_ABORT,
}


def tiny_png(seed: int, size: int = 32) -> bytes:
    """A small distinct PNG (a few hundred bytes): the smallest frame that is still
    a real image the daemon decodes and vLLM's processor tiles."""
    image = Image.new("RGB", (size, size), (seed * 53 % 256, seed * 29 % 256, 180))
    ImageDraw.Draw(image).rectangle((4, 4, size // 2, size // 2), fill=(250, 250, 250))
    buffer = io.BytesIO()
    image.save(buffer, format="PNG")
    return buffer.getvalue()


def frame_of(frame_id: str, data: bytes, size: int) -> frame_pb2.Frame:
    return frame_pb2.Frame(
        frame_id=frame_id,
        size=geometry_pb2.Size(width=size, height=size),
        encoding=frame_pb2.IMAGE_ENCODING_PNG,
        data=data,
        source=geometry_pb2.Rect(x=0, y=0, width=size, height=size),
        scale_factor=1.0,
    )


class StreamClosedError(Exception):
    """The daemon ended the stream without a SessionEnded."""


@dataclass(frozen=True)
class Step:
    """One Actions message as this session received it."""

    number: int
    sent: float  # time.monotonic() when the observation asking for it was written
    received: float
    action_ids: tuple[str, ...]
    policy_version: int
    # Each completion's spans as (version, start, end).
    spans: tuple[tuple[tuple[int, int, int], ...], ...]
    prompt_token_ids: int  # how many the generation carried

    @property
    def versions(self) -> set[int]:
        """Every version that sampled a token of any completion of this step."""
        return {span[0] for completion in self.spans for span in completion}


@dataclass
class LoopSession:
    """A session that steps back to back until `stop` is set (see the module doc)."""

    channel: grpc.aio.Channel
    name: str
    frame_size: int = 32
    prompt_token_ids: bool = False
    max_tokens: int | None = None
    recording: agent_pb2.RecordingMode.ValueType = agent_pb2.RECORDING_MODE_OFF
    steps: list[Step] = field(default_factory=list)
    action_ids: list[str] = field(default_factory=list)
    # Why the stream ended before it was told to stop ("" while it runs or after a
    # clean close).
    ended: str = ""
    session_id: str = ""
    recording_id: str = ""
    # Bytes of every Actions message received, serialized (what the wire carried).
    actions_bytes: int = 0
    _call: grpc.aio.StreamStreamCall | None = None
    _frames: tuple[bytes, ...] = ()

    async def start(self, frames: int = 2) -> None:
        """Open the stream; `frames` distinct images to cycle through."""
        seed = sum(self.name.encode())
        self._frames = tuple(tiny_png(seed + i, self.frame_size) for i in range(frames))
        self._call = agent_pb2_grpc.AgentServiceStub(self.channel).RunSession()
        size = self.frame_size
        sampling = agent_pb2.SamplingParams(prompt_token_ids=self.prompt_token_ids)
        if self.max_tokens is not None:
            sampling.max_tokens = self.max_tokens
        start = agent_pb2.SessionStart(
            task=f"click it ({self.name})",
            displays=[
                geometry_pb2.Display(
                    display_id="0",
                    bounds=geometry_pb2.Rect(x=0, y=0, width=size, height=size),
                    scale_factor=1.0,
                    primary=True,
                )
            ],
            sampling=sampling,
            recording=self.recording,
        )
        response = await self._exchange(agent_pb2.RunSessionRequest(start=start))
        if response.WhichOneof("event") != "started":
            raise AssertionError(f"{self.name}: expected started, got {response}")
        self.session_id = response.started.session_id
        self.recording_id = response.started.recording_id

    @property
    def duplicates(self) -> list[str]:
        """Action ids received more than once."""
        return [i for i, n in Counter(self.action_ids).items() if n > 1]

    async def run(self, stop: asyncio.Event, *, max_steps: int | None = None) -> None:
        """Step until `stop` is set (the step in flight then finishes) or `max_steps`
        steps were taken, then half-close and read the stream to its end."""
        pending: list[str] = []
        index = 0
        try:
            while not stop.is_set() and (max_steps is None or len(self.steps) < max_steps):
                observation = agent_pb2.Observation(
                    results=[
                        action_pb2.ActionResult(action_id=a, status=action_pb2.ACTION_STATUS_OK)
                        for a in pending
                    ]
                )
                data = self._frames[index % len(self._frames)]
                observation.frame.CopyFrom(frame_of(f"{self.name}-{index}", data, self.frame_size))
                index += 1
                sent = time.monotonic()
                response = await self._exchange(
                    agent_pb2.RunSessionRequest(observation=observation)
                )
                received = time.monotonic()
                event = response.WhichOneof("event")
                if event == "ended":
                    self.ended = describe_ending(response.ended)
                    return
                if event != "actions":
                    self.ended = f"unexpected {event}"
                    return
                pending = self._keep(response.actions, sent, received)
        except grpc.aio.AioRpcError as error:
            self.ended = f"stream error {error.code().name}: {error.details()}"
            return
        except StreamClosedError as error:
            self.ended = str(error)
            return
        await self._close()

    def _keep(self, actions: agent_pb2.Actions, sent: float, received: float) -> list[str]:
        ids = tuple(a.action_id for a in actions.actions)
        self.action_ids.extend(ids)
        self.actions_bytes += actions.ByteSize()
        generation = actions.generation
        if ids:  # a refresh (no actions) asks for a fresh frame and decides nothing
            self.steps.append(
                Step(
                    actions.step,
                    sent,
                    received,
                    ids,
                    generation.policy_version,
                    tuple(
                        tuple((s.version, s.start, s.end) for s in c.versions)
                        for c in generation.completions
                    ),
                    len(generation.prompt_token_ids),
                )
            )
        return list(ids)

    async def _close(self) -> None:
        """Half-close and read to the end, as a client that stops does."""
        call = self._call
        if call is None:
            return
        self._call = None
        await asyncio.wait_for(call.done_writing(), GUARD_S)
        while True:
            message = await asyncio.wait_for(call.read(), GUARD_S)
            if message is grpc.aio.EOF:
                break
        code = await call.code()
        if code != grpc.StatusCode.OK:
            self.ended = f"closed {code.name}"

    def cancel(self) -> None:
        if self._call is not None:
            self._call.cancel()
            self._call = None

    async def _exchange(self, request: agent_pb2.RunSessionRequest) -> agent_pb2.RunSessionResponse:
        assert self._call is not None, "start() first"
        await asyncio.wait_for(self._call.write(request), GUARD_S)
        response = await asyncio.wait_for(self._call.read(), GUARD_S)
        if response is grpc.aio.EOF:
            raise StreamClosedError(f"{self.name}: the daemon closed the stream")
        assert isinstance(response, agent_pb2.RunSessionResponse)
        return response


def describe_ending(ended: agent_pb2.SessionEnded) -> str:
    """The outcome, its reason, and what the last step's completions were (their
    text and version spans): enough to tell an update's fault from the model's."""
    outcome = agent_pb2.SessionOutcome.Name(ended.outcome)
    completions = [
        f"{c.text[:160]!r} spans {[(s.version, s.start, s.end) for s in c.versions]}"
        for c in ended.generation.completions
    ]
    shown = f"; completions: {'; '.join(completions)}" if completions else ""
    return f"{outcome} at step {ended.steps}: {ended.reason}{shown}"


def steps_between(
    sessions: Sequence[LoopSession], began: float, returned: float
) -> dict[str, list[Step]]:
    """Every session's steps by where they fall against an update that began at
    `began` and returned at `returned` (time.monotonic()): "before" (received
    before it began), "across" (asked before it returned, received after it
    began) and "after" (asked after it returned)."""
    found: dict[str, list[Step]] = {"before": [], "across": [], "after": []}
    for session in sessions:
        for step in session.steps:
            if step.received < began:
                found["before"].append(step)
            elif step.sent >= returned:
                found["after"].append(step)
            else:
                found["across"].append(step)
    return found


@dataclass(frozen=True)
class Update:
    """One UpdateWeights call as the trainer saw it."""

    mode: str  # "keep", "wait" or "abort"
    began: float  # time.monotonic() as the call was sent
    returned: float
    previous: int  # the version serving before
    version: int  # the version it made
    paused_s: float  # UpdateWeightsResponse.paused_seconds
    rpc_s: float  # the call's wall time
    in_flight: int  # UpdateWeightsResponse.requests_in_flight
    retried: int


@dataclass
class VersionCheck:
    """What the steps of every session say about the updates they ran under."""

    # Steps decided with no update under them (asked and answered between two),
    # and those of them not made wholly by the version serving then.
    steady: int = 0
    steady_wrong: list[str] = field(default_factory=list)
    # Steps with an update under them, by the update's index; and among them the
    # steps whose completions carry two version spans (old, then new: KEEP).
    across: dict[int, int] = field(default_factory=dict)
    two_spans: dict[int, int] = field(default_factory=dict)
    # Completions whose spans are not the update's old and/or new version in
    # order, or, outside KEEP, more than one span.
    across_wrong: list[str] = field(default_factory=list)
    # For each update, the sessions that took a step asked after it returned
    # (every one must: the update ended none of them).
    continued: dict[int, int] = field(default_factory=dict)

    @property
    def wrong(self) -> list[str]:
        return self.steady_wrong + self.across_wrong


def check_versions(
    sessions: Sequence[LoopSession], updates: Sequence[Update], start_version: int
) -> VersionCheck:
    """Every step against the updates' windows: a step with no update under it is
    made wholly by the version serving when it was asked (the newest update that
    had returned by then); a step under one update is made by its old version, its
    new one, or (KEEP only) the old then the new in two spans; a step under two
    updates at once cannot happen here (each update waits for every session's
    next step) and is reported."""
    check = VersionCheck()
    for index in range(len(updates)):
        check.across[index] = check.two_spans[index] = check.continued[index] = 0
    for session in sessions:
        for index, update in enumerate(updates):
            if any(step.sent >= update.returned for step in session.steps):
                check.continued[index] += 1
        for step in session.steps:
            under = [
                i
                for i, u in enumerate(updates)
                if step.sent < u.returned and step.received >= u.began
            ]
            where = f"{session.name} step {step.number}"
            if not under:
                serving = start_version
                for update in updates:
                    if update.returned <= step.sent:
                        serving = update.version
                check.steady += 1
                if step.versions != {serving} or step.policy_version != serving:
                    check.steady_wrong.append(
                        f"{where}: versions {sorted(step.versions)} (policy_version "
                        f"{step.policy_version}), asked while version {serving} served"
                    )
                continue
            if len(under) > 1:
                check.across_wrong.append(f"{where}: under updates {under} at once")
                continue
            index = under[0]
            update = updates[index]
            check.across[index] += 1
            allowed = [[update.previous], [update.version]]
            if update.mode == "keep":
                allowed.append([update.previous, update.version])
            for completion in step.spans:
                order = [span[0] for span in completion]
                contiguous = all(a[2] == b[1] for a, b in itertools.pairwise(completion)) and (
                    not completion or completion[0][1] == 0
                )
                if order not in allowed or not contiguous:
                    check.across_wrong.append(
                        f"{where} under the {update.mode} update to {update.version}: "
                        f"spans {completion}"
                    )
            if step.versions and step.policy_version != max(step.versions):
                check.across_wrong.append(
                    f"{where}: policy_version {step.policy_version}, spans {step.spans}"
                )
            if any(len(completion) == 2 for completion in step.spans):
                check.two_spans[index] += 1
    return check


class Trainer:
    """Pushes the two checkpoints in turn through TrainerService (each update must
    change the weights, or the engine refuses it as ineffective)."""

    def __init__(self, channel: grpc.aio.Channel, checkpoints: Sequence[Path]) -> None:
        self.stub = trainer_pb2_grpc.TrainerServiceStub(channel)
        self.checkpoints = list(checkpoints)
        self.pushed = 0

    async def update(self, mode: str) -> Update:
        # The engine serves checkpoints[0] at first: push 1, 0, 1, ...
        folder = self.checkpoints[(self.pushed + 1) % len(self.checkpoints)]
        self.pushed += 1
        began = time.monotonic()
        reply: trainer_pb2.UpdateWeightsResponse = await self.stub.UpdateWeights(
            trainer_pb2.UpdateWeightsRequest(
                checkpoint_dir=str(folder), mode=MODES[mode], label=f"bench-{self.pushed}"
            )
        )
        returned = time.monotonic()
        return Update(
            mode,
            began,
            returned,
            reply.previous.number,
            reply.version.number,
            reply.paused_seconds,
            returned - began,
            reply.requests_in_flight,
            reply.requests_retried,
        )


async def settle(engine: VllmEngine, sessions: int) -> None:
    """Until nearly every session (90%) has a request in vLLM and at least one of
    them has sampled a token (so KEEP freezes requests mid-completion)."""
    wanted = max(1, sessions - sessions // 10)
    deadline = time.monotonic() + SETTLE_S
    while time.monotonic() < deadline:
        inflight = engine.inflight
        if len(inflight) >= wanted and any(engine.generated(r) > 0 for r in inflight):
            return
        await asyncio.sleep(0.01)


async def wait_all_stepped_after(sessions: Sequence[LoopSession], moment: float) -> None:
    """Until every session has a step asked after `moment` (or has ended)."""

    def done(session: LoopSession) -> bool:
        return bool(session.ended) or any(s.sent >= moment for s in session.steps[-2:])

    deadline = time.monotonic() + GUARD_S
    while not all(done(s) for s in sessions):
        if time.monotonic() > deadline:
            late = [s.name for s in sessions if not done(s)]
            raise AssertionError(f"no step after the update from {late[:5]} ({len(late)})")
        await asyncio.sleep(0.02)


def open_channels(address: str, count: int) -> list[grpc.aio.Channel]:
    return [grpc.aio.insecure_channel(address, options=CHANNEL_OPTIONS) for _ in range(count)]
