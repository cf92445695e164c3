"""`holodesk locate`: batch grounding over a folder of screenshots, written as JSONL.

    holodesk locate --server HOST:PORT --dir shots/ --descriptions things.txt --out found.jsonl
    holodesk locate --server HOST:PORT --manifest images.jsonl --out found.jsonl -k 8

See batch.py for the output and how a second run resumes.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from pathlib import Path

from holodesk.client.argtypes import positive_float, positive_int
from holodesk.client.channel import ChannelError, ChannelSettings, check_settings, open_channel
from holodesk.client.cli import Command, command_error
from holodesk.client.connection_args import (
    NO_SERVER,
    add_connection_arguments,
    add_server_argument,
    read_channel_settings,
)
from holodesk.client.credentials import (
    CredentialsError,
)
from holodesk.client.exit_codes import ExitCode
from holodesk.client.locate.batch import (
    DaemonError,
    InputError,
    Job,
    Summary,
    jobs_from_folder,
    jobs_from_manifest,
    read_descriptions,
    run_batch,
)
from holodesk.client.locate.locate import DEFAULT_BATCH
from holodesk.client.progress import BatchProgress
from holodesk.client.shown import shown


def configure(parser: argparse.ArgumentParser) -> None:
    add_server_argument(parser)
    source = parser.add_argument_group("images (one of)")
    source.add_argument("--dir", type=Path, help="a folder of screenshots")
    source.add_argument(
        "--manifest",
        type=Path,
        metavar="JSONL",
        help='lines of {"image": path, "descriptions": [...]}, paths relative to the manifest',
    )
    parser.add_argument(
        "--descriptions",
        type=Path,
        metavar="FILE",
        help="with --dir: what to find in every image, one description per line",
    )
    parser.add_argument(
        "--recursive", action="store_true", help="with --dir: also the images in its subfolders"
    )
    parser.add_argument(
        "--out", type=Path, required=True, metavar="OUT.jsonl", help="where to write (resumable)"
    )
    parser.add_argument(
        "-k",
        "--concurrency",
        type=positive_int,
        default=4,
        metavar="K",
        help="Locate requests in flight (default: %(default)s)",
    )
    parser.add_argument("--policy", default="", help="daemon policy (default: the daemon's)")
    parser.add_argument(
        "--batch",
        type=positive_int,
        default=DEFAULT_BATCH,
        metavar="N",
        help="descriptions per request at most (default: %(default)s, the daemon's limit)",
    )
    parser.add_argument(
        "--timeout",
        type=positive_float,
        default=300.0,
        metavar="SECONDS",
        help="per request (default: %(default)s)",
    )
    add_connection_arguments(parser.add_argument_group("connection"))


def run(args: argparse.Namespace) -> int:
    if not args.server:
        return command_error("locate", NO_SERVER)
    if (args.dir is None) == (args.manifest is None):
        return command_error("locate", "give either --dir (with --descriptions) or --manifest")
    if args.dir is not None and args.descriptions is None:
        return command_error("locate", "--dir needs --descriptions FILE (one description per line)")
    if args.manifest is not None and (args.descriptions is not None or args.recursive):
        return command_error(
            "locate", "--descriptions and --recursive go with --dir, not --manifest"
        )
    try:
        jobs = _jobs(args)
        settings = read_channel_settings(args)
        check_settings(args.server, settings)
    except (InputError, CredentialsError, ChannelError) as error:
        return command_error("locate", str(error))
    if not args.out.parent.is_dir():
        return command_error("locate", f"--out {args.out}: no such folder {args.out.parent}")
    try:
        summary = asyncio.run(_run(args, jobs, settings))
    except DaemonError as error:
        print(shown(f"holodesk locate: {error}; what was done is in {args.out}"), file=sys.stderr)
        return ExitCode.DAEMON_ERROR
    except KeyboardInterrupt:
        print(f"holodesk locate: interrupted; run again to resume {args.out}", file=sys.stderr)
        return ExitCode.CANCELLED
    print(
        f"{summary.images} image(s): {summary.located} located, {summary.skipped} already "
        f"done, {summary.failed} failed; {summary.found}/{summary.asked} description(s) found",
        file=sys.stderr,
    )
    return ExitCode.FAILED if summary.failed else ExitCode.SUCCEEDED


def _jobs(args: argparse.Namespace) -> list[Job]:
    if args.manifest is not None:
        return jobs_from_manifest(args.manifest)
    descriptions = read_descriptions(args.descriptions)
    return jobs_from_folder(args.dir, descriptions, recursive=args.recursive)


async def _run(args: argparse.Namespace, jobs: list[Job], settings: ChannelSettings) -> Summary:
    with BatchProgress("locating", total=len(jobs)) as bar:

        def report(job: Job, error: str | None) -> None:
            if error is not None:
                bar.note(shown(f"  {job.image}: {error}"))
            bar.advance()

        channel = open_channel(args.server, settings)
        try:
            return await run_batch(
                channel,
                jobs,
                args.out,
                concurrency=args.concurrency,
                policy=args.policy,
                batch=args.batch,
                timeout_s=args.timeout,
                on_image=report,
                on_start=lambda summary: bar.advance(summary.skipped),
            )
        finally:
            await channel.close()


COMMAND = Command(
    name="locate",
    help="find described elements in a folder of screenshots, as JSONL (annotation)",
    configure=configure,
    run=run,
)
