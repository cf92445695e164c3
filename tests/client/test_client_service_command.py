"""`holodesk service`: what the installed service runs, and the command's outcomes."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from holodesk.client.cli import build_parser, load_commands, main
from holodesk.client.exit_codes import ExitCode
from holodesk.client.service.command import run
from holodesk.platform.services.spec import ServiceSpec, ServiceStatus
from holodesk.proto.defaults import DEFAULT_ADDRESS


class FakeManager:
    kind = "fake service"

    def __init__(self) -> None:
        self.installed: list[ServiceSpec] = []
        self.state = ServiceStatus(installed=False, running=False, detail="not installed")

    def render(self, spec: ServiceSpec) -> str:
        return " ".join(spec.argv) + "\n"

    def install(self, spec: ServiceSpec) -> Path:
        self.installed.append(spec)
        return Path("/fake") / spec.name

    def uninstall(self, name: str) -> None:
        self.installed.clear()

    def status(self, name: str) -> ServiceStatus:
        return self.state


def _args(*argv: str) -> object:
    return build_parser(load_commands(group=None)).parse_args(["service", *argv])


def test_install_runs_this_interpreters_tray_with_absolute_credential_paths(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    manager = FakeManager()
    args = _args("install", "--server", "gpu:50051", "--token-file", "tok", "--ca-cert", "ca.pem")
    assert run(args, manager) == ExitCode.SUCCEEDED  # type: ignore[arg-type]
    (spec,) = manager.installed
    assert spec.name == "holodesk-client"
    assert spec.argv == (
        sys.executable,
        "-m",
        "holodesk.client",
        "tray",
        "--server",
        "gpu:50051",
        "--token-file",
        str(tmp_path / "tok"),
        "--ca-cert",
        str(tmp_path / "ca.pem"),
    )


def test_install_defaults_to_the_daemon_on_this_machine(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Like `holodesk run`: the daemon's own default address, written into the unit
    (so a later change of default does not move an installed service)."""
    monkeypatch.delenv("HOLODESK_SERVER", raising=False)
    manager = FakeManager()
    assert run(_args("install", "--dry-run"), manager) == ExitCode.SUCCEEDED  # type: ignore[arg-type]
    assert f"tray --server {DEFAULT_ADDRESS}" in capsys.readouterr().out


def test_install_refuses_an_empty_server() -> None:
    manager = FakeManager()
    assert run(_args("install", "--server", ""), manager) == ExitCode.USAGE  # type: ignore[arg-type]
    assert not manager.installed


def test_dry_run_prints_and_installs_nothing(capsys: pytest.CaptureFixture[str]) -> None:
    manager = FakeManager()
    args = _args("install", "--server", "gpu:50051", "--dry-run")
    assert run(args, manager) == ExitCode.SUCCEEDED  # type: ignore[arg-type]
    assert "holodesk.client tray --server gpu:50051" in capsys.readouterr().out
    assert not manager.installed


def test_status_exit_code_says_whether_it_runs(capsys: pytest.CaptureFixture[str]) -> None:
    manager = FakeManager()
    assert run(_args("status"), manager) == ExitCode.FAILED  # type: ignore[arg-type]
    manager.state = ServiceStatus(True, True, "active (running)", pid=12, path="/u/x.service")
    assert run(_args("status"), manager) == ExitCode.SUCCEEDED  # type: ignore[arg-type]
    assert "active (running), pid 12 (/u/x.service)" in capsys.readouterr().out


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="systemd units are Linux's")
def test_real_dry_run_on_this_machine_prints_a_systemd_unit(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # The platform layer picks systemd --user on Linux; a dry run touches nothing.
    assert main(["service", "install", "--server", "gpu:50051", "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert "[Service]" in out
    assert "WantedBy=graphical-session.target" in out
