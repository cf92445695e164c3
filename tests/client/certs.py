"""A throwaway PKI for TLS tests, made with the openssl command line.

One CA signs a server certificate (for localhost and 127.0.0.1) and a client
certificate (CN test-client, for mTLS). EC P-256 keys: quick to make.
"""

from __future__ import annotations

import subprocess
from dataclasses import dataclass
from pathlib import Path

CLIENT_CN = "test-client"


@dataclass(frozen=True)
class Pki:
    ca_cert: Path
    server_cert: Path
    server_key: Path
    client_cert: Path
    client_key: Path
    # A second CA that signed nothing here: verifying with it must fail.
    other_ca_cert: Path


def _openssl(*args: str, cwd: Path) -> None:
    subprocess.run(["openssl", *args], cwd=cwd, check=True, capture_output=True)


def _key_and_csr(name: str, cn: str, cwd: Path) -> None:
    _openssl(
        "req", "-new", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
        "-nodes", "-keyout", f"{name}.key", "-out", f"{name}.csr", "-subj", f"/CN={cn}",
        cwd=cwd,
    )  # fmt: skip


def _ca(name: str, cwd: Path) -> None:
    _openssl(
        "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
        "-nodes", "-keyout", f"{name}.key", "-out", f"{name}.pem", "-days", "2",
        "-subj", f"/CN={name}",
        cwd=cwd,
    )  # fmt: skip


def _sign(name: str, extensions: str, cwd: Path) -> None:
    (cwd / f"{name}.ext").write_text(extensions)
    _openssl(
        "x509", "-req", "-in", f"{name}.csr", "-CA", "ca.pem", "-CAkey", "ca.key",
        "-CAcreateserial", "-out", f"{name}.pem", "-days", "2", "-extfile", f"{name}.ext",
        cwd=cwd,
    )  # fmt: skip


def make_pki(directory: Path) -> Pki:
    _ca("ca", directory)
    _ca("other-ca", directory)
    _key_and_csr("server", "localhost", directory)
    _sign(
        "server",
        "subjectAltName=DNS:localhost,IP:127.0.0.1\nextendedKeyUsage=serverAuth\n",
        directory,
    )
    _key_and_csr("client", CLIENT_CN, directory)
    _sign("client", "extendedKeyUsage=clientAuth\n", directory)
    return Pki(
        ca_cert=directory / "ca.pem",
        server_cert=directory / "server.pem",
        server_key=directory / "server.key",
        client_cert=directory / "client.pem",
        client_key=directory / "client.key",
        other_ca_cert=directory / "other-ca.pem",
    )
