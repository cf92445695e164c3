"""The Qt layer without a display: how menu.py's entries are labelled for Qt
(mnemonics marked, the daemon's '&' kept literal), and that no display is an error
that says so rather than Qt aborting the process."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from holodesk.client.exit_codes import ExitCode
from holodesk.client.tray import icon
from holodesk.client.tray.menu import MenuEntry


def _entry(label: str, mnemonic: str = "") -> MenuEntry:
    return MenuEntry(label, None, lambda: True, mnemonic=mnemonic)


def test_the_mnemonic_letter_is_marked() -> None:
    assert icon.menu_text(_entry("Stop", "t")) == "S&top"
    assert icon.menu_text(_entry("Open live view", "l")) == "Open &live view"
    assert icon.menu_text(_entry("Start task…", "S")) == "&Start task…"


def test_an_ampersand_in_a_label_stays_literal() -> None:
    # A daemon's answer in the status line must not become a mnemonic or vanish.
    assert icon.menu_text(_entry("holodesk (a): idle: succeeded: R&D")) == (
        "holodesk (a): idle: succeeded: R&&D"
    )
    assert icon.menu_text(_entry("Q&A", "A")) == "Q&&&A"


def test_a_mnemonic_not_in_the_label_marks_nothing() -> None:
    assert icon.menu_text(_entry("Pause", "z")) == "Pause"


def test_no_display_is_a_clear_error_not_an_abort(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k not in ("DISPLAY", "WAYLAND_DISPLAY")}
    done = subprocess.run(
        [*(sys.executable, "-m", "holodesk.client", "tray"), "--record-dir", str(tmp_path)],
        env={**env, "QT_QPA_PLATFORM": "xcb"},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == int(ExitCode.BACKEND_UNAVAILABLE), done.stderr
    assert "holodesk tray: no system tray: qt.qpa.xcb: could not connect to display" in (
        done.stderr
    )
    assert "DISPLAY must be set" in done.stderr
    assert "Traceback" not in done.stderr
