"""The credentials a server is configured with: its tokens file, checked, and its TLS.

Why its own module: both serve() (at start) and RunningServer (on SIGHUP) load the
tokens file with the same checks (not empty; [[client]] entries when --client-ca is
set), and the TLS/mTLS files are checked with ssl first so that a wrong path or
key gives a readable error instead of gRPC's; neither is the server's assembly.
"""

from __future__ import annotations

import ssl
from pathlib import Path
from typing import Any

import grpc

from holodesk.daemon.config import ServerConfig
from holodesk.daemon.rpc.credentials import Credentials, CredentialsError, load_credentials


def configured_credentials(config: ServerConfig) -> Credentials:
    if not config.tokens_file:
        return Credentials()
    credentials = load_credentials(config.tokens_file)
    if credentials.empty:
        raise CredentialsError(f"{config.tokens_file}: no [[token]] or [[client]] entries")
    if config.client_ca and not credentials.clients:
        raise CredentialsError(
            f"{config.tokens_file}: --client-ca is set but there are no [[client]] entries "
            "mapping certificate CNs to roles"
        )
    return credentials


def _read_pem(path: str, flag: str) -> bytes:
    try:
        return Path(path).read_bytes()
    except OSError as exc:
        raise OSError(f"{flag} {path}: {exc.strerror or exc}") from exc


def tls_credentials(config: ServerConfig) -> Any:
    """TLS (and mTLS with --client-ca); checked with ssl first, for readable errors."""
    try:
        ssl.create_default_context(ssl.Purpose.CLIENT_AUTH).load_cert_chain(
            config.tls_cert, config.tls_key
        )
        if config.client_ca:
            ssl.create_default_context(cafile=config.client_ca)
    except (ssl.SSLError, OSError) as exc:
        raise ValueError(
            f"TLS files unusable (--tls-cert {config.tls_cert}, --tls-key {config.tls_key}"
            + (f", --client-ca {config.client_ca}" if config.client_ca else "")
            + f"): {exc}"
        ) from exc
    ca = _read_pem(config.client_ca, "--client-ca") if config.client_ca else None
    return grpc.ssl_server_credentials(
        [(_read_pem(config.tls_key, "--tls-key"), _read_pem(config.tls_cert, "--tls-cert"))],
        root_certificates=ca,
        require_client_auth=ca is not None,
    )
