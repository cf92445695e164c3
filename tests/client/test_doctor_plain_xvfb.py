"""The real `holodesk doctor` command on a plain Xvfb, started as a new user would
(`Xvfb :N -screen 0 1280x800x24`, no -noreset), with and without XTEST and RECORD.

Such a server resets whenever its last client disconnects, and kills a connection
it accepted just before ("Connection reset by peer"): the doctor once closed the
backend's connections and at once opened the hotkey's, and died in a traceback
about two runs in three. Winning that race proves nothing, so a run on a complete
server also reads Xvfb's audit log: between its first connection and its last, the
doctor must never leave the server without a client.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from dataclasses import dataclass

import pytest

from holodesk.client.exit_codes import ExitCode
from holodesk.platform.select import ENV_VAR
from holodesk.platform.virtual_display import VirtualDisplay

pytestmark = pytest.mark.x11

MACHINE_CHECKS = ["display", "capture", "input", "permissions", "e-stop hotkey"]
_AUDIT = re.compile(r"client (\d+) (connected|disconnected)|last message repeated (\d+) times")


@dataclass(frozen=True)
class Run:
    code: int
    out: str
    err: str
    # Each row of the findings table: check -> (status, finding, fix).
    rows: dict[str, tuple[str, str, str]]
    # Xvfb's audit log of the run (-audit 4).
    audit: str


def doctor(*xvfb_args: str, runs: int = 1) -> list[Run]:
    """`holodesk doctor` in a subprocess `runs` times, on a fresh Xvfb that resets when
    idle (the server is fresh again for each run: nothing else is connected)."""
    args = ("-audit", "4", *xvfb_args)
    done = []
    with VirtualDisplay(extra_args=args, reset_when_idle=True) as server:
        env = {k: v for k, v in os.environ.items() if k not in _UNWANTED}
        # Wide enough that no table cell wraps: one line per row.
        env.update(DISPLAY=server.display, COLUMNS="400")
        for _ in range(runs):
            logged = len(server.output())
            run = subprocess.run(
                # --server '': no daemon checks (their default, this machine's, varies).
                [sys.executable, "-m", "holodesk.client", "doctor", "--server", ""],
                env=env,
                capture_output=True,
                text=True,
                timeout=120,
            )
            audit = server.output()[logged:]
            done.append(Run(run.returncode, run.stdout, run.stderr, _rows(run.stdout), audit))
    return done


# A daemon, another backend or a Wayland session would change which checks run.
_UNWANTED = {"HOLODESK_SERVER", ENV_VAR, "WAYLAND_DISPLAY", "XDG_SESSION_TYPE"}


def _rows(table: str) -> dict[str, tuple[str, str, str]]:
    rows = {}
    for line in table.splitlines():
        cells = [cell.strip() for cell in line.split("│")]
        if len(cells) == 6 and cells[1] and cells[1] != "check":
            rows[cells[1]] = (cells[2], cells[3], cells[4])
    return rows


def idle_moments(audit: str) -> list[str]:
    """Each moment the server was left without clients before the run's end, or killed
    a connection before its setup finished (what a reset does to a newcomer)."""
    events: list[tuple[int, str]] = []
    for match in _AUDIT.finditer(audit):
        client, what, repeated = match.groups()
        if repeated:  # Xvfb folds a repeated line into this one
            events += events[-1:] * int(repeated)
        else:
            events.append((int(client), what))
    connected: set[int] = set()
    found = []
    for index, (client, what) in enumerate(events):
        if what == "connected":
            connected.add(client)
        elif client not in connected:
            found.append(f"event {index}: client {client} was dropped before its setup")
        else:
            connected.remove(client)
            if not connected and index < len(events) - 1:
                found.append(f"event {index}: no clients left, yet the run went on")
    return found


def _show(run: Run) -> str:
    return f"exit {run.code}\n{run.out}\n{run.err}\n{run.audit}"


def test_a_fresh_xvfb_gets_a_table_and_exits_zero() -> None:
    (run,) = doctor()
    assert "Traceback" not in run.out + run.err, _show(run)
    assert run.code == ExitCode.SUCCEEDED, _show(run)  # a black screen only warns
    assert "holodesk doctor" in run.out
    assert list(run.rows) == [*MACHINE_CHECKS, "daemon"], _show(run)
    assert run.rows["capture"][0] == "warn"  # nothing drawn yet: a black root window
    for name in ("display", "input", "permissions", "e-stop hotkey"):
        assert run.rows[name][0] == "ok", _show(run)
    assert run.rows["e-stop hotkey"][1] == "ctrl+alt+shift+escape can be listened for"
    # The backend stays connected through the hotkey check: the server never resets
    # mid-run.
    assert idle_moments(run.audit) == [], _show(run)


def test_without_xtest_input_fails_and_the_hotkey_is_still_heard() -> None:
    # The X server switches RECORD and XTEST together: without XTEST the backend
    # refuses, closes its connections and the server resets just as the hotkey's
    # connection arrives. That race is won or lost per run (lost about two in three
    # before the fix), hence three runs. The hotkey is a key grab, which needs
    # neither extension: a person's keys still stop a session.
    for run in doctor("-extension", "RECORD", runs=3):
        assert "Traceback" not in run.out + run.err, _show(run)
        assert run.code == ExitCode.FAILED, _show(run)  # no XTEST: no input, a failure
        assert list(run.rows) == [*MACHINE_CHECKS, "daemon"], _show(run)
        status, finding, fix = run.rows["display"]
        assert status == "fail", _show(run)
        assert "has no XTEST extension" in finding
        assert "-extension RECORD" in fix
        status, finding, _ = run.rows["e-stop hotkey"]
        assert status == "ok", _show(run)
        assert finding == "ctrl+alt+shift+escape can be listened for", _show(run)
