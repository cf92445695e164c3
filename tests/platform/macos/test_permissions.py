"""Screen Recording / Accessibility preflight names the exact switch to flip.

macOS cannot run here: FakeQuartzApi answers the two permission checks
(CGPreflightScreenCaptureAccess, AXIsProcessTrusted) as configured, and HostProcess
describes the process asking, as macOS would see it.
"""

from __future__ import annotations

import os

import pytest

from holodesk.platform.errors import BackendUnavailableError
from holodesk.platform.macos import backend as quartz
from holodesk.platform.macos.permissions import (
    HostProcess,
    permission_problems,
    responsible_app,
)
from tests.platform.macos.conftest import DISPLAYS, TERMINAL
from tests.platform.macos.fake_api import FakeQuartzApi

LAUNCHD = HostProcess(
    {"XPC_SERVICE_NAME": "dev.holodesk.client"}, parent_pid=1, executable="/usr/bin/python3"
)


def test_nothing_missing_is_no_problem() -> None:
    assert permission_problems(True, True, TERMINAL) == []


def test_both_missing_are_reported_at_once_with_their_panes() -> None:
    [(screen_cause, screen_fix), (ax_cause, ax_fix)] = permission_problems(False, False, TERMINAL)
    assert "Screen Recording to the terminal app Terminal" in screen_cause
    assert "System Settings > Privacy & Security > Screen Recording" in screen_fix
    assert "Screen & System Audio Recording" in screen_fix
    assert "quit and restart" in screen_fix
    assert "Accessibility to the terminal app Terminal" in ax_cause
    assert "clicks and keys" in ax_cause
    assert "System Settings > Privacy & Security > Accessibility" in ax_fix


def test_only_the_missing_permission_is_reported() -> None:
    [(cause, _)] = permission_problems(True, False, TERMINAL)
    assert "Accessibility" in cause
    assert "Screen Recording" not in cause


@pytest.mark.parametrize(
    ("environ", "label"),
    [
        ({"TERM_PROGRAM": "iTerm.app"}, "the terminal app iTerm2"),
        ({"TERM_PROGRAM": "vscode"}, "the terminal app Visual Studio Code"),
        ({"__CFBundleIdentifier": "net.kovidgoyal.kitty"}, "the app kitty"),
        ({"__CFBundleIdentifier": "com.example.Shell"}, "the app com.example.Shell"),
        ({"TERM_PROGRAM": "SomeNewTerm"}, "the terminal app SomeNewTerm"),
    ],
)
def test_the_terminal_app_is_named(environ: dict[str, str], label: str) -> None:
    app = responsible_app(HostProcess(environ, parent_pid=500, executable="/usr/bin/python3"))
    assert app.label == label
    assert not app.launchd


def test_a_launchd_agent_names_its_program_and_how_to_add_it(tmp_path: os.PathLike[str]) -> None:
    real = os.path.join(tmp_path, "python3.12")
    link = os.path.join(tmp_path, "python")
    with open(real, "w"):
        pass
    os.symlink(real, link)
    host = HostProcess({"XPC_SERVICE_NAME": "dev.holodesk.client"}, parent_pid=1, executable=link)
    app = responsible_app(host)
    assert app.launchd
    # macOS holds the real binary responsible, not the venv's symlink to it.
    assert app.label == f"the program the launchd agent runs, {real}"
    [(_, fix)] = permission_problems(True, False, host)
    assert "Cmd+Shift+G" in fix
    assert real in fix


def test_an_unknown_origin_names_both_candidates() -> None:
    host = HostProcess({}, parent_pid=700, executable="/usr/bin/python3")
    label = responsible_app(host).label
    assert "your terminal" in label
    assert "launchd agent" in label


def test_create_refuses_without_permissions_and_prompts() -> None:
    api = FakeQuartzApi(DISPLAYS, screen_capture=False, accessibility=False)
    with pytest.raises(BackendUnavailableError) as raised:
        quartz.create(api=api, host=LAUNCHD)
    assert raised.value.backend == "quartz"
    assert len(raised.value.causes) == 2
    assert "launchd agent runs" in str(raised.value)
    assert api.requests == [(True, True)]
    assert api.closed


def test_create_can_refuse_without_prompting() -> None:
    api = FakeQuartzApi(DISPLAYS, screen_capture=True, accessibility=False)
    with pytest.raises(BackendUnavailableError, match="Accessibility"):
        quartz.create(api=api, host=TERMINAL, prompt=False)
    assert api.requests == []


def test_create_with_permissions_opens_the_backend() -> None:
    api = FakeQuartzApi(DISPLAYS)
    backend = quartz.create(api=api, host=TERMINAL)
    assert (backend.name, backend.os) == ("quartz", "darwin")
    backend.input.key_down("cmd")
    backend.close()
    assert api.closed
    assert backend.input.held() == ((), ())
