"""A running session to watch in the live view: for its e2e test and for
tools/make_live_view_screenshots.py.

A real daemon (gRPC and --web on 127.0.0.1:0, a tokens file with an admin and an
agent token), a real client session (`run_session`, the X11 backend) on an Xvfb
with the probe app, and a scripted policy in the holo dialect that looks at the
probe and waits, step after step, so there is always a next step to pause. Its
engine keeps every prompt it was given, to find the take-over note in.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path

from holodesk.client.channel import ChannelSettings
from holodesk.client.credentials import BearerToken
from holodesk.client.outcome import SessionOutcome
from holodesk.client.session import SessionOptions, run_session
from holodesk.daemon.config import ServerConfig
from holodesk.daemon.dialects import get_dialect
from holodesk.daemon.engines.base import GenerationRequest, GenerationResult, TextPart
from holodesk.daemon.engines.scripted import ScriptedEngine
from holodesk.daemon.policies.base import Decision
from holodesk.daemon.policies.model import ModelPolicy
from holodesk.daemon.rpc.server import RunningServer, serve
from holodesk.daemon.steps import StepContext
from holodesk.platform.select import open_backend
from tests.daemon.support import Tokens, write_tokens

TASK = "Press OK in the probe window, then type a greeting"
STEPS = 400
# Each step waits this long on the client: steps keep coming, slowly enough to watch.
WAIT_S = 0.15
THOUGHTS = (
    "The probe window is open; its OK button is at the top left. Waiting for it to settle.",
    "Nothing has changed since the last screen. Waiting a moment longer.",
    "The canvas is empty and the entry has focus. Looking again before acting.",
)


def script() -> list[str]:
    return [
        json.dumps(
            {
                "note": f"looked at the screen {n + 1} times",
                "thought": THOUGHTS[n % len(THOUGHTS)],
                "action": {"action": "wait", "seconds": WAIT_S},
            }
        )
        for n in range(STEPS)
    ]


class PromptKeepingEngine(ScriptedEngine):
    """The scripted engine, keeping the text of every prompt it was sent."""

    def __init__(self, outputs: list[str]) -> None:
        super().__init__(outputs)
        self.prompts: list[str] = []

    async def generate(self, request: GenerationRequest) -> GenerationResult:
        self.prompts.append(
            "".join(
                part.text
                for message in request.messages
                for part in message.content
                if isinstance(part, TextPart)
            )
        )
        return await super().generate(request)


class WatchedPolicy(ModelPolicy):
    """Keeps what each step was decided from."""

    def __init__(self) -> None:
        self.prompts = PromptKeepingEngine(script())
        super().__init__(get_dialect("holo"), self.prompts, name="scripted")
        self.contexts: list[StepContext] = []

    async def decide(self, context: StepContext) -> Decision:
        self.contexts.append(context)
        return await super().decide(context)


@dataclass
class Scene:
    running: RunningServer
    tokens: Tokens
    policy: WatchedPolicy
    client: asyncio.Task[SessionOutcome]
    display: str

    @property
    def url(self) -> str:
        assert self.running.web is not None
        return self.running.web.url

    @property
    def admin_token(self) -> str:
        return self.tokens.by_name["operator"]


@asynccontextmanager
async def live_scene(display: str, directory: Path) -> AsyncIterator[Scene]:
    """The daemon serving the live view, and one client session running on `display`."""
    tokens = write_tokens(directory, operator="admin", desk="agent")
    policy = WatchedPolicy()
    settings = ServerConfig(
        listen="127.0.0.1:0",
        web="127.0.0.1:0",
        tokens_file=str(tokens.path),
        max_steps=STEPS,
    )
    backend = open_backend("x11", display=display)
    try:
        async with serve(settings, policies=[policy]) as running:
            options = SessionOptions(
                channel=ChannelSettings(token=BearerToken(tokens.by_name["desk"], "test"))
            )
            client = asyncio.create_task(run_session(running.address, TASK, backend, options))
            scene = Scene(running, tokens, policy, client, display)
            try:
                yield scene
            finally:
                if not client.done():
                    for session in running.registry.list():
                        if session.ended is None:
                            running.registry.cancel(session.session_id, "the scene is over")
                await asyncio.wait_for(asyncio.shield(client), 30)
    finally:
        backend.close()
