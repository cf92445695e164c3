"""The daemon's TLS certificate, checked the way gRPC will: chain, hostname, expiry.

gRPC's own errors say little ("failed to connect to all addresses"), so the
doctor shakes hands once itself with Python's ssl, with the same roots (and the
client certificate, where mTLS needs one), and names what is wrong.
"""

from __future__ import annotations

import socket
import ssl
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from holodesk.client.doctor.findings import Finding, Status

TLS = "tls"
# A certificate with less time left than this is flagged (renewal can take days).
WARN_DAYS = 14.0
_DAY_S = 86_400.0


@dataclass(frozen=True)
class TlsOptions:
    host: str
    port: int
    # PEM roots; None: the system's.
    ca_cert: Path | None = None
    client_cert: Path | None = None
    client_key: Path | None = None
    timeout_s: float = 5.0
    warn_days: float = WARN_DAYS


def _context(options: TlsOptions) -> ssl.SSLContext:
    cafile = str(options.ca_cert) if options.ca_cert is not None else None
    context = ssl.create_default_context(cafile=cafile)
    if options.client_cert is not None and options.client_key is not None:
        context.load_cert_chain(options.client_cert, options.client_key)
    context.set_alpn_protocols(["h2"])  # what gRPC offers
    return context


# An HTTP/2 client preface and an empty SETTINGS frame: the daemon answers with its own
# SETTINGS. With TLS 1.3 a server checks the client's certificate after the client's
# handshake is done, so only a read shows whether it accepted us.
_H2_PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + b"\x00\x00\x00\x04\x00\x00\x00\x00\x00"


def _handshake(options: TlsOptions) -> dict[str, Any]:
    context = _context(options)
    with (
        socket.create_connection((options.host, options.port), options.timeout_s) as raw,
        context.wrap_socket(raw, server_hostname=options.host) as tls,
    ):
        tls.sendall(_H2_PREFACE)
        if not tls.recv(1):
            raise ssl.SSLEOFError("the daemon closed the connection after the handshake")
        return tls.getpeercert() or {}


def _names(cert: dict[str, Any]) -> str:
    names = [value for _, value in cert.get("subjectAltName", ())]
    return ", ".join(names) if names else "no subjectAltName"


def check_tls(options: TlsOptions) -> Finding:
    where = f"{options.host}:{options.port}"
    roots = f"--ca-cert {options.ca_cert}" if options.ca_cert else "the system's roots"
    try:
        cert = _handshake(options)
    except ssl.SSLCertVerificationError as error:
        return _verification_failure(error, where, roots)
    except ssl.SSLError as error:
        reason = getattr(error, "reason", None) or (error.args[0] if error.args else error)
        return Finding(
            TLS,
            Status.FAIL,
            f"TLS handshake with {where} failed: {reason}",
            "check that the daemon listens with --tls-cert/--tls-key; if it requires client "
            "certificates (--client-ca), pass --client-cert and --client-key",
        )
    except (OSError, ValueError) as error:
        return Finding(
            TLS,
            Status.SKIP,
            f"could not open a TLS connection to {where}: {error}",
            "see the daemon check",
        )
    left_s = ssl.cert_time_to_seconds(cert["notAfter"]) - time.time()
    days = left_s / _DAY_S
    detail = f"verified against {roots}; valid for {_names(cert)}; expires {cert['notAfter']}"
    if days < options.warn_days:
        return Finding(
            TLS,
            Status.WARN,
            f"{detail}: {days:.1f} days left",
            "renew the daemon's certificate and restart it with the new --tls-cert/--tls-key",
        )
    return Finding(TLS, Status.OK, f"{detail} ({days:.0f} days left)")


def _verification_failure(error: ssl.SSLCertVerificationError, where: str, roots: str) -> Finding:
    message = error.verify_message or str(error)
    if "hostname mismatch" in message.lower() or "ip address mismatch" in message.lower():
        return Finding(
            TLS,
            Status.FAIL,
            f"the certificate of {where} is not valid for this name: {message}",
            "connect with a name the certificate lists (its subjectAltName), or reissue the "
            "certificate for this name",
        )
    if "not yet valid" in message.lower():
        return Finding(
            TLS,
            Status.FAIL,
            f"the certificate of {where} is not valid yet",
            "check this machine's clock (and the daemon host's): turn on NTP time sync",
        )
    if "expired" in message.lower():
        return Finding(
            TLS,
            Status.FAIL,
            f"the certificate of {where} has expired",
            "renew the daemon's certificate and restart it with the new --tls-cert/--tls-key",
        )
    return Finding(
        TLS,
        Status.FAIL,
        f"the certificate of {where} does not verify against {roots}: {message}",
        "pass --ca-cert with the CA that signed the daemon's certificate (a self-signed "
        "daemon: its own certificate)",
    )
