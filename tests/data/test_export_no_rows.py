"""`holodesk export` says why a recording gave no rows, each reason by name.

Recordings written with the real RecordingWriter: one that never got a frame or a
step, one with a frame and no actions, one of the OCR baseline (actions, never a
prompt), one whose model output was not recorded, one the filter leaves out; and
the two recordings a real session leaves (the daemon's and the client's own), of
an OCR session run through the real daemon and client. The export runs through
the CLI, as a user runs it, and its report is read.
"""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime
from pathlib import Path

import pytest

from holodesk.client.cli import main
from holodesk.client.events import Outcome
from holodesk.client.exit_codes import ExitCode
from holodesk.client.session import SessionOptions, run_session
from holodesk.daemon.config import ServerConfig
from holodesk.daemon.policies.ocr.policy import OcrPolicy
from holodesk.daemon.rpc.server import serve
from holodesk.data.export import export
from holodesk.data.format import ClientInfo, Manifest, make_recording_id
from holodesk.data.stepview import find_recordings
from holodesk.data.writer import RecordingWriter
from holodesk.platform.backends import fake

from .recordings import RecordingSpec, StepSpec, click, done, png, write_recording


def frame_only(root: Path) -> Path:
    """A session that sent its first frame and was cancelled before any step."""
    started = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
    manifest = Manifest(
        recording_id=make_recording_id("frame-only", started),
        session_id="frame-only",
        task="t",
        policy="holo2",
        client=ClientInfo(os="linux", backend="x11"),
        started_at=started,
    )
    writer = RecordingWriter.create(root, manifest)
    writer.write_frame(1, "f1", png(32, 20, (1, 2, 3)), encoding="png", width=32, height=20)
    writer.finish("cancelled", steps=0)
    writer.close()
    return writer.path


@pytest.fixture
def root(tmp_path: Path) -> Path:
    root = tmp_path / "recordings"
    write_recording(root, RecordingSpec(session_id="no-steps", steps=[], outcome="cancelled"))
    frame_only(root)
    ocr_steps = [StepSpec([click("a1", "f1", 10, 10)]), StepSpec([done("a2", "ok")])]
    write_recording(root, RecordingSpec(session_id="ocr", policy="ocr", steps=ocr_steps))
    unrecorded = [StepSpec([click("a1", "f1", 10, 10)], completions=[])]
    write_recording(root, RecordingSpec(session_id="no-output", steps=unrecorded))
    write_recording(root, RecordingSpec(session_id="failed", outcome="failed", steps=ocr_steps))
    return root


def test_each_recording_without_rows_is_named_with_its_reason(
    root: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(
        [
            "export",
            str(root),
            "--out",
            str(tmp_path / "out"),
            "--outcome",
            "succeeded,cancelled",
        ]
    )
    assert code == ExitCode.SUCCEEDED
    report = capsys.readouterr().err
    lines = {
        line.split(":", 1)[0].strip(): line for line in report.splitlines() if "skipped" in line
    }
    # Recording ids are "<start time>-<session id>".
    why = {key.split("-", 1)[1]: line for key, line in lines.items()}
    assert "no frames and no actions were recorded" in why["no-steps"]
    assert "no actions were recorded" in why["frame-only"]
    assert "no frames" not in why["frame-only"]
    assert "none of its 2 step(s) recorded a prompt (policy 'ocr'" in why["ocr"]
    assert "recorded the model's output" in why["no-output"]
    assert "outcome failed" in why["failed"]
    assert "0 row(s) from 4 of 5 recording(s)" in report


def test_the_summary_holds_the_reasons_for_callers_of_export(root: Path, tmp_path: Path) -> None:
    summary = export(sorted(root.iterdir()), tmp_path / "out", "jsonl")
    assert summary.rows == 0
    reasons = [why for _, why in summary.skipped]
    assert len(reasons) == 5
    assert all(why.startswith("no rows: ") for why in reasons)


def test_a_real_ocr_session_leaves_two_recordings_and_neither_gives_rows_and_each_says_why(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    daemon_dir, client_dir = tmp_path / "daemon", tmp_path / "client"

    async def session() -> None:
        config = ServerConfig(listen="127.0.0.1:0", record=True, record_dir=str(daemon_dir))
        async with serve(config, policies=[OcrPolicy()]) as running:
            await asyncio.shield(running.policies_started)
            options = SessionOptions(record_dir=client_dir)
            outcome = await run_session(running.address, 'answer "ok"', fake.create(), options)
        assert outcome.outcome is Outcome.SUCCEEDED, outcome.reason

    asyncio.run(session())
    (daemon_recording,) = find_recordings([daemon_dir])
    (client_recording,) = find_recordings([client_dir])
    out = tmp_path / "out"
    assert main(["export", str(daemon_recording), str(client_recording), "--out", str(out)]) == 0
    report = capsys.readouterr().err
    assert "recorded a prompt (policy 'ocr' is not a model" in report
    assert "a client's own recording (holodesk run --record) holds no prompts" in report
    assert "0 row(s) from 2 of 2 recording(s)" in report
