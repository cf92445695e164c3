"""`holodesk replay RECORDING`: re-run a recorded session's actions here, compare the screens.

A regression test for an app or a desktop: exit 0 when every step's screen
matches the recording within the threshold, 1 otherwise. A screen that does not
match the recording's start stops the replay before its first action (exit 1,
saying what differs) unless --start-anyway asks to act regardless.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from holodesk.client.argtypes import byte_value, fraction, non_negative_float
from holodesk.client.cli import Command, command_error
from holodesk.client.exit_codes import ExitCode
from holodesk.client.progress import BatchProgress
from holodesk.client.replay.compare import DEFAULT_TOLERANCE
from holodesk.client.replay.runner import (
    DEFAULT_LOCAL_THRESHOLD,
    DEFAULT_SETTLE_S,
    DEFAULT_THRESHOLD,
    Replayer,
    ReplayError,
    ReplayResult,
    ReplaySettings,
    StepReplay,
)
from holodesk.client.shown import shown
from holodesk.data.format import RecordingError
from holodesk.data.stepview import LoadedRecording
from holodesk.platform.errors import PlatformError
from holodesk.platform.select import chosen_backend_name, open_backend


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("recording", type=Path, metavar="RECORDING", help="a recording directory")
    parser.add_argument("--backend", help="platform backend (default: this OS's own)")
    parser.add_argument(
        "--url",
        help="web backend: the page to start from (the page opens at the recorded size)",
    )
    parser.add_argument(
        "--threshold",
        type=fraction,
        default=DEFAULT_THRESHOLD,
        metavar="FRACTION",
        help="fraction of a frame's pixels that may differ (default: %(default)s)",
    )
    parser.add_argument(
        "--local-threshold",
        type=fraction,
        default=DEFAULT_LOCAL_THRESHOLD,
        metavar="FRACTION",
        help="fraction of the densest text-line-sized window (a tenth of the frame wide, "
        "a quarter of that high) that may differ: a wrong word shows there, a clock's "
        "tick does not (default: %(default)s)",
    )
    parser.add_argument(
        "--tolerance",
        type=byte_value,
        default=DEFAULT_TOLERANCE,
        metavar="0-255",
        help="per-channel difference still counted as the same pixel (default: %(default)s)",
    )
    parser.add_argument(
        "--settle",
        type=non_negative_float,
        default=DEFAULT_SETTLE_S,
        metavar="SECONDS",
        help="how long to wait for a screen to match before calling it a mismatch "
        "(default: %(default)s)",
    )
    parser.add_argument(
        "--diff-dir",
        type=Path,
        metavar="DIR",
        help="write side-by-side pictures (recorded | replayed | changes) of mismatching steps",
    )
    parser.add_argument(
        "--no-start-check",
        action="store_true",
        help="do not compare the screen with the recording's first frame before acting",
    )
    parser.add_argument(
        "--start-anyway",
        action="store_true",
        help="replay even when the screen before the first action does not match the "
        "recording's first frame (by default replay stops there, having run nothing)",
    )


def run(args: argparse.Namespace) -> int:
    try:
        settings = ReplaySettings(
            threshold=args.threshold,
            local_threshold=args.local_threshold,
            tolerance=args.tolerance,
            settle_s=args.settle,
            diff_dir=args.diff_dir,
            check_start=not args.no_start_check,
            start_anyway=args.start_anyway,
        )
        recording = LoadedRecording.load(args.recording)
    except (RecordingError, ValueError) as error:
        return command_error("replay", error)
    try:
        options = backend_options(args.backend, args.url, recording)
    except ValueError as error:
        return command_error("replay", error)
    try:
        backend = open_backend(args.backend, **options)
    except PlatformError as error:
        print(f"holodesk replay: {error}", file=sys.stderr)
        return ExitCode.BACKEND_UNAVAILABLE
    try:
        with BatchProgress("replaying", total=len(recording.steps())) as bar:
            bar.note(
                shown(
                    f"replaying {escape(recording.recording_id)}: {escape(recording.manifest.task)}"
                ),
                markup=True,
            )

            def step_done(step: StepReplay) -> None:
                bar.note(_line(step), markup=True)
                if step.step:  # step 0 is the check before the first step
                    bar.advance()
                elif not step.matched and settings.start_anyway:
                    bar.note(shown(f"holodesk replay: warning: {start_mismatch(step, settings)}"))

            result = Replayer(recording, backend, settings, on_step=step_done).run()
    except (ReplayError, RecordingError) as error:
        return command_error("replay", error, ExitCode.FAILED)
    except KeyboardInterrupt:
        print("holodesk replay: interrupted", file=sys.stderr)
        return ExitCode.CANCELLED
    finally:
        backend.close()
    Console(highlight=False).print(table(result, settings))
    if result.stopped_at_start:
        message = (
            f"{start_mismatch(result.steps[0], settings)}. Replay stopped before its first "
            "step: no action was run. Put the app back in the state the recording started "
            "from, or pass --start-anyway to replay on this screen regardless"
        )
        if settings.diff_dir is None:
            message += " (--diff-dir DIR draws the difference)"
        return command_error("replay", message, ExitCode.FAILED)
    return ExitCode.SUCCEEDED if result.ok else ExitCode.FAILED


def start_mismatch(step: StepReplay, settings: ReplaySettings) -> str:
    """Step 0's mismatch in words: how much differs against which limit, and where."""
    said = "the screen does not match the recording's start (step 0, before the first action)"
    diff = step.diff
    if diff is None:
        return said
    said += (
        f": {diff.fraction:.2%} of the frame differs (at most {settings.threshold:.2%} may), "
        f"{diff.local_fraction:.0%} of its densest text line "
        f"(at most {settings.local_threshold:.0%})"
    )
    if diff.bbox is not None:
        left, top, right, bottom = diff.bbox
        said += f", changes within {right - left}×{bottom - top} at ({left}, {top})"
    if step.diff_file is not None:
        said += f"; diff: {step.diff_file}"
    return said


def backend_options(
    name: str | None, url: str | None, recording: LoadedRecording
) -> dict[str, Any]:
    """Options for open_backend: a web page opens at the recorded page's size and scale."""
    if chosen_backend_name(name) != "web":
        if url:
            raise ValueError("--url is for the web backend (--backend web)")
        return {}
    options: dict[str, Any] = {} if not url else {"url": url}
    displays = recording.manifest.displays
    primary = next((d for d in displays if d.get("primary")), displays[0] if displays else None)
    if primary is not None:
        scale = float(primary.get("scale_factor") or 1.0)
        bounds = primary.get("bounds") or {}
        width, height = int(bounds.get("width", 0)), int(bounds.get("height", 0))
        if width > 0 and height > 0:
            # The recorded bounds are physical pixels; the page is sized in CSS pixels.
            options.update(
                width=round(width / scale), height=round(height / scale), device_scale_factor=scale
            )
    return options


def _line(step: StepReplay) -> str:
    verdict = "[green]match[/]" if step.matched else "[bold red]MISMATCH[/]"
    return f"  step {step.step}: {verdict}"


def table(result: ReplayResult, settings: ReplaySettings) -> Table:
    out = Table(title="replay", title_justify="left")
    out.add_column("step", justify="right")
    out.add_column("actions", justify="right")
    out.add_column("differing", justify="right")
    out.add_column("densest line", justify="right")
    out.add_column("changed region")
    out.add_column("result")
    out.add_column("notes")
    for step in result.steps:
        diff = step.diff
        differing = "—" if diff is None else f"{diff.fraction:.2%}"
        local = "—" if diff is None else f"{diff.local_fraction:.1%}"
        region = "—"
        if diff is not None and diff.bbox is not None:
            left, top, right, bottom = diff.bbox
            region = f"{right - left}×{bottom - top} at ({left}, {top})"
        verdict = "[green]match[/]" if step.matched else "[bold red]MISMATCH[/]"
        notes = [*step.problems, *([step.note] if step.note else [])]
        if step.diff_file is not None:
            notes.append(f"diff: {step.diff_file}")
        actions = "start" if step.step == 0 else f"{step.executed}/{step.recorded_actions}"
        out.add_row(
            str(step.step), actions, differing, local, region, verdict, escape("; ".join(notes))
        )
    mismatched = sum(not step.matched for step in result.steps)
    verdict = "all steps match" if not mismatched else f"{mismatched} step(s) mismatch"
    # The verdict first: a narrow terminal wraps the rest, not it.
    out.caption = (
        f"{verdict} (thresholds: {settings.threshold:.2%} of the frame, "
        f"{settings.local_threshold:.0%} of its densest line; tolerance {settings.tolerance})"
    )
    return out


COMMAND = Command(
    name="replay",
    help="re-run a recording's actions on this desktop and compare the screens",
    description=(
        "Execute each recorded step's actions through this client's platform backend, "
        "capture the screen as the client did, and compare it with the recorded frame. "
        "A screen that does not match the recording's start stops the replay before its "
        "first action (see --start-anyway). "
        "Exit 0 when every step matches within the threshold, 1 otherwise."
    ),
    configure=configure,
    run=run,
)
