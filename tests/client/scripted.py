"""A scripted AgentService on a real grpc.aio server (127.0.0.1:0), in its own thread.

Each test writes the daemon's side of the conversation as a small async script;
the server runs in a thread with its own event loop, so the client can be driven
from an async test or from the blocking CLI alike.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Awaitable, Callable
from typing import Any

import grpc
import grpc.aio

from holodesk.proto.v1 import (
    action_pb2,
    agent_pb2,
    agent_pb2_grpc,
    frame_pb2,
    geometry_pb2,
)

DEFAULT_SPEC = frame_pb2.FrameSpec(
    max_width=640, max_height=640, encoding=frame_pb2.IMAGE_ENCODING_PNG, max_bytes=4_000_000
)


class Conversation:
    """The daemon's end of one RunSession stream."""

    def __init__(self, context: Any, index: int = 0) -> None:
        self._context = context
        # 0 for the first stream of the daemon, 1 for the next (a resume) ...
        self.index = index
        self.received: list[agent_pb2.RunSessionRequest] = []
        self.client_gone = False
        self.metadata: dict[str, str] = {
            key: value for key, value in context.invocation_metadata() or ()
        }
        self.auth_context: dict[str, list[bytes]] = dict(context.auth_context())

    async def recv(self) -> agent_pb2.RunSessionRequest:
        message = await self._context.read()
        if message is grpc.aio.EOF:
            self.client_gone = True
            raise AssertionError("the client half-closed the stream")
        assert isinstance(message, agent_pb2.RunSessionRequest)
        self.received.append(message)
        return message

    async def recv_observation(self) -> agent_pb2.Observation:
        message = await self.recv()
        assert message.WhichOneof("event") == "observation", message
        return message.observation

    async def send(self, response: agent_pb2.RunSessionResponse) -> None:
        await self._context.write(response)

    async def send_actions(self, step: int, *actions: action_pb2.Action, thought: str = "") -> None:
        await self.send(
            agent_pb2.RunSessionResponse(
                actions=agent_pb2.Actions(step=step, actions=list(actions), thought=thought)
            )
        )

    async def end(
        self, outcome: agent_pb2.SessionOutcome.ValueType, answer: str = "", reason: str = ""
    ) -> None:
        ended = agent_pb2.SessionEnded(outcome=outcome, answer=answer, reason=reason, steps=0)
        await self.send(agent_pb2.RunSessionResponse(ended=ended))

    async def open(self, spec: frame_pb2.FrameSpec = DEFAULT_SPEC) -> frame_pb2.Frame:
        """start -> started -> first observation; returns the first frame."""
        start = await self.recv()
        assert start.WhichOneof("event") == "start", start
        await self.send(
            agent_pb2.RunSessionResponse(
                started=agent_pb2.SessionStarted(
                    session_id="s-1", resume_token="r-1", frame_spec=spec, policy="scripted"
                )
            )
        )
        observation = await self.recv_observation()
        assert observation.HasField("frame")
        return observation.frame

    async def resume(
        self,
        *,
        token: str,
        step: int,
        pending: list[str],
        new_token: str,
        session_id: str = "s-1",
        spec: frame_pb2.FrameSpec = DEFAULT_SPEC,
    ) -> agent_pb2.Observation:
        """start(resume_token) -> started(resumed) -> the client's resume observation."""
        start = await self.recv()
        assert start.WhichOneof("event") == "start", start
        assert start.start.resume_token == token, start.start.resume_token
        started = agent_pb2.SessionStarted(
            session_id=session_id,
            resume_token=new_token,
            frame_spec=spec,
            policy="scripted",
            resumed=True,
            step=step,
            pending_action_ids=pending,
        )
        await self.send(agent_pb2.RunSessionResponse(started=started))
        return await self.recv_observation()

    async def abort(self, code: grpc.StatusCode, details: str) -> None:
        await self._context.abort(code, details)


Script = Callable[[Conversation], Awaitable[None]]


class ScriptedAgent(agent_pb2_grpc.AgentServiceServicer):
    def __init__(self, script: Script) -> None:
        self._script = script
        self.conversations: list[Conversation] = []

    # grpc.aio also accepts a coroutine that talks through context.read/write.
    async def RunSession(  # type: ignore[override]  # noqa: N802
        self, request_iterator: Any, context: Any
    ) -> None:
        conversation = Conversation(context, len(self.conversations))
        self.conversations.append(conversation)
        await self._script(conversation)

    async def Locate(self, request: Any, context: Any) -> agent_pb2.LocateResponse:  # noqa: N802
        await context.abort(grpc.StatusCode.UNIMPLEMENTED, "not scripted")
        raise AssertionError("unreachable")

    async def ReportReward(  # noqa: N802
        self, request: Any, context: Any
    ) -> agent_pb2.ReportRewardResponse:
        await context.abort(grpc.StatusCode.UNIMPLEMENTED, "not scripted")
        raise AssertionError("unreachable")


class ScriptedDaemon:
    """A real gRPC server on 127.0.0.1:0 running `script` for every session."""

    def __init__(
        self,
        script: Script,
        address: str = "127.0.0.1:0",
        credentials: grpc.ServerCredentials | None = None,
        options: list[tuple[str, Any]] | None = None,
    ) -> None:
        """`address` may be unix:/path; `credentials` makes the port TLS (or mTLS)."""
        self.agent = ScriptedAgent(script)
        self._address = address
        self._credentials = credentials
        self._options = options or []
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True)
        self._thread.start()
        self._server: Any = None
        self.port: int = self._call(self._start())

    def _call(self, coroutine: Awaitable[Any]) -> Any:
        return asyncio.run_coroutine_threadsafe(coroutine, self._loop).result(30)  # type: ignore[arg-type]

    async def _start(self) -> int:
        self._server = grpc.aio.server(options=self._options)
        agent_pb2_grpc.add_AgentServiceServicer_to_server(self.agent, self._server)
        if self._credentials is None:
            port = self._server.add_insecure_port(self._address)
        else:
            port = self._server.add_secure_port(self._address, self._credentials)
        await self._server.start()
        return int(port)

    def call(self, coroutine: Awaitable[Any]) -> Any:
        """Run a coroutine on the server's loop (e.g. an event the script waits on)."""
        return self._call(coroutine)

    def conversations_started(self) -> int:
        return len(self.agent.conversations)

    @property
    def target(self) -> str:
        return f"127.0.0.1:{self.port}"

    @property
    def conversation(self) -> Conversation:
        assert len(self.agent.conversations) == 1, self.agent.conversations
        return self.agent.conversations[0]

    def stop(self) -> None:
        self._call(self._server.stop(None))
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(30)
        self._loop.close()


# -- building the daemon's messages -----------------------------------------------------


def point(x: float, y: float) -> geometry_pb2.Point:
    return geometry_pb2.Point(x=x, y=y)


def click(action_id: str, frame_id: str, x: float, y: float) -> action_pb2.Action:
    return action_pb2.Action(
        action_id=action_id, frame_id=frame_id, click=action_pb2.ClickAction(point=point(x, y))
    )


def type_text(action_id: str, text: str) -> action_pb2.Action:
    return action_pb2.Action(action_id=action_id, type_text=action_pb2.TypeTextAction(text=text))


def key_down(action_id: str, key: str) -> action_pb2.Action:
    return action_pb2.Action(action_id=action_id, key_down=action_pb2.KeyDownAction(key=key))


def wait(action_id: str, ms: int) -> action_pb2.Action:
    return action_pb2.Action(action_id=action_id, wait=action_pb2.WaitAction(duration_ms=ms))


def done(action_id: str, answer: str) -> action_pb2.Action:
    return action_pb2.Action(action_id=action_id, done=action_pb2.DoneAction(answer=answer))


def fail(action_id: str, reason: str) -> action_pb2.Action:
    return action_pb2.Action(action_id=action_id, fail=action_pb2.FailAction(reason=reason))


def ask_user(action_id: str, question: str) -> action_pb2.Action:
    return action_pb2.Action(
        action_id=action_id, ask_user=action_pb2.AskUserAction(question=question)
    )
