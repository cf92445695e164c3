"""Names read from a recording never become paths outside where they belong, and
recordings are created private (0600 files, 0700 directories) whatever the umask.

A crafted recording is a real one (RecordingWriter) whose recording.json was then
edited to name itself `../../escaped/pwned` or an absolute path; `holodesk report`,
`export` and `replay` are run on it through the CLI.
"""

from __future__ import annotations

import json
import os
import stat
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest

from holodesk.client.cli import main
from holodesk.client.exit_codes import ExitCode
from holodesk.daemon.session.recorder import Recorder
from holodesk.data.format import (
    MANIFEST_FILE,
    Manifest,
    RecordingError,
    check_name,
    frame_file_name,
    make_recording_id,
    parse_manifest,
)

from .recordings import RecordingSpec, StepSpec, click, done, ok, write_recording

pytestmark = pytest.mark.abuse


def _recording(root: Path) -> Path:
    steps = [
        StepSpec([click("c1", "f1", 10, 10)], results=ok("c1")),
        StepSpec([done("d", "ok")], results=ok("d")),
    ]
    return write_recording(root, RecordingSpec(session_id="s-1", steps=steps))


def _craft(recording: Path, recording_id: str) -> Path:
    manifest_path = recording / MANIFEST_FILE
    manifest = json.loads(manifest_path.read_text())
    manifest["recording_id"] = recording_id
    manifest_path.write_text(json.dumps(manifest))
    return recording


def _files_under(root: Path) -> set[Path]:
    return {path for path in root.rglob("*") if path.is_file()}


@pytest.fixture
def work(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A working directory two levels down, so `../..` lands inside tmp_path."""
    here = tmp_path / "a" / "b"
    here.mkdir(parents=True)
    monkeypatch.chdir(here)
    return here


@pytest.mark.parametrize("kind", ["relative", "absolute"])
def test_report_refuses_a_recording_that_names_a_path(
    tmp_path: Path, work: Path, kind: str, capsys: pytest.CaptureFixture[str]
) -> None:
    escaped = "../../escaped/pwned" if kind == "relative" else str(tmp_path / "abs" / "pwned")
    recording = _craft(_recording(tmp_path / "recordings"), escaped)
    before = _files_under(tmp_path)
    assert main(["report", str(recording)]) == ExitCode.USAGE
    assert _files_under(tmp_path) == before
    assert "recording_id" in capsys.readouterr().err


def test_export_and_replay_refuse_it_too(
    tmp_path: Path, work: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    recording = _craft(_recording(tmp_path / "recordings"), "../../escaped/pwned")
    before = _files_under(tmp_path)
    out = tmp_path / "dataset"
    main(["export", str(recording), "--out", str(out)])
    assert "skipped" in capsys.readouterr().err  # the recording, not its frames
    replay = ["replay", str(recording), "--backend", "fake", "--diff-dir", str(tmp_path / "d")]
    assert main(replay) == ExitCode.USAGE
    assert "recording_id" in capsys.readouterr().err
    # Nothing was written but the (empty) dataset where it was asked for.
    assert {p for p in _files_under(tmp_path) - before if out not in p.parents} == set()
    assert not list(out.rglob("*.png"))
    assert not (tmp_path / "escaped").exists()


def test_a_good_recording_still_reports_next_to_itself(tmp_path: Path, work: Path) -> None:
    recording = _recording(tmp_path / "recordings")
    assert main(["report", str(recording)]) == ExitCode.SUCCEEDED
    assert (recording.parent / f"{recording.name}.html").is_file()
    assert not (work / f"{recording.name}.html").exists()


@pytest.mark.parametrize(
    "name",
    ["", ".", "..", "../x", "a/b", "a\\b", "/abs", "C:x", "x\x00y", "a b", "é", "x" * 200],
)
def test_only_one_plain_path_component_is_a_name(name: str) -> None:
    with pytest.raises(RecordingError):
        check_name(name, "recording_id")
    with pytest.raises(RecordingError):
        _manifest_with(name)


def _manifest_with(recording_id: str) -> Manifest:
    return parse_manifest(
        {
            "format": "holodesk-recording",
            "version": 1,
            "recording_id": recording_id,
            "session_id": "s",
            "started_at": "2026-03-01T12:00:00Z",
        }
    )


@pytest.mark.parametrize("hostile", ["../../escaped", "/etc/passwd", "..", ".", "a\\b", "\x00"])
def test_names_made_from_the_wire_are_names(hostile: str) -> None:
    """A session id or frame id from the wire (the client's recorder names its folder
    after the daemon's session id) becomes one plain name under its root."""
    started = datetime(2026, 3, 1, 12, 0, 0, tzinfo=UTC)
    assert check_name(make_recording_id(hostile, started), "recording_id")
    folder, name = frame_file_name(1, hostile, "png").split("/")
    assert folder == "frames"
    assert check_name(name, "frame file")
    assert check_name("20260301T120000Z-s-1", "recording_id") == "20260301T120000Z-s-1"


# -- item 11: private files ----------------------------------------------------------


@pytest.fixture
def open_umask() -> Iterator[None]:
    """The umask of a daemon started by hand (not under its unit's UMask=0077)."""
    previous = os.umask(0o022)
    yield
    os.umask(previous)


def _mode(path: Path) -> int:
    return stat.S_IMODE(os.stat(path).st_mode)


def test_recordings_are_private_whatever_the_umask(tmp_path: Path, open_umask: None) -> None:
    root = tmp_path / "recordings"
    recording = _recording(root)
    assert _mode(root) == 0o700
    assert _mode(recording) == 0o700
    assert _mode(recording / "frames") == 0o700
    files = _files_under(recording)
    assert {p.name for p in files} >= {"recording.json", "events.jsonl"}
    assert any(p.parent.name == "frames" for p in files)
    for path in files:
        assert _mode(path) == 0o600, path


def test_the_daemons_record_dir_is_private(tmp_path: Path, open_umask: None) -> None:
    root = tmp_path / "daemon" / "recordings"
    Recorder(root, default_on=True).prepare()
    assert _mode(root) == 0o700
