"""`holodeskd token new --name N --role R [--append FILE]`: a fresh bearer token.

Why its own module: making a token and its [[token]] entry (and appending it to a
tokens file only if the file still parses) is a small offline tool of its own; it
shares nothing with the daemon's flags or its run but credentials.py.
"""

from __future__ import annotations

import argparse
import os
import sys
import tomllib
from collections.abc import Sequence
from pathlib import Path

from holodesk.daemon.principals import Role
from holodesk.daemon.rpc.credentials import new_token, parse_credentials, token_entry_toml


def build_token_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="holodeskd token new",
        description="Print a fresh bearer token and its [[token]] entry for --tokens-file. "
        "The token is shown once and stored nowhere; the file keeps only its SHA-256.",
    )
    parser.add_argument("--name", required=True, help="label for logs and per-caller limits")
    parser.add_argument("--role", required=True, choices=[r.value for r in Role])
    parser.add_argument(
        "--append",
        metavar="FILE",
        help="append the entry to this tokens file (created 0600) and print only the token",
    )
    return parser


def token_main(argv: Sequence[str]) -> int:
    if list(argv[:1]) != ["new"]:
        roles = "|".join(r.value for r in Role)
        print(f"usage: holodeskd token new --name NAME --role {roles}", file=sys.stderr)
        return 2
    args = build_token_parser().parse_args(list(argv[1:]))
    token = new_token()
    entry = token_entry_toml(args.name, Role(args.role), token)
    if args.append is None:
        print(f"# give the token to the client; add the entry to the tokens file\n{token}\n")
        print(entry, end="")
        return 0
    path = Path(args.append)
    try:
        existing = path.read_text(encoding="utf-8") if path.exists() else ""
        combined = existing + ("\n" if existing and not existing.endswith("\n") else "")
        combined += ("\n" if existing else "") + entry
        parse_credentials(tomllib.loads(combined), str(path))  # e.g. a duplicate name
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        with os.fdopen(fd, "a", encoding="utf-8") as out:
            out.write(combined[len(existing) :])
    except (OSError, ValueError) as exc:
        print(f"holodeskd token: {exc}", file=sys.stderr)
        return 2
    print(token)
    return 0
