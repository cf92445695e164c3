"""The tray's logic without a tray: its menu entries drive real sessions against a
scripted daemon on 127.0.0.1 (a real gRPC server) with the fake backend."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from holodesk.client.cli import build_parser, load_commands
from holodesk.client.safety.settings import SafetySettings
from holodesk.client.session import SessionOptions
from holodesk.client.tray.command import chosen_servers
from holodesk.client.tray.controller import TrayController
from holodesk.client.tray.menu import MenuEntry, menu_entries
from holodesk.client.tray.state import ServerProfile, TrayState, TrayStatus
from holodesk.platform.backends import fake
from holodesk.platform.base import MouseButton
from holodesk.platform.errors import BackendUnavailableError
from holodesk.proto.defaults import DEFAULT_ADDRESS
from holodesk.proto.v1 import agent_pb2

from .scripted import Conversation, Script, ScriptedDaemon, click, done, key_down

Daemon = Callable[[Script], ScriptedDaemon]
GUARD_S = 30.0


class Tray:
    """A controller plus what it did: states seen, paths opened, tasks asked."""

    def __init__(
        self,
        servers: list[ServerProfile],
        backend: Callable[[], fake.FakeBackend],
        tasks: list[str] | None = None,
        report: Path | None = None,
        hook: Callable[[Tray, TrayStatus], None] | None = None,
    ) -> None:
        self.states: list[TrayStatus] = []
        self._hook = hook
        self.opened: list[Path] = []
        self.urls: list[str] = []
        self.changed = threading.Condition()
        self._tasks = list(tasks or [])
        self.controller = TrayController(
            servers,
            backend,
            ask_task=lambda: self._tasks.pop(0) if self._tasks else None,
            open_path=self.opened.append,
            open_url=self.urls.append,
            live_view_url="http://127.0.0.1:50080/",
            write_report=(lambda task, outcome: report) if report else None,
            # No global hotkey or fail-safe corner: the fake backend has no real pointer.
            session_options=SessionOptions(
                safety=SafetySettings(emergency_stop=None, fail_safe=False)
            ),
            on_change=self._changed,
        )
        self.menu = {e.text: e for e in menu_entries(self.controller, self.controller.close)}

    def _changed(self, status: TrayStatus) -> None:
        with self.changed:
            self.states.append(status)
            self.changed.notify_all()
        if self._hook is not None:
            self._hook(self, status)

    def click(self, label: str) -> object:
        entry: MenuEntry = self.menu[label]
        assert entry.enabled(), f"{label!r} is disabled in state {self.controller.status}"
        assert entry.action is not None
        return entry.action()

    def wait_for(self, predicate: Callable[[TrayStatus], bool]) -> TrayStatus:
        with self.changed:
            assert self.changed.wait_for(
                lambda: bool(self.states) and predicate(self.states[-1]), GUARD_S
            ), self.states[-1:]
            return self.states[-1]


@pytest.fixture
def tray_factory(backend: fake.FakeBackend) -> Iterator[Callable[..., Tray]]:
    made: list[Tray] = []

    def make(servers: list[ServerProfile], **kwargs: object) -> Tray:
        tray = Tray(servers, lambda: backend, **kwargs)  # type: ignore[arg-type]
        made.append(tray)
        return tray

    yield make
    for tray in made:
        tray.controller.close()


def test_start_pause_resume_to_success(
    daemon: Daemon, backend: fake.FakeBackend, tray_factory: Callable[..., Tray]
) -> None:
    async def script(conv: Conversation) -> None:
        frame = await conv.open()
        await conv.send_actions(1, click("a1", frame.frame_id, 320, 200))
        await conv.recv_observation()
        await conv.send_actions(2, done("a2", "clicked"))
        await conv.recv_observation()
        await conv.end(agent_pb2.SESSION_OUTCOME_SUCCEEDED, answer="clicked")

    server = daemon(script)
    # Pause as soon as the session starts: the first frame must then wait for Resume.
    paused_once = threading.Event()

    def pause_on_start(tray: Tray, status: TrayStatus) -> None:
        if status.session_id and not paused_once.is_set():
            paused_once.set()
            tray.click("Pause")

    tray = tray_factory(
        [ServerProfile("gpu", server.target)], tasks=["click the thing"], hook=pause_on_start
    )
    assert tray.click("Start task…") is True
    paused = tray.wait_for(lambda s: s.state is TrayState.PAUSED)
    assert paused.task == "click the thing"
    assert paused.session_id == "s-1"
    assert "paused" in paused.title
    # While paused, no frame reaches the daemon, so it decides nothing.
    time.sleep(0.5)
    assert [m.WhichOneof("event") for m in server.conversation.received] == ["start"]
    assert not tray.menu["Start task…"].enabled()

    tray.click("Resume")
    ended = tray.wait_for(lambda s: s.state is TrayState.IDLE)
    assert ended.detail == "succeeded: clicked"
    assert ended.step == 2
    assert backend.input.events[:3] == [
        fake.Move(640, 400),
        fake.Button(MouseButton.LEFT, True),
        fake.Button(MouseButton.LEFT, False),
    ]


def test_emergency_stop_cancels_and_releases_what_is_held(
    daemon: Daemon, backend: fake.FakeBackend, tray_factory: Callable[..., Tray]
) -> None:
    cancelled = asyncio.Event()

    async def script(conv: Conversation) -> None:
        await conv.open()
        await conv.send_actions(1, key_down("k1", "shift"))
        # Think forever: the client's cancel comes after (or instead of) step 1's results.
        message = await conv.recv()
        if message.WhichOneof("event") == "observation":
            message = await conv.recv()
        assert message.WhichOneof("event") == "cancel"
        cancelled.set()
        await conv.end(agent_pb2.SESSION_OUTCOME_CANCELLED, reason=message.cancel.reason)

    server = daemon(script)
    tray = tray_factory([ServerProfile("gpu", server.target)], tasks=["hold shift"])
    tray.click("Start task…")
    tray.wait_for(lambda s: s.step == 1)
    assert backend.input.held() == (("shift",), ())
    assert tray.click("Stop") is True
    ended = tray.wait_for(lambda s: s.state is TrayState.IDLE)
    assert ended.detail.startswith("cancelled")
    assert "emergency stop from the tray" in ended.detail
    assert backend.input.held() == ((), ())
    assert server.call(asyncio.wait_for(cancelled.wait(), GUARD_S)) is True


def test_no_task_given_starts_nothing(daemon: Daemon, tray_factory: Callable[..., Tray]) -> None:
    server = daemon(lambda conv: conv.open())  # type: ignore[arg-type,return-value]
    tray = tray_factory([ServerProfile("gpu", server.target)], tasks=[])
    assert tray.click("Start task…") is False
    assert server.conversations_started() == 0
    assert tray.controller.status.state is TrayState.IDLE


def test_backend_unavailable_is_an_error_state(daemon: Daemon) -> None:
    def no_backend() -> fake.FakeBackend:
        raise BackendUnavailableError([("DISPLAY is not set", "log in to a desktop")])

    server = daemon(lambda conv: conv.open())  # type: ignore[arg-type,return-value]
    tray = Tray([ServerProfile("gpu", server.target)], no_backend, tasks=["t"])
    try:
        tray.click("Start task…")
        status = tray.wait_for(lambda s: s.state is TrayState.ERROR)
        assert "DISPLAY is not set" in status.detail
        assert "DISPLAY is not set" in status.title
        assert server.conversations_started() == 0
    finally:
        tray.controller.close()


def test_server_switching_and_reports(
    daemon: Daemon, tray_factory: Callable[..., Tray], tmp_path: Path
) -> None:
    async def script(conv: Conversation) -> None:
        await conv.open()
        await conv.send_actions(1, done("d", "ok"))
        await conv.recv_observation()
        await conv.end(agent_pb2.SESSION_OUTCOME_SUCCEEDED, answer="ok")

    first, second = daemon(script), daemon(script)
    report = tmp_path / "report.html"
    report.write_text("<html></html>")
    tray = tray_factory(
        [ServerProfile("a", first.target), ServerProfile("b", second.target)],
        tasks=["one"],
        report=report,
    )
    assert tray.menu["Server: a"].checked is not None
    assert tray.menu["Server: a"].checked()
    assert not tray.menu["Open last report"].enabled()
    tray.click("Server: b")
    assert tray.controller.status.server == "b"
    checked = tray.menu["Server: b"].checked
    assert checked is not None
    assert checked()

    tray.click("Start task…")
    tray.wait_for(lambda s: s.state is TrayState.IDLE and s.has_report)
    assert (first.conversations_started(), second.conversations_started()) == (0, 1)
    tray.click("Open last report")
    assert tray.opened == [report]
    with pytest.raises(ValueError, match="unknown server"):
        tray.controller.select_server("nope")


def test_profiles_must_be_named_uniquely() -> None:
    with pytest.raises(ValueError, match="unique"):
        TrayController(
            [ServerProfile("a", "x:1"), ServerProfile("a", "y:2")],
            fake.create,
            ask_task=lambda: None,
            open_path=print,
        )


def test_the_servers_named_replace_the_default_not_follow_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("HOLODESK_SERVER", "env-host:50051")
    parser = build_parser(load_commands(group=None))
    named = parser.parse_args(["tray", "--server", "lab=h:1", "--server", "h:2"])
    assert chosen_servers(named.server) == ["lab=h:1", "h:2"]
    assert chosen_servers(parser.parse_args(["tray"]).server) == ["env-host:50051"]
    monkeypatch.delenv("HOLODESK_SERVER")
    assert chosen_servers(parser.parse_args(["tray"]).server) == [DEFAULT_ADDRESS]


def test_live_view_and_the_daemon_shown(daemon: Daemon, tray_factory: Callable[..., Tray]) -> None:
    first, second = daemon(lambda conv: conv.open()), daemon(lambda conv: conv.open())  # type: ignore[arg-type,return-value]
    tray = tray_factory([ServerProfile("a", first.target), ServerProfile("b", second.target)])
    label = tray.menu[f"Daemon: {first.target}"]
    assert label.action is None
    assert not label.enabled()
    tray.click("Server: b")
    # The label follows the chosen daemon.
    labels = [e.text for e in menu_entries(tray.controller, tray.controller.close)]
    assert f"Daemon: {second.target}" in labels
    assert tray.click("Open live view") is True
    assert tray.urls == ["http://127.0.0.1:50080/"]
    # Open live view works in any state; it starts nothing on either daemon.
    assert (first.conversations_started(), second.conversations_started()) == (0, 0)


def test_live_view_without_an_opener_is_refused() -> None:
    controller = TrayController(
        [ServerProfile("a", "127.0.0.1:9")], fake.create, ask_task=lambda: None, open_path=print
    )
    try:
        assert controller.open_live_view() is False
        assert controller.address == "127.0.0.1:9"
    finally:
        controller.close()


def test_live_view_url_is_checked(capsys: pytest.CaptureFixture[str]) -> None:
    parser = build_parser(load_commands(group=None))
    assert parser.parse_args(["tray"]).live_view == "http://127.0.0.1:50080/"
    given = parser.parse_args(["tray", "--live-view", "https://gpu.lab:8443/live"])
    assert given.live_view == "https://gpu.lab:8443/live"
    for bad in ("127.0.0.1:50080", "file:///etc/passwd", "http://", "javascript:alert(1)"):
        with pytest.raises(SystemExit):
            parser.parse_args(["tray", "--live-view", bad])
        assert "is not an http(s) URL" in capsys.readouterr().err
