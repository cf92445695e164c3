"""Every place that counts a session's steps counts the same steps.

A step is one decision of the policy on one screen (docs/recording-format.md, "What a
step is"): the batch of actions it sent, or, last, the done or fail that ended the
session with nothing to run. The OCR baseline's `answer` is such a last step: it
once made `holodesk run` and its --json outcome say 3 steps while the --json stream
held 2 step events and the report of the client's recording said 2.

A real holodeskd (the OCR policy, recording too) and `holodesk run` on the fake
backend; the reports are `holodesk report`'s pages of both recordings.
"""

from __future__ import annotations

import json
import re
import subprocess
from collections.abc import Iterator
from pathlib import Path

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc

from holodesk.client.cli import main
from holodesk.client.exit_codes import ExitCode
from holodesk.data.stepview import LoadedRecording, find_recordings
from tests.daemon.support import GUARD_S, HOLODESKD

TASK = 'press tab; press tab; answer "42"'
STEPS = 3  # two presses and the answer


@pytest.fixture
def daemon(tmp_path: Path) -> Iterator[tuple[str, Path]]:
    """A real holodeskd with the OCR policy, recording every session; its address."""
    records = tmp_path / "daemon-recordings"
    flags = ["--listen", "127.0.0.1:0", "--policy", "ocr", "--record", "on"]
    process = subprocess.Popen(
        [str(HOLODESKD), *flags, "--record-dir", str(records)],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    try:
        assert process.stdout is not None
        line = process.stdout.readline()
        assert "listening on" in line, line
        address = line.rsplit(" ", 1)[-1].strip()
        # It listens before its policy has started (health NOT_SERVING meanwhile): a
        # session sent then is refused UNAVAILABLE, as a loaded CI run once showed.
        _wait_serving(address)
        yield address, records
    finally:
        process.terminate()
        process.wait(timeout=30)


def _wait_serving(address: str) -> None:
    with grpc.insecure_channel(address) as channel:
        stub = health_pb2_grpc.HealthStub(channel)
        request = health_pb2.HealthCheckRequest(service="")
        for reply in stub.Watch(request, timeout=GUARD_S):
            if reply.status == health_pb2.HealthCheckResponse.SERVING:
                return


def _report_steps(recording: Path, capsys: pytest.CaptureFixture[str]) -> int:
    """The Steps the header of `holodesk report`'s page says (its last step, which
    ran nothing, checked to say how it ended the session)."""
    assert main(["report", str(recording)]) == 0
    page = Path(capsys.readouterr().out.strip()).read_text(encoding="utf-8")
    found = re.search(r"<dt>Steps</dt><dd>(\d+)</dd>", page)
    assert found, "no Steps in the report's header"
    assert page.count('<section class="step" id="step-') == int(found.group(1))
    last = page[page.rindex('<section class="step" id="step-') :]
    assert "ended the session, succeeded: 42; nothing to run" in last
    return int(found.group(1))


def test_json_text_and_both_reports_count_the_answer_step(
    daemon: tuple[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    address, daemon_records = daemon
    client_records = tmp_path / "client-recordings"
    run = ["run", "--server", address, "--backend", "fake", "--no-estop"]
    run += ["--record", str(client_records)]
    assert main([*run, "--json", TASK]) == ExitCode.SUCCEEDED
    events = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    steps = [e for e in events if e["event"] == "step"]
    (outcome,) = [e for e in events if e["event"] == "outcome"]
    assert outcome["steps"] == STEPS
    assert [e["step"] for e in steps] == [1, 2, 3]
    assert [e["actions"] for e in steps] == [1, 1, 0]
    assert steps[-1]["ending"] == "done '42'"
    assert all(e["ending"] == "" for e in steps[:-1])

    assert main([*run, TASK]) == ExitCode.SUCCEEDED
    out, err = capsys.readouterr()
    assert out.splitlines()[0] == "42"
    assert re.search(r"^step 3 +done '42'$", err, re.MULTILINE), err
    assert f"succeeded after {STEPS} step(s)" in err

    for recording in [*find_recordings([client_records]), *find_recordings([daemon_records])]:
        assert len(LoadedRecording.load(recording).steps()) == STEPS, recording
        assert _report_steps(recording, capsys) == STEPS
