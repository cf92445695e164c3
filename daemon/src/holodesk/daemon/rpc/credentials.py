"""The credentials file (--tokens-file): who may call, with which role.

TOML, two kinds of entries; only SHA-256 digests of bearer tokens are stored,
so the file is not a secret (keep it writable by root/the daemon's user only):

    [[token]]
    name = "laptop"        # a label: logs, per-principal limits ("token:laptop")
    role = "agent"         # "agent": AgentService; "operator": AgentService and
                           # ComputerService; "trainer": AgentService and
                           # TrainerService; "admin": everything, ControlService too
    sha256 = "<64 hex digits: sha256 of the token's UTF-8 bytes>"
    drives = ["token:laptop"]  # operator only, optional: principals whose attached
                           # desktops it may drive besides its own (computer.proto)

    [[client]]             # mTLS callers (--client-ca), by certificate subject CN
    cn = "tray.example.internal"
    role = "admin"

Make a token and its entry: `holodeskd token new --name laptop --role agent`
(or by hand: `python -c 'import secrets; print("hdk_" + secrets.token_urlsafe(32))'`
and `printf %s "$TOKEN" | sha256sum`).
"""

from __future__ import annotations

import hashlib
import hmac
import re
import secrets
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from holodesk.daemon.principals import Role

TOKEN_PREFIX = "hdk_"
_HEX64 = re.compile(r"[0-9a-f]{64}")
# A bearer token longer than this is not one of ours; don't spend time hashing it.
MAX_TOKEN_CHARS = 512


class CredentialsError(ValueError):
    """A credentials file that cannot be used; the message names the file and entry."""


@dataclass(frozen=True)
class TokenEntry:
    name: str
    role: Role
    sha256: bytes
    # Principals whose attached desktops this operator may drive besides its own.
    drives: tuple[str, ...] = ()


@dataclass(frozen=True)
class ClientEntry:
    cn: str
    role: Role
    drives: tuple[str, ...] = ()


@dataclass(frozen=True)
class Credentials:
    tokens: tuple[TokenEntry, ...] = ()
    clients: tuple[ClientEntry, ...] = ()

    @property
    def empty(self) -> bool:
        return not self.tokens and not self.clients

    def match_token(self, token: str) -> TokenEntry | None:
        """The entry whose digest matches, compared in constant time against every entry
        (no early exit, so timing says nothing about which entry or prefix matched)."""
        digest = token_digest(token)
        found: TokenEntry | None = None
        for entry in self.tokens:
            if hmac.compare_digest(entry.sha256, digest):
                found = entry
        return found

    def client_role(self, cn: str) -> Role | None:
        entry = self.client_entry(cn)
        return None if entry is None else entry.role

    def client_entry(self, cn: str) -> ClientEntry | None:
        for entry in self.clients:
            if entry.cn == cn:
                return entry
        return None


def token_digest(token: str) -> bytes:
    return hashlib.sha256(token.encode("utf-8", "surrogatepass")).digest()


def new_token() -> str:
    """A fresh bearer token: 256 random bits, URL-safe, recognisable by its prefix."""
    return TOKEN_PREFIX + secrets.token_urlsafe(32)


def token_entry_toml(name: str, role: Role, token: str) -> str:
    return (
        "[[token]]\n"
        f"name = {_toml_string(name)}\n"
        f'role = "{role.value}"\n'
        f'sha256 = "{token_digest(token).hex()}"\n'
    )


def _toml_string(value: str) -> str:
    escaped = value.replace("\\", "\\\\").replace('"', '\\"')
    return f'"{escaped}"'


def load_credentials(path: str | Path) -> Credentials:
    path = Path(path)
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise CredentialsError(f"cannot read the credentials file {path}: {exc}") from exc
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise CredentialsError(f"{path}: not valid TOML: {exc}") from exc
    return parse_credentials(data, str(path))


def parse_credentials(data: dict[str, Any], source: str = "credentials") -> Credentials:
    unknown = set(data) - {"token", "client"}
    if unknown:
        raise CredentialsError(
            f"{source}: unknown section(s) {sorted(unknown)}; expected [[token]] and [[client]]"
        )
    tokens = tuple(
        _token_entry(item, f"{source}: [[token]] #{i + 1}")
        for i, item in enumerate(_array(data, "token", source))
    )
    clients = tuple(
        _client_entry(item, f"{source}: [[client]] #{i + 1}")
        for i, item in enumerate(_array(data, "client", source))
    )
    _unique([t.name for t in tokens], f"{source}: token name")
    _unique([t.sha256.hex() for t in tokens], f"{source}: token digest")
    _unique([c.cn for c in clients], f"{source}: client cn")
    return Credentials(tokens=tokens, clients=clients)


def _array(data: dict[str, Any], key: str, source: str) -> list[dict[str, Any]]:
    items = data.get(key, [])
    if not isinstance(items, list) or not all(isinstance(x, dict) for x in items):
        raise CredentialsError(f"{source}: {key} must be an array of tables ([[{key}]])")
    return items


def _fields(item: dict[str, Any], allowed: set[str], where: str) -> dict[str, str]:
    extra = set(item) - allowed - {"drives"}
    if extra:
        raise CredentialsError(
            f"{where}: unknown key(s) {sorted(extra)}; allowed {sorted(allowed | {'drives'})}"
        )
    out: dict[str, str] = {}
    for key in allowed:
        value = item.get(key)
        if not isinstance(value, str) or not value.strip():
            raise CredentialsError(f"{where}: {key} must be a non-empty string")
        out[key] = value.strip()
    return out


def _role(value: str, where: str) -> Role:
    try:
        return Role(value)
    except ValueError:
        raise CredentialsError(
            f"{where}: role {value!r} is not agent, operator, trainer or admin"
        ) from None


def _drives(item: dict[str, Any], role: Role, where: str) -> tuple[str, ...]:
    """The optional `drives` list: principal names ("token:laptop", "cn:desk-1")."""
    value = item.get("drives", [])
    if not isinstance(value, list) or not all(isinstance(x, str) and x.strip() for x in value):
        raise CredentialsError(f"{where}: drives must be a list of principal names")
    if value and role is not Role.OPERATOR:
        raise CredentialsError(
            f"{where}: drives is for role operator (an admin drives every desktop, an agent none)"
        )
    bad = [x for x in value if not x.strip().startswith(("token:", "cn:")) and x != "unix"]
    if bad:
        raise CredentialsError(
            f"{where}: drives entries name principals as 'token:<name>', 'cn:<CN>' or "
            f"'unix'; got {bad[0]!r}"
        )
    return tuple(x.strip() for x in value)


def _token_entry(item: dict[str, Any], where: str) -> TokenEntry:
    fields = _fields(item, {"name", "role", "sha256"}, where)
    digest = fields["sha256"].lower()
    if not _HEX64.fullmatch(digest):
        raise CredentialsError(
            f"{where}: sha256 must be 64 hex digits (the token's SHA-256, never the token)"
        )
    role = _role(fields["role"], where)
    return TokenEntry(fields["name"], role, bytes.fromhex(digest), _drives(item, role, where))


def _client_entry(item: dict[str, Any], where: str) -> ClientEntry:
    fields = _fields(item, {"cn", "role"}, where)
    role = _role(fields["role"], where)
    return ClientEntry(fields["cn"], role, _drives(item, role, where))


def _unique(values: list[str], what: str) -> None:
    seen: set[str] = set()
    for value in values:
        if value in seen:
            raise CredentialsError(f"{what} {value!r} appears twice")
        seen.add(value)
