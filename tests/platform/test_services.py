"""Per-user client services: each OS's definition renders correctly, and each manager
drives the OS tool with the right commands.

systemd units are checked for real with `systemd-analyze verify`; launchctl and
schtasks cannot run here, so their managers run against a recording fake runner and
their definitions are parsed back (plistlib, ElementTree) instead.
"""

from __future__ import annotations

import os
import plistlib
import shlex
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
from collections.abc import Sequence
from pathlib import Path

import pytest

from holodesk.platform.services.launchd import LaunchdManager, render_plist
from holodesk.platform.services.runner import CommandResult, ServiceError, run_command
from holodesk.platform.services.schtasks import TASK_NAMESPACE, SchtasksManager, render_task_xml
from holodesk.platform.services.select import service_manager
from holodesk.platform.services.spec import ServiceSpec
from holodesk.platform.services.systemd import SystemdUserManager, render_user_unit

HOSTILE_ARGS = ("--task", 'say "hi" 100% $HOME \\ back', "tab\there", "ünï €")


def spec(*extra: str) -> ServiceSpec:
    return ServiceSpec(
        "holodesk-client", "holodesk client", (sys.executable, "-m", "holodesk.client", *extra)
    )


class FakeRunner:
    """Records every command; answers from a table keyed by the command's first words."""

    def __init__(self, answers: dict[tuple[str, ...], CommandResult] | None = None) -> None:
        self.calls: list[tuple[str, ...]] = []
        self._answers = answers or {}

    def __call__(self, argv: Sequence[str]) -> CommandResult:
        call = tuple(argv)
        self.calls.append(call)
        for prefix, answer in self._answers.items():
            if call[: len(prefix)] == prefix:
                return answer
        return CommandResult(0)


def test_spec_refuses_bad_names_and_arguments() -> None:
    for name in ("Holodesk", "a b", "", "x" * 65, "../evil"):
        with pytest.raises(ValueError, match="service name"):
            ServiceSpec(name, "d", ("prog",))
    with pytest.raises(ValueError, match="newlines"):
        ServiceSpec("ok", "d", ("prog", "two\nlines"))
    with pytest.raises(ValueError, match="program"):
        ServiceSpec("ok", "d", ())


# systemd --------------------------------------------------------------------------


def _systemd_verify(unit: Path, *, user: bool, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    analyze = shutil.which("systemd-analyze")
    if analyze is None:
        pytest.fail("systemd-analyze is missing: tools/setup.sh installs systemd")
    runtime = tmp_path / "runtime"
    runtime.mkdir(mode=0o700, exist_ok=True)
    env = {**os.environ, "XDG_RUNTIME_DIR": str(runtime)}
    args = [analyze, *(["--user"] if user else []), "verify", str(unit)]
    return subprocess.run(args, capture_output=True, text=True, env=env, timeout=60, check=False)


def test_systemd_user_unit_passes_systemd_analyze_verify(tmp_path: Path) -> None:
    unit = tmp_path / "holodesk-client.service"
    unit.write_text(render_user_unit(spec("tray", *HOSTILE_ARGS)))
    result = _systemd_verify(unit, user=True, tmp_path=tmp_path)
    # verify exits 0 on warnings such as unknown keys: any output is a finding.
    assert result.returncode == 0, result.stderr
    assert not (result.stdout + result.stderr).strip()


def test_systemd_analyze_catches_a_broken_unit(tmp_path: Path) -> None:
    # The check above can fail: a misspelt key and a missing program are reported.
    unit = tmp_path / "broken.service"
    text = render_user_unit(spec("tray")).replace("Restart=", "Restrat=")
    unit.write_text(text.replace(sys.executable, "/nonexistent/python"))
    result = _systemd_verify(unit, user=True, tmp_path=tmp_path)
    assert "Restrat" in result.stderr
    assert "/nonexistent/python" in result.stderr


def test_systemd_exec_start_keeps_every_argument_verbatim() -> None:
    unit = render_user_unit(spec(*HOSTILE_ARGS))
    line = next(x for x in unit.splitlines() if x.startswith("ExecStart="))
    # systemd's own unquoting: shell-like double quotes and C escapes, then %% -> %, $$ -> $.
    words = shlex.split(line.removeprefix("ExecStart=").replace("\\t", "\t"))
    words = [w.replace("%%", "%").replace("$$", "$") for w in words]
    assert tuple(words) == spec(*HOSTILE_ARGS).argv


def test_systemd_manager_installs_enables_and_removes(tmp_path: Path) -> None:
    runner = FakeRunner(
        {
            ("systemctl", "--user", "show"): CommandResult(
                0, "ActiveState=active\nSubState=running\nMainPID=4242\n"
            )
        }
    )
    manager = SystemdUserManager(config_home=tmp_path, runner=runner)
    assert not manager.status("holodesk-client").installed

    path = manager.install(spec("tray"))
    assert path == tmp_path / "systemd" / "user" / "holodesk-client.service"
    assert path.read_text() == render_user_unit(spec("tray"))
    assert runner.calls == [
        ("systemctl", "--user", "daemon-reload"),
        ("systemctl", "--user", "enable", "--now", "holodesk-client.service"),
    ]
    status = manager.status("holodesk-client")
    assert (status.installed, status.running, status.pid) == (True, True, 4242)
    assert status.detail == "active (running)"

    runner.calls.clear()
    manager.uninstall("holodesk-client")
    assert not path.exists()
    assert runner.calls == [
        ("systemctl", "--user", "disable", "--now", "holodesk-client.service"),
        ("systemctl", "--user", "daemon-reload"),
    ]
    with pytest.raises(ServiceError, match="not installed"):
        manager.uninstall("holodesk-client")


def test_systemd_manager_failure_names_the_fix(tmp_path: Path) -> None:
    runner = FakeRunner(
        {("systemctl",): CommandResult(1, stderr="Failed to connect to bus: No medium found")}
    )
    manager = SystemdUserManager(config_home=tmp_path, runner=runner)
    with pytest.raises(ServiceError) as caught:
        manager.install(spec("tray"))
    assert "Failed to connect to bus" in str(caught.value)
    assert "enable-linger" in str(caught.value)


def _files_under(root: Path) -> set[Path]:
    return set(root.rglob("*"))


def test_a_failed_systemd_install_leaves_nothing_behind(tmp_path: Path) -> None:
    """No user manager (a server, a container): the unit and the directories the
    install made are gone again, so `status` does not say "installed"."""
    failing = CommandResult(1, stderr="Failed to enable unit: Unit file not found")
    runner = FakeRunner({("systemctl", "--user", "enable"): failing})
    manager = SystemdUserManager(config_home=tmp_path / "config", runner=runner)
    with pytest.raises(ServiceError, match="Failed to enable unit"):
        manager.install(spec("tray"))
    assert _files_under(tmp_path) == set()
    assert not manager.status("holodesk-client").installed
    assert runner.calls[-2:] == [
        ("systemctl", "--user", "disable", "--now", "holodesk-client.service"),
        ("systemctl", "--user", "daemon-reload"),
    ]


def test_a_failed_systemd_reinstall_puts_the_old_unit_back(tmp_path: Path) -> None:
    manager = SystemdUserManager(config_home=tmp_path, runner=FakeRunner())
    path = manager.install(spec("tray"))
    failing = CommandResult(1, stderr="Failed to connect to bus")
    runner = FakeRunner({("systemctl",): failing})
    again = SystemdUserManager(config_home=tmp_path, runner=runner)
    with pytest.raises(ServiceError):
        again.install(spec("tray", "--server", "gpu:50051"))
    assert path.read_text() == render_user_unit(spec("tray"))
    # The old unit stays enabled: nothing is disabled, only reloaded.
    assert all("disable" not in call for call in runner.calls)


def test_a_missing_tool_is_a_service_error_not_a_traceback() -> None:
    with pytest.raises(ServiceError, match="not found on PATH"):
        run_command(("holodesk-no-such-tool-xyz", "--version"))


# launchd --------------------------------------------------------------------------


def test_launchd_plist_round_trips_and_targets_the_gui_session(tmp_path: Path) -> None:
    agent = plistlib.loads(render_plist(spec("tray", *HOSTILE_ARGS), tmp_path))
    assert agent["Label"] == "dev.holodesk.holodesk-client"
    assert tuple(agent["ProgramArguments"]) == spec("tray", *HOSTILE_ARGS).argv
    assert agent["LimitLoadToSessionType"] == "Aqua"
    assert agent["KeepAlive"] == {"SuccessfulExit": False}
    assert agent["RunAtLoad"] is True


def test_launchd_manager_bootstraps_into_the_users_gui_domain(tmp_path: Path) -> None:
    printed = "gui/501/dev.holodesk.holodesk-client = {\n\tstate = running\n\tpid = 777\n}"
    runner = FakeRunner({("launchctl", "print"): CommandResult(0, printed)})
    manager = LaunchdManager(home=tmp_path, uid=501, runner=runner)
    path = manager.install(spec("tray"))
    assert path == tmp_path / "Library/LaunchAgents/dev.holodesk.holodesk-client.plist"
    assert runner.calls == [
        ("launchctl", "bootout", "gui/501/dev.holodesk.holodesk-client"),
        ("launchctl", "bootstrap", "gui/501", str(path)),
    ]
    status = manager.status("holodesk-client")
    assert (status.running, status.pid, status.detail) == (True, 777, "running")
    manager.uninstall("holodesk-client")
    assert not path.exists()


def test_a_failed_launchd_install_leaves_no_plist(tmp_path: Path) -> None:
    failing = CommandResult(5, stderr="Bootstrap failed: 5: Input/output error")
    runner = FakeRunner({("launchctl", "bootstrap"): failing})
    manager = LaunchdManager(home=tmp_path, uid=501, runner=runner)
    with pytest.raises(ServiceError, match="Bootstrap failed"):
        manager.install(spec("tray"))
    assert _files_under(tmp_path) == set()  # no plist, no agents or logs folder


# Windows --------------------------------------------------------------------------


def test_windows_task_runs_at_logon_in_the_interactive_session() -> None:
    windows_spec = ServiceSpec(
        "holodesk-client", "d", (r"C:\Program Files\holodesk\python.exe", "-m", "x", "a b", 'q"')
    )
    root = ET.fromstring(render_task_xml(windows_spec, r"CORP\ada").split("\n", 1)[1])
    ns = {"t": TASK_NAMESPACE}
    assert root.findtext("t:Triggers/t:LogonTrigger/t:UserId", namespaces=ns) == r"CORP\ada"
    principal = root.find("t:Principals/t:Principal", ns)
    assert principal is not None
    assert principal.findtext("t:LogonType", namespaces=ns) == "InteractiveToken"
    assert principal.findtext("t:RunLevel", namespaces=ns) == "LeastPrivilege"
    assert root.findtext("t:Settings/t:ExecutionTimeLimit", namespaces=ns) == "PT0S"
    exec_ = root.find("t:Actions/t:Exec", ns)
    assert exec_ is not None
    assert exec_.findtext("t:Command", namespaces=ns) == r"C:\Program Files\holodesk\python.exe"
    # MSVC command-line rules: spaces quoted, embedded quotes backslash-escaped.
    assert exec_.findtext("t:Arguments", namespaces=ns) == '-m x "a b" q\\"'


def test_schtasks_manager_creates_runs_queries_and_deletes(tmp_path: Path) -> None:
    query = ("schtasks", "/Query")
    runner = FakeRunner({query: CommandResult(0, '"\\holodesk-client","N/A","Running"\n')})
    manager = SchtasksManager(state_dir=tmp_path, user_id=r"CORP\ada", runner=runner)
    path = manager.install(spec("tray"))
    assert path.read_bytes().startswith(b"\xff\xfe")  # UTF-16 with its BOM
    assert runner.calls == [
        ("schtasks", "/Create", "/TN", "holodesk-client", "/XML", str(path), "/F"),
        ("schtasks", "/Run", "/TN", "holodesk-client"),
    ]
    status = manager.status("holodesk-client")
    assert (status.installed, status.running, status.detail) == (True, True, "Running")
    manager.uninstall("holodesk-client")
    assert runner.calls[-1] == ("schtasks", "/Delete", "/TN", "holodesk-client", "/F")
    assert not path.exists()


def test_a_failed_schtasks_install_deletes_the_task_and_its_xml(tmp_path: Path) -> None:
    failing = CommandResult(1, stderr="ERROR: Access is denied.")
    runner = FakeRunner({("schtasks", "/Run"): failing})
    manager = SchtasksManager(state_dir=tmp_path / "state", user_id="u", runner=runner)
    with pytest.raises(ServiceError, match="Access is denied"):
        manager.install(spec("tray"))
    assert _files_under(tmp_path) == set()
    assert runner.calls[-1] == ("schtasks", "/Delete", "/TN", "holodesk-client", "/F")


def test_schtasks_status_of_an_unknown_task() -> None:
    runner = FakeRunner({("schtasks",): CommandResult(1, stderr="ERROR: cannot find the file")})
    manager = SchtasksManager(state_dir=Path("."), user_id="u", runner=runner)
    assert not manager.status("holodesk-client").installed
    with pytest.raises(ServiceError, match="not installed"):
        manager.uninstall("holodesk-client")


def test_one_place_picks_the_manager_per_os() -> None:
    kinds = {p: service_manager(p, FakeRunner()).kind for p in ("linux", "darwin", "win32")}
    assert kinds == {
        "linux": "systemd --user",
        "darwin": "launchd LaunchAgent",
        "win32": "Windows logon task",
    }
    with pytest.raises(ServiceError, match="autostart"):
        service_manager("freebsd14")
