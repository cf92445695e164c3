"""Progress bars of `holodesk export`, `locate` and `replay`, through the real
executable: with stderr on a pseudo-terminal a rich bar shows (the command's name,
done/total, escape codes) next to the per-item lines; with stderr on a pipe only
the plain lines, no escape code, no bar. stdout never gets the bar."""

from __future__ import annotations

import fcntl
import json
import os
import pty
import select
import struct
import subprocess
import sys
import termios
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from PIL import Image, ImageDraw, ImageFont

from tests.daemon.support import GUARD_S, HOLODESKD
from tests.data.recordings import (
    RecordingSpec,
    StepSpec,
    click,
    completion,
    done,
    holo_output,
    write_recording,
)

HOLODESK = Path(sys.executable).with_name("holodesk")
ESC = "\x1b["


@dataclass(frozen=True)
class Ran:
    code: int
    stdout: str
    stderr: str


def _env(tmp_path: Path) -> dict[str, str]:
    drop = {"HOLODESK_CONFIG", "HOLODESK_SERVER", "FORCE_COLOR", "NO_COLOR", "TTY_COMPATIBLE"}
    env = {k: v for k, v in os.environ.items() if k not in drop}
    return {**env, "XDG_CONFIG_HOME": str(tmp_path / "no-config"), "TERM": "xterm-256color"}


def on_terminal(env: dict[str, str], *args: str) -> Ran:
    """holodesk with stderr on a pty (120 columns), stdout on a pipe."""
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 120, 0, 0))
    process = subprocess.Popen(
        [str(HOLODESK), *args],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=slave,
        env=env,
    )
    os.close(slave)
    chunks: list[bytes] = []
    deadline = time.monotonic() + GUARD_S * 2  # a hang guard, not a timing assertion
    try:
        while time.monotonic() < deadline:
            ready, _, _ = select.select([master], [], [], 1.0)
            if not ready:
                continue
            try:
                chunk = os.read(master, 65536)
            except OSError:  # EIO: every writer of the pty is gone
                break
            if not chunk:
                break
            chunks.append(chunk)
        stdout, _ = process.communicate(timeout=GUARD_S)
    finally:
        os.close(master)
        if process.poll() is None:
            process.kill()
            process.wait()
    return Ran(process.returncode, stdout.decode(), b"".join(chunks).decode(errors="replace"))


def on_pipe(env: dict[str, str], *args: str) -> Ran:
    done_ = subprocess.run(
        [str(HOLODESK), *args], env=env, capture_output=True, text=True, timeout=GUARD_S * 2
    )
    return Ran(done_.returncode, done_.stdout, done_.stderr)


def _recordings(root: Path, count: int) -> Path:
    answer = holo_output("finished", {"action": "answer", "content": "ok"})
    for number in range(count):
        write_recording(
            root,
            RecordingSpec(
                session_id=f"s-{number}",
                steps=[
                    StepSpec([click("a1", "f1", 10, 10)], completions=[completion(answer)]),
                    StepSpec([done("a2", "ok")], completions=[completion(answer)]),
                ],
            ),
        )
    return root


def test_export_shows_a_bar_on_a_terminal_and_plain_lines_on_a_pipe(tmp_path: Path) -> None:
    root = _recordings(tmp_path / "recordings", 3)
    env = _env(tmp_path)
    shown = on_terminal(env, "export", str(root), "--out", str(tmp_path / "a"))
    assert shown.code == 0, shown.stderr
    assert "exporting" in shown.stderr
    assert "3/3" in shown.stderr
    assert ESC in shown.stderr
    assert "row(s)" in shown.stderr
    assert ESC not in shown.stdout
    plain = on_pipe(env, "export", str(root), "--out", str(tmp_path / "b"))
    assert plain.code == 0, plain.stderr
    assert plain.stderr.count(": 2 row(s)") == 3
    assert "exporting" not in plain.stderr
    assert ESC not in plain.stderr


FONT = "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf"


@pytest.fixture(scope="module")
def ocr_daemon(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A real holodeskd with its default OCR policy; its address."""
    process = subprocess.Popen(
        [str(HOLODESKD), "--listen", "127.0.0.1:0"],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        env={**os.environ, "XDG_CONFIG_HOME": str(tmp_path_factory.mktemp("no-config"))},
    )
    try:
        assert process.stdout is not None
        line = process.stdout.readline()
        assert line.startswith("holodeskd listening on "), line
        yield line.rsplit(" ", 1)[-1].strip()
    finally:
        process.terminate()
        process.wait(GUARD_S)


def _shots(folder: Path, count: int) -> Path:
    folder.mkdir()
    font = ImageFont.truetype(FONT, 32)
    for number in range(count):
        image = Image.new("RGB", (480, 240), "white")
        ImageDraw.Draw(image).text((40 + number * 10, 60), "Submit", fill="black", font=font)
        image.save(folder / f"shot-{number}.png")
    return folder


def test_locate_shows_a_bar_on_a_terminal_and_plain_lines_on_a_pipe(
    tmp_path: Path, ocr_daemon: str
) -> None:
    shots = _shots(tmp_path / "shots", 3)
    things = tmp_path / "things.txt"
    things.write_text("Submit\n")
    env = _env(tmp_path)
    base = ["locate", "--server", ocr_daemon, "--dir", str(shots), "--descriptions", str(things)]
    shown = on_terminal(env, *base, "--out", str(tmp_path / "a.jsonl"))
    assert shown.code == 0, shown.stderr
    assert "locating" in shown.stderr
    assert "3/3" in shown.stderr
    assert ESC in shown.stderr
    assert "3 image(s): 3 located" in shown.stderr
    # Resumed: the bar starts from the images already done and still ends full.
    (tmp_path / "b.jsonl").write_text((tmp_path / "a.jsonl").read_text().splitlines()[0] + "\n")
    plain = on_pipe(env, *base, "--out", str(tmp_path / "b.jsonl"))
    assert plain.code == 0, plain.stderr
    assert "3 image(s): 2 located, 1 already done" in plain.stderr
    assert "locating" not in plain.stderr
    assert ESC not in plain.stderr
    assert len([json.loads(line) for line in (tmp_path / "b.jsonl").read_text().splitlines()]) == 3


def test_replay_shows_a_bar_on_a_terminal_and_plain_lines_on_a_pipe(tmp_path: Path) -> None:
    root = _recordings(tmp_path / "recordings", 1)
    recording = next(root.iterdir())
    env = _env(tmp_path)
    # The fake backend's screen is not the recorded one: steps mismatch (exit 1), and
    # every step is still reported and counted (--start-anyway: past the start check,
    # which would stop it before its first step).
    args = ["replay", str(recording), "--backend", "fake", "--settle", "0", "--start-anyway"]
    shown = on_terminal(env, *args)
    assert shown.code == 1, shown.stderr
    assert "replaying" in shown.stderr
    assert "2/2" in shown.stderr
    assert "step 1:" in shown.stderr
    assert ESC not in shown.stdout  # the table goes to stdout, a pipe here
    assert "step(s) mismatch" in shown.stdout
    plain = on_pipe(env, *args)
    assert plain.code == 1, plain.stderr
    lines = plain.stderr.splitlines()
    assert lines[0] == f"replaying {recording.name}: fill the form"
    steps = [line for line in lines[1:] if line.startswith("  step")]
    assert steps == ["  step 0: MISMATCH", "  step 1: MISMATCH", "  step 2: match"]
    # --start-anyway still says the start did not match (once, as a warning).
    warnings = [line for line in lines[1:] if "warning: the screen does not match" in line]
    assert len(warnings) == 1, lines
