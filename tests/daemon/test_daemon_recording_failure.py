"""A recording whose disk fails mid-session, on a real daemon (grpc.aio on 127.0.0.1,
the scripted model policy, a raw RunSession client): the recording stops and says
why, with the failure's own exception, and the session runs on."""

from __future__ import annotations

import logging
import shutil
from pathlib import Path

import pytest

from holodesk.data.format import RecordingError
from holodesk.proto.v1 import agent_pb2
from tests.daemon.support import (
    holo,
    make_frame,
    ok_results,
    running_daemon,
    scripted_policy,
    wait_until,
)

CLICK = holo({"action": "click", "x": 500, "y": 500})
ANSWER = holo({"action": "answer", "content": "saved"}, thought="all done")
RECORDER_LOG = "holodesk.daemon.session.recorder"


def _stopped(caplog: pytest.LogCaptureFixture) -> list[logging.LogRecord]:
    return [
        record
        for record in caplog.records
        if record.name == RECORDER_LOG and record.getMessage().startswith("recording ")
        if "stopped" in record.getMessage()
    ]


async def test_a_recording_whose_folder_vanished_stops_with_its_cause(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.ERROR, logger=RECORDER_LOG)
    policy = scripted_policy([CLICK, ANSWER])
    async with running_daemon([policy], record=True, record_dir=str(tmp_path)) as daemon:
        stream = daemon.stream()
        started = await stream.start()
        assert started.recording_id
        # The disk goes away under the recording: its next frame cannot be written.
        shutil.rmtree(tmp_path / started.recording_id)
        step1 = await stream.observe(make_frame("f1", 64, 48))
        await wait_until(lambda: bool(_stopped(caplog)), "the recorder to report the stop")
        answer = await daemon.agent.ReportReward(
            agent_pb2.ReportRewardRequest(session_id=started.session_id, reward=1.0)
        )
        assert not answer.recorded
        # The session does not depend on its recording.
        last = await stream.observe(make_frame("f2", 64, 48), ok_results(step1.actions))
        assert last.ended.answer == "saved"
        await stream.finished_ok()
    [record] = _stopped(caplog)
    assert record.exc_info is not None, "the stop is logged without its traceback"
    error = record.exc_info[1]
    assert isinstance(error, RecordingError)
    # The writer's own failure, chained: the missing folder, not only its text.
    assert isinstance(error.__cause__, FileNotFoundError)
