"""`holodesk doctor` on this machine: a real Xvfb, no display at all, and macOS through
FakeQuartzApi (macOS cannot run here; the fake implements the real QuartzApi)."""

from __future__ import annotations

import json
import socket
from collections.abc import Iterator
from pathlib import Path
from typing import NoReturn

import pytest
from PIL import Image

from holodesk.client import connection_args
from holodesk.client.cli import main
from holodesk.client.doctor.findings import Finding, Status
from holodesk.client.doctor.machine import MachineOptions, check_machine
from holodesk.client.exit_codes import ExitCode
from holodesk.platform.backends import fake
from holodesk.platform.base import Backend
from holodesk.platform.macos import backend as quartz
from holodesk.platform.macos.api import PointRect
from holodesk.platform.macos.permissions import ACCESSIBILITY_PANE, SCREEN_RECORDING_PANE
from holodesk.platform.select import ENV_VAR, open_backend
from tests.platform.macos.conftest import DISPLAYS, TERMINAL
from tests.platform.macos.fake_api import FakeQuartzApi
from tests.support.probe import ProbeApp
from tests.support.xvfb import xvfb as start_xvfb

MACHINE_CHECKS = ["display", "capture", "input", "permissions", "e-stop hotkey"]


def by_check(findings: list[Finding]) -> dict[str, Finding]:
    return {finding.check: finding for finding in reversed(findings)}


def pointer() -> tuple[int, int]:
    backend = open_backend("x11")
    try:
        return backend.input.cursor_position()
    finally:
        backend.close()


@pytest.fixture
def no_display(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("DISPLAY", "WAYLAND_DISPLAY", "XDG_SESSION_TYPE", ENV_VAR):
        monkeypatch.delenv(name, raising=False)


@pytest.fixture
def probe(xvfb: str, tmp_path: Path) -> Iterator[ProbeApp]:
    """A window on the shared Xvfb, so captures are not all black."""
    app = ProbeApp.start(xvfb, tmp_path / "probe.jsonl")
    try:
        yield app
    finally:
        app.stop()


@pytest.mark.x11
def test_on_xvfb_every_machine_check_passes(probe: ProbeApp) -> None:
    before = pointer()
    findings = check_machine(MachineOptions(backend="x11", check_input=True))
    assert pointer() == before  # moved one pixel and put back
    assert [f.check for f in findings] == MACHINE_CHECKS
    assert all(f.status is Status.OK for f in findings), findings
    checks = by_check(findings)
    assert checks["display"].detail.startswith("x11 backend (linux), 1: ")
    assert "1280x800 at (0,0) primary" in checks["display"].detail
    assert checks["capture"].detail.startswith("screen: 1280x800 in ")
    x, y = before
    assert checks["input"].detail.startswith(f"pointer moved from ({x}, {y}) to ")
    assert checks["input"].detail.endswith("and back")
    assert checks["permissions"].detail == "the x11 backend needs no OS grant"
    assert checks["e-stop hotkey"].detail == "ctrl+alt+shift+escape can be listened for"


@pytest.mark.x11
def test_without_check_input_nothing_moves(probe: ProbeApp) -> None:
    backend = open_backend("x11")
    try:
        inside = probe.widgets["canvas"].center
        backend.input.move(*inside)  # where the probe sees every motion
        probe.wait_for(lambda events: any(e["type"] == "motion" for e in events))
        seen = len(probe.events("motion"))
        (found,) = (f for f in check_machine(MachineOptions(hotkey=None)) if f.check == "input")
        # A sentinel move: X delivers events in order, so any motion the doctor caused
        # is logged before the sentinel's.
        sentinel = (inside[0] + 5, inside[1] + 5)
        backend.input.move(*sentinel)
        probe.wait_for(lambda events: any(_at(e, sentinel) for e in events))
    finally:
        backend.close()
    assert found.status is Status.OK
    assert found.detail.startswith(f"pointer at {inside}; nothing moved")
    assert all(_at(event, sentinel) for event in probe.events("motion")[seen:])


def _at(event: dict[str, object], point: tuple[int, int]) -> bool:
    return event["type"] == "motion" and (event["x_root"], event["y_root"]) == point


@pytest.mark.x11
def test_an_all_black_screen_is_a_warning_with_the_backends_fix(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    with start_xvfb(320, 200) as display:  # a bare X server: a black root window
        monkeypatch.setenv("DISPLAY", display)
        findings = check_machine(MachineOptions(backend="x11", hotkey=None))
    capture = by_check(findings)["capture"]
    assert capture.status is Status.WARN
    assert capture.detail.startswith("screen: 320x200 in ")
    assert capture.detail.endswith("every pixel black")
    assert "screen-capture permission" in capture.fix


def test_without_display_the_failure_says_how_to_fix_it(
    no_display: None, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(["doctor", "--json", "--server", ""])
    findings = json.loads(capsys.readouterr().out)
    assert code == 1
    checks = {f["check"]: f for f in findings}
    display = checks["display"]
    assert display["status"] == "fail"
    assert display["detail"] == "DISPLAY is not set, so there is no X server to connect to"
    assert "export DISPLAY=:0" in display["fix"]
    assert "Xvfb :99" in display["fix"]
    for name in ("capture", "input", "permissions"):
        assert checks[name]["status"] == "skip"
    hotkey = checks["e-stop hotkey"]
    assert hotkey["status"] == "warn"
    assert "DISPLAY is not set" in hotkey["detail"]
    assert "Ctrl-C" in hotkey["fix"]
    assert checks["daemon"]["status"] == "skip"


def test_the_table_shows_each_fix_and_the_exit_status(
    no_display: None, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(["doctor", "--no-estop"])
    out = capsys.readouterr().out
    assert code == 1
    assert "holodesk doctor" in out
    assert "fail" in out
    assert "DISPLAY=:0" in out.replace("\n", " ").replace("│", " ").replace("  ", " ")


def test_warnings_alone_exit_zero(capsys: pytest.CaptureFixture[str]) -> None:
    # The fake backend (a test pattern) opens anywhere; the hotkey is not checked.
    argv = ["doctor", "--json", "--backend", "fake", "--no-estop", "--check-input"]
    code = main([*argv, "--server", ""])
    findings = json.loads(capsys.readouterr().out)
    assert code == 0
    assert [f["status"] for f in findings] == ["ok", "ok", "ok", "ok", "skip", "skip"]


def test_no_daemon_at_the_default_address_is_only_a_warning(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Without --server the doctor checks the daemon on this machine (where holodeskd
    listens by default); none there is worth saying, not a failure."""
    monkeypatch.delenv("HOLODESK_SERVER", raising=False)
    free = socket.socket()
    free.bind(("127.0.0.1", 0))  # nobody listens: the default's stand-in
    address = f"127.0.0.1:{free.getsockname()[1]}"
    monkeypatch.setattr(connection_args, "DEFAULT_ADDRESS", address)
    with free:
        code = main(["doctor", "--json", "--backend", "fake", "--no-estop", "--timeout", "2"])
    checks = {f["check"]: f for f in json.loads(capsys.readouterr().out)}
    assert code == 0
    assert checks["daemon"]["status"] == "warn"
    assert address in checks["daemon"]["detail"]
    assert "no --server given" in checks["daemon"]["detail"]
    assert "pass --server HOST:PORT" in checks["daemon"]["fix"]
    # Named, the same address is a failure.
    assert main(["doctor", "--json", "--backend", "fake", "--no-estop", "--server", address]) == 1


def _crash(*_: object, **__: object) -> NoReturn:
    raise RuntimeError("the library broke")


@pytest.mark.parametrize(
    ("target", "check"),
    [
        ("holodesk.platform.backends.fake.create", "display"),
        ("holodesk.platform.backends.fake.FakeScreen.grab", "capture"),
        ("holodesk.platform.backends.fake.FakeInput.cursor_position", "input"),
        ("holodesk.client.doctor.machine.HotkeyListener.start", "e-stop hotkey"),
        ("holodesk.client.doctor.command.check_daemon", "daemon"),
    ],
)
def test_a_check_that_crashes_is_a_finding_and_the_next_checks_still_run(
    target: str, check: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(target, _crash)
    argv = ["doctor", "--json", "--backend", "fake"]
    # The real hotkey and daemon checks only where they are the ones that crash.
    argv += ["--estop-hotkey", "ctrl+alt+shift+f12"] if check == "e-stop hotkey" else ["--no-estop"]
    argv += ["--server", "127.0.0.1:1", "--insecure"] if check == "daemon" else ["--server", ""]
    code = main(argv)
    findings = json.loads(capsys.readouterr().out)
    # Only the crash failed: everything else on the fake backend passes or is skipped.
    assert code == ExitCode.FAILED
    assert [f["check"] for f in findings if f["status"] == "fail"] == [check], findings
    (crashed,) = (f for f in findings if f["check"] == check)
    assert "crashed: RuntimeError: the library broke (in test_doctor.py:" in crashed["detail"]
    assert "report it" in crashed["fix"]
    # Every check after it still ran: the table goes on to the end.
    names = [f["check"] for f in findings]
    assert names[-1] == "daemon"
    assert set(MACHINE_CHECKS) <= set(names)
    if check == "daemon":
        assert names[-2] == "tls"


class DroppingInput(fake.FakeInput):
    """Input that the OS swallows: moves are accepted, the pointer stays."""

    def _move(self, x: int, y: int) -> None:
        pass


def test_dropped_input_fails_only_with_check_input() -> None:
    def opener(_: str | None) -> Backend:
        backend = fake.create()
        backend.input = DroppingInput(backend.screen.virtual_desktop())
        return backend

    quiet = by_check(check_machine(MachineOptions(hotkey=None), opener))["input"]
    assert quiet.status is Status.OK
    moved = by_check(check_machine(MachineOptions(hotkey=None, check_input=True), opener))
    assert moved["input"].status is Status.FAIL
    assert "injected input is dropped" in moved["input"].detail
    assert "permissions" in moved["input"].fix


# macOS, through FakeQuartzApi ----------------------------------------------------------


class RevocableApi(FakeQuartzApi):
    """Permissions the user can take back after the backend opened; captures can go
    black, as they do on macOS once Screen Recording is gone."""

    def __init__(self) -> None:
        super().__init__(DISPLAYS)
        self.screen_recording = True
        self.trusted = True

    def screen_capture_allowed(self) -> bool:
        return self.screen_recording

    def accessibility_trusted(self) -> bool:
        return self.trusted

    def capture(self, rect: PointRect) -> Image.Image:
        image = super().capture(rect)
        return image if self.screen_recording else Image.new("RGB", image.size)


def test_macos_permissions_and_a_black_capture_name_the_pane() -> None:
    api = RevocableApi()
    revoke = False

    def opener(_: str | None) -> Backend:
        backend = quartz.create(api=api, host=TERMINAL)
        # Taken back once the backend is open (create() itself refuses without them).
        api.screen_recording = api.trusted = not revoke
        return backend

    granted = by_check(check_machine(MachineOptions(hotkey=None), opener))
    assert granted["display"].status is Status.OK
    assert granted["display"].detail.startswith("quartz backend (darwin), 3: ")
    assert granted["capture"].status is Status.OK
    assert granted["permissions"].detail == "every OS permission the backend needs is granted"

    revoke = True
    revoked = by_check(check_machine(MachineOptions(hotkey=None), opener))
    assert revoked["capture"].status is Status.WARN
    assert SCREEN_RECORDING_PANE in revoked["capture"].fix
    assert "the terminal app Terminal" in revoked["capture"].fix
    assert revoked["permissions"].status is Status.FAIL
    assert "Screen Recording" in revoked["permissions"].detail
    assert ACCESSIBILITY_PANE in revoked["permissions"].fix


def test_macos_without_permissions_the_display_check_lists_both_fixes() -> None:
    api = FakeQuartzApi(DISPLAYS, screen_capture=False, accessibility=False)
    findings = check_machine(
        MachineOptions(hotkey=None), lambda _: quartz.create(api=api, host=TERMINAL, prompt=False)
    )
    failures = [f for f in findings if f.status is Status.FAIL]
    assert [f.check for f in failures] == ["display", "display"]
    assert SCREEN_RECORDING_PANE in failures[0].fix
    assert ACCESSIBILITY_PANE in failures[1].fix
