"""The tray's "Open last report": an HTML page rendered from the client's own
recording of the session (SessionOptions.record_dir)."""

from __future__ import annotations

import logging
from pathlib import Path

import platformdirs

from holodesk.client.outcome import SessionOutcome
from holodesk.client.shown import shown
from holodesk.data.format import RecordingError
from holodesk.data.report import write_report

log = logging.getLogger(__name__)

REPORT_FILE = "report.html"


def default_record_dir() -> Path:
    return Path(platformdirs.user_data_dir("holodesk")) / "client-recordings"


def report_for(task: str, outcome: SessionOutcome) -> Path | None:
    """Writes report.html inside the session's recording; None when there is none."""
    if not outcome.recording:
        return None
    recording = Path(outcome.recording)
    try:
        return write_report(recording, recording / REPORT_FILE)
    except (RecordingError, OSError) as error:
        log.warning("no report for %r: %s", task, shown(str(error), multiline=False))
        return None
