"""`holodesk export RECORDINGS... --out DIR`: recordings -> an SFT dataset (JSONL or Parquet),
or the token rows an RL trainer reads (--format trainer)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from holodesk.client.argtypes import number
from holodesk.client.cli import Command, command_error
from holodesk.client.exit_codes import ExitCode
from holodesk.client.progress import BatchProgress
from holodesk.client.shown import shown
from holodesk.data.export import (
    DATASET_FILES,
    FORMATS,
    ExportFilter,
    ExportFormat,
    export,
)
from holodesk.data.format import OUTCOMES, RecordingError
from holodesk.data.stepview import LoadedRecording, find_recordings


def _names(text: str) -> list[str]:
    names = [name.strip() for name in text.split(",") if name.strip()]
    if not names:
        raise argparse.ArgumentTypeError(f"expected a comma-separated list, got {text!r}")
    return names


def _outcomes(text: str) -> list[str]:
    names = _names(text)
    unknown = [name for name in names if name not in OUTCOMES]
    if unknown:
        raise argparse.ArgumentTypeError(
            f"unknown outcome(s) {', '.join(unknown)}: choose from {', '.join(OUTCOMES)}"
        )
    return names


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "recordings",
        nargs="+",
        type=Path,
        metavar="RECORDING",
        help="recording directories, or folders of recordings (e.g. the daemon's --record-dir)",
    )
    parser.add_argument("--out", type=Path, required=True, metavar="DIR", help="output folder")
    parser.add_argument(
        "--format",
        choices=FORMATS,
        default="jsonl",
        help="jsonl: data.jsonl + images/; parquet: data.parquet with the images embedded; "
        "trainer: trainer.parquet, one row per sampled completion with its prompt and "
        "completion token ids, sampling logprobs, loss mask, policy version and images, for "
        "an RL trainer (parquet and trainer need holodesk-data[parquet]) (default: %(default)s)",
    )
    parser.add_argument(
        "--outcome",
        type=_outcomes,
        action="append",
        metavar="OUTCOME[,OUTCOME...]",
        help=f"keep only sessions that ended so ({', '.join(OUTCOMES)}; repeatable)",
    )
    parser.add_argument(
        "--min-reward",
        type=number,
        metavar="X",
        help="keep only sessions whose reported reward is at least X",
    )
    parser.add_argument(
        "--policy",
        type=_names,
        action="append",
        metavar="NAME[,NAME...]",
        help="keep only sessions of these daemon policies (repeatable)",
    )
    parser.add_argument(
        "--dialect",
        type=_names,
        action="append",
        metavar="NAME[,NAME...]",
        help="keep only sessions of these prompt dialects (repeatable)",
    )
    parser.add_argument(
        "--overwrite", action="store_true", help="replace an existing dataset file in DIR"
    )


def run(args: argparse.Namespace) -> int:
    export_format: ExportFormat = args.format
    selection = ExportFilter(
        outcomes=_flat(args.outcome),
        min_reward=args.min_reward,
        policies=_flat(args.policy),
        dialects=_flat(args.dialect),
    )
    try:
        paths = find_recordings(args.recordings)
    except RecordingError as error:
        return command_error("export", str(error))

    try:
        with BatchProgress("exporting", total=len(paths)) as bar:

            def progress(recording: LoadedRecording, rows: int) -> None:
                bar.note(shown(f"  {recording.recording_id}: {rows} row(s)"))
                bar.advance()

            summary = export(
                paths,
                args.out,
                export_format,
                selection,
                overwrite=args.overwrite,
                on_recording=progress,
            )
    except RecordingError as error:
        return command_error("export", error, ExitCode.FAILED)
    for recording_id, why in summary.skipped:
        print(shown(f"  skipped {recording_id}: {why}"), file=sys.stderr)
    for skip, count in sorted(summary.skip_counts.items()):
        print(shown(f"  skipped {count} {skip}"), file=sys.stderr)
    print(
        f"{summary.rows} row(s) from {summary.recordings} of {len(paths)} recording(s), "
        f"{summary.images} image(s) -> {summary.dataset}",
        file=sys.stderr,
    )
    return ExitCode.SUCCEEDED


def _flat(groups: list[list[str]] | None) -> frozenset[str]:
    return frozenset(name for group in groups or [] for name in group)


COMMAND = Command(
    name="export",
    help="turn recordings into a training dataset (prompt/response pairs, or RL token rows)",
    description=(
        "Write one row per recorded model step: the prompt as the engine got it and the "
        f"chosen completion, as chat messages with images ({DATASET_FILES['jsonl']} + "
        f"images/, or {DATASET_FILES['parquet']}); with --format trainer, one row per "
        f"sampled completion as token ids for an RL trainer ({DATASET_FILES['trainer']})."
    ),
    configure=configure,
    run=run,
)
