"""`holodesk report RECORDING --out page.html`: one self-contained HTML page of a session."""

from __future__ import annotations

import argparse
from pathlib import Path

from holodesk.client.argtypes import non_negative_int
from holodesk.client.cli import Command, command_error
from holodesk.client.exit_codes import ExitCode
from holodesk.data.format import RecordingError
from holodesk.data.report import ReportOptions, write_report
from holodesk.data.stepview import LoadedRecording


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("recording", type=Path, metavar="RECORDING", help="a recording directory")
    parser.add_argument(
        "--out",
        type=Path,
        metavar="PAGE.html",
        help="where to write the page (default: <recording id>.html next to the recording)",
    )
    parser.add_argument(
        "--max-image-width",
        type=non_negative_int,
        default=0,
        metavar="PIXELS",
        help="embed wider frames downscaled to this width, as JPEG, for a smaller page "
        "(default: 0, frames as recorded)",
    )


def run(args: argparse.Namespace) -> int:
    try:
        recording = LoadedRecording.load(args.recording)
    except RecordingError as error:
        return command_error("report", error)
    # Beside the recording, wherever it is run from: the page is where its session is.
    out: Path = args.out or args.recording.resolve().parent / f"{recording.recording_id}.html"
    try:
        written = write_report(recording, out, ReportOptions(max_image_width=args.max_image_width))
    except OSError as error:
        return command_error("report", f"cannot write {out}: {error}", ExitCode.FAILED)
    print(written)
    return ExitCode.SUCCEEDED


COMMAND = Command(
    name="report",
    help="render a recorded session as one self-contained HTML page",
    description=(
        "Write one HTML page (images inline, no scripts, nothing loaded from the network): "
        "the task and outcome, then each step's frame with its clicks, drags and scrolls "
        "drawn over it, the model's thought, the actions' results and timings."
    ),
    configure=configure,
    run=run,
)
