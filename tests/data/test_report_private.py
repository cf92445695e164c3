"""The HTML report embeds every screen of a session, so it is as private as the
recording it comes from: 0600, in a folder created 0700 when it has to be made,
whatever the umask, also when it replaces an older page or a leftover temporary.
Written through `holodesk report`, which every writer of reports shares with the
tray and `holodesk mcp`'s run_task (holodesk.data.report.write_report).
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest

from holodesk.client.cli import main
from holodesk.data.stepview import LoadedRecording

from .recordings import RecordingSpec, StepSpec, click, done, ok, write_recording


@pytest.fixture
def open_umask() -> Iterator[None]:
    """A shell's usual umask, under which a plain write makes a file 0644."""
    previous = os.umask(0o022)
    yield
    os.umask(previous)


@pytest.fixture
def recording(tmp_path: Path) -> Path:
    steps = [
        StepSpec([click("c1", "f1", 10, 10)], results=ok("c1")),
        StepSpec([done("d", "ok")], results=ok("d")),
    ]
    return write_recording(tmp_path / "recordings", RecordingSpec(session_id="s-1", steps=steps))


def _mode(path: Path) -> int:
    return stat.S_IMODE(os.stat(path).st_mode)


def test_the_page_beside_the_recording_is_0600(
    recording: Path, open_umask: None, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["report", str(recording)]) == 0
    page = Path(capsys.readouterr().out.strip())
    assert page.parent == recording.parent
    assert page.read_text(encoding="utf-8").startswith("<!DOCTYPE html>")
    assert _mode(recording) == 0o700
    assert _mode(page) == 0o600


def test_a_new_folder_for_the_page_is_made_0700(
    recording: Path, tmp_path: Path, open_umask: None
) -> None:
    page = tmp_path / "pages" / "run.html"
    assert main(["report", str(recording), "--out", str(page)]) == 0
    assert _mode(page.parent) == 0o700
    assert _mode(page) == 0o600


def test_an_older_public_page_and_a_public_leftover_are_replaced_private(
    recording: Path, tmp_path: Path, open_umask: None
) -> None:
    page = tmp_path / "run.html"
    page.write_text("old")
    leftover = page.with_name(f".{page.name}.tmp")
    leftover.write_text("half")
    os.chmod(page, 0o644)
    os.chmod(leftover, 0o644)
    assert main(["report", str(recording), "--out", str(page)]) == 0
    assert _mode(page) == 0o600
    assert not leftover.exists()
    assert LoadedRecording.load(recording).recording_id in page.read_text(encoding="utf-8")
