"""The flags of every command that talks to a daemon (`--server`, TLS, mTLS, token)
and the ChannelSettings they make, so `run`, `locate`, `doctor` and `tray` agree."""

from __future__ import annotations

import argparse
import os
from pathlib import Path

from holodesk.client.channel import ChannelError, ChannelSettings
from holodesk.client.credentials import (
    TOKEN_FILE_ENV,
    BearerToken,
    read_token_file,
    token_file_from_env,
)
from holodesk.proto.defaults import DEFAULT_ADDRESS

SERVER_ENV = "HOLODESK_SERVER"
# What a command says when --server is given empty.
NO_SERVER = f"no daemon address: pass --server HOST:PORT or set ${SERVER_ENV}"


def default_server() -> str:
    """$SERVER_ENV, else the daemon's own default address (a daemon on this machine)."""
    return os.environ.get(SERVER_ENV) or DEFAULT_ADDRESS


def server_named(args: argparse.Namespace) -> bool:
    """Whether the user said which daemon (a flag or $SERVER_ENV), for commands that
    add their --server with `resolve_default=False`."""
    return args.server is not None or bool(os.environ.get(SERVER_ENV))


def add_server_argument(
    parser: argparse.ArgumentParser | argparse._ArgumentGroup,
    help_text: str = f"the daemon's address (default: ${SERVER_ENV}, else {DEFAULT_ADDRESS})",
    *,
    resolve_default: bool = True,
) -> None:
    """`--server`; with `resolve_default=False` it stays None when not given (the
    command then tells a named daemon from the default one)."""
    parser.add_argument(
        "--server",
        default=default_server() if resolve_default else None,
        metavar="HOST:PORT|unix:PATH",
        help=help_text,
    )


def add_connection_arguments(group: argparse.ArgumentParser | argparse._ArgumentGroup) -> None:
    security = group.add_mutually_exclusive_group()
    security.add_argument(
        "--insecure",
        dest="insecure",
        action="store_const",
        const=True,
        help="plaintext gRPC (the default for loopback and unix: addresses)",
    )
    security.add_argument(
        "--tls",
        dest="insecure",
        action="store_const",
        const=False,
        help="TLS even for a loopback address (the default for any other)",
    )
    group.add_argument("--ca-cert", type=Path, help="PEM roots to verify the daemon's TLS cert")
    group.add_argument("--client-cert", type=Path, help="mTLS: this client's certificate (PEM)")
    group.add_argument("--client-key", type=Path, help="mTLS: this client's private key (PEM)")
    group.add_argument(
        "--token-file",
        type=Path,
        default=token_file_from_env(),
        help=f"file holding the bearer token for the daemon (default: ${TOKEN_FILE_ENV})",
    )


def channel_settings(args: argparse.Namespace, token: BearerToken | None = None) -> ChannelSettings:
    """The settings the connection flags describe, with an already-read token."""
    return ChannelSettings(
        insecure=args.insecure,
        ca_cert=args.ca_cert,
        client_cert=args.client_cert,
        client_key=args.client_key,
        token=token,
    )


def read_channel_settings(args: argparse.Namespace) -> ChannelSettings:
    """The settings, after checking the PEM files exist (ChannelError) and reading the
    token file (CredentialsError)."""
    for flag, path in (
        ("--ca-cert", args.ca_cert),
        ("--client-cert", args.client_cert),
        ("--client-key", args.client_key),
    ):
        if path is not None and not path.is_file():
            raise ChannelError(f"{flag} {path}: no such file")
    token = read_token_file(args.token_file) if args.token_file is not None else None
    return channel_settings(args, token)
