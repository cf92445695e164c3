"""A throwaway certificate authority for TLS and mTLS tests, made on the spot.

    ca = CertificateAuthority("holodesk test CA")
    server = ca.issue("localhost", hosts=("localhost", "127.0.0.1"))
    client = ca.issue("tray")            # a client certificate, CN "tray"
    paths = server.write(tmp_path, "server")   # server.crt / server.key
    pki = make_pki(tmp_path)             # CA + server + client (CN CLIENT_CN) files

ECDSA P-256 keys: fast to make, and gRPC's TLS stack takes them.
"""

from __future__ import annotations

import datetime
import ipaddress
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

_VALID = datetime.timedelta(days=2)


def _name(common_name: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])


def _key_pem(key: ec.EllipticCurvePrivateKey) -> bytes:
    return key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )


@dataclass(frozen=True)
class Issued:
    cert_pem: bytes
    key_pem: bytes

    def write(self, directory: Path, stem: str) -> tuple[Path, Path]:
        """Write STEM.crt and STEM.key; returns (cert path, key path)."""
        cert, key = directory / f"{stem}.crt", directory / f"{stem}.key"
        cert.write_bytes(self.cert_pem)
        key.write_bytes(self.key_pem)
        key.chmod(0o600)
        return cert, key


class CertificateAuthority:
    def __init__(self, name: str = "holodesk test CA") -> None:
        self._key = ec.generate_private_key(ec.SECP256R1())
        now = datetime.datetime.now(datetime.UTC)
        self._name = _name(name)
        self.cert = (
            x509.CertificateBuilder()
            .subject_name(self._name)
            .issuer_name(self._name)
            .public_key(self._key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(minutes=5))
            .not_valid_after(now + _VALID)
            .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
            .add_extension(
                x509.KeyUsage(
                    digital_signature=True,
                    content_commitment=False,
                    key_encipherment=False,
                    data_encipherment=False,
                    key_agreement=False,
                    key_cert_sign=True,
                    crl_sign=True,
                    encipher_only=False,
                    decipher_only=False,
                ),
                critical=True,
            )
            .sign(self._key, hashes.SHA256())
        )

    @property
    def cert_pem(self) -> bytes:
        return self.cert.public_bytes(serialization.Encoding.PEM)

    def write(self, directory: Path, stem: str = "ca") -> Path:
        path = directory / f"{stem}.crt"
        path.write_bytes(self.cert_pem)
        return path

    def issue(self, common_name: str, *, hosts: tuple[str, ...] = ()) -> Issued:
        """A leaf certificate; with `hosts` (DNS names or IPs) it can serve TLS,
        and either way it can authenticate a client."""
        key = ec.generate_private_key(ec.SECP256R1())
        now = datetime.datetime.now(datetime.UTC)
        builder = (
            x509.CertificateBuilder()
            .subject_name(_name(common_name))
            .issuer_name(self._name)
            .public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(minutes=5))
            .not_valid_after(now + _VALID)
            .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
            .add_extension(
                x509.ExtendedKeyUsage(
                    [ExtendedKeyUsageOID.SERVER_AUTH, ExtendedKeyUsageOID.CLIENT_AUTH]
                ),
                critical=False,
            )
        )
        if hosts:
            names: list[x509.GeneralName] = []
            for host in hosts:
                try:
                    names.append(x509.IPAddress(ipaddress.ip_address(host)))
                except ValueError:
                    names.append(x509.DNSName(host))
            builder = builder.add_extension(x509.SubjectAlternativeName(names), critical=False)
        cert = builder.sign(self._key, hashes.SHA256())
        return Issued(cert.public_bytes(serialization.Encoding.PEM), _key_pem(key))


CLIENT_CN = "test-client"


@dataclass(frozen=True)
class Pki:
    """Files of a ready-made PKI: one CA, a server and a client certificate it signed."""

    ca_cert: Path
    server_cert: Path
    server_key: Path
    client_cert: Path
    client_key: Path
    # A second CA that signed nothing here: verifying with it must fail.
    other_ca_cert: Path


def make_pki(directory: Path) -> Pki:
    """A server certificate for localhost and 127.0.0.1, and a client certificate
    (CN CLIENT_CN, for mTLS), both from one CA, written under `directory`."""
    ca = CertificateAuthority("ca")
    server_cert, server_key = ca.issue("localhost", hosts=("localhost", "127.0.0.1")).write(
        directory, "server"
    )
    client_cert, client_key = ca.issue(CLIENT_CN).write(directory, "client")
    return Pki(
        ca_cert=ca.write(directory, "ca"),
        server_cert=server_cert,
        server_key=server_key,
        client_cert=client_cert,
        client_key=client_key,
        other_ca_cert=CertificateAuthority("other-ca").write(directory, "other-ca"),
    )
