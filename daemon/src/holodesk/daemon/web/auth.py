"""Who is looking at the live view, and may they: the gRPC port's rules, for a browser.

The live view pauses, resumes and stops sessions and shows every desktop, so it
needs what ControlService needs: the admin role. A request's principal, first
match wins, as in auth.py:

1. ``Authorization: Bearer <token>`` (scripts, curl) -> that token's entry; an
   unknown token is refused even when a cookie would have done.
2. The login cookie: a browser cannot send a header on its own, so the page's
   login form posts the token once (``POST /api/login``) and gets a random,
   HttpOnly, SameSite=Strict cookie (Secure under TLS) that names a login kept
   here, in memory. The token itself is never in a URL, a cookie or a log line; the
   login keeps only its digest, so a token removed from the credentials file
   (SIGHUP) ends its logins at their next request.
3. A client certificate verified against --client-ca (TLS asks for one, optionally)
   -> its CN's [[client]] entry.
4. Open mode (no credential configured, loopback or --insecure) -> anonymous admin.

Logins expire after `LOGIN_TTL_S` and at most `MAX_LOGINS` are kept (the oldest
goes first): a stream of logins cannot grow the daemon.
"""

from __future__ import annotations

import hmac
import logging
import secrets
import time
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any

from aiohttp import web

from holodesk.daemon.principals import ANONYMOUS, AuthMethod, Principal, Role
from holodesk.daemon.rpc.auth import Authenticator
from holodesk.daemon.rpc.credentials import MAX_TOKEN_CHARS

log = logging.getLogger(__name__)

COOKIE = "holodesk_live"
LOGIN_TTL_S = 12 * 3600.0
MAX_LOGINS = 1024


class WebUnauthorizedError(Exception):
    """No usable credential (HTTP 401); the message names the cause, never a value."""


class WebForbiddenError(Exception):
    """A known caller without the admin role (HTTP 403)."""


@dataclass(frozen=True)
class _Login:
    digest: bytes
    expires: float


class WebAuth:
    """Checks every live-view request against the daemon's own `Authenticator`
    (its credentials are the ones SIGHUP reloads)."""

    def __init__(self, authenticator: Authenticator, *, secure_cookie: bool) -> None:
        self._authenticator = authenticator
        self._secure_cookie = secure_cookie
        self._logins: OrderedDict[str, _Login] = OrderedDict()

    @property
    def open_mode(self) -> bool:
        return self._authenticator.open_mode

    def require_admin(self, request: web.Request) -> Principal:
        principal = self.principal(request)
        if not principal.role.allows(Role.ADMIN):
            raise WebForbiddenError(
                f"{principal.name} has role {principal.role.value}; the live view needs admin"
            )
        return principal

    def principal(self, request: web.Request) -> Principal:
        credentials = self._authenticator.credentials
        header = request.headers.get("Authorization")
        if header is not None:
            entry = credentials.match_token(_bearer(header))
            if entry is None:
                raise WebUnauthorizedError("unknown bearer token")
            return Principal(f"token:{entry.name}", entry.role, AuthMethod.TOKEN, entry.drives)
        cookie = request.cookies.get(COOKIE)
        if cookie:
            return self._cookie_principal(cookie)
        cn = _certificate_cn(request)
        if cn is not None:
            client = credentials.client_entry(cn)
            if client is None:
                raise WebUnauthorizedError(f"client certificate CN {cn!r} has no [[client]] entry")
            return Principal(f"cn:{cn}", client.role, AuthMethod.MTLS, client.drives)
        if self._authenticator.open_mode:
            return ANONYMOUS
        raise WebUnauthorizedError("log in with a token (holodeskd token new --role admin)")

    def login(self, token: str, response: web.StreamResponse) -> Principal:
        """Check the token and give the browser a login cookie for it."""
        if not token or len(token) > MAX_TOKEN_CHARS:
            raise WebUnauthorizedError("unknown token")
        entry = self._authenticator.credentials.match_token(token)
        if entry is None:
            raise WebUnauthorizedError("unknown token")
        principal = Principal(f"token:{entry.name}", entry.role, AuthMethod.TOKEN)
        if not entry.role.allows(Role.ADMIN):
            raise WebForbiddenError(f"{principal.name} has role {entry.role.value}; it needs admin")
        self._expire()
        while len(self._logins) >= MAX_LOGINS:
            self._logins.popitem(last=False)
        key = secrets.token_urlsafe(32)
        self._logins[key] = _Login(entry.sha256, time.monotonic() + LOGIN_TTL_S)
        response.set_cookie(
            COOKIE,
            key,
            max_age=int(LOGIN_TTL_S),
            path="/",
            httponly=True,
            secure=self._secure_cookie,
            samesite="Strict",
        )
        log.info("live view: %s logged in", principal.name)
        return principal

    def logout(self, request: web.Request, response: web.StreamResponse) -> None:
        cookie = request.cookies.get(COOKIE)
        if cookie:
            self._logins.pop(cookie, None)
        response.del_cookie(COOKIE, path="/")

    def _cookie_principal(self, cookie: str) -> Principal:
        login = self._logins.get(cookie)
        if login is None or login.expires <= time.monotonic():
            self._logins.pop(cookie, None)
            raise WebUnauthorizedError("the login expired or is unknown: log in again")
        for entry in self._authenticator.credentials.tokens:
            if hmac.compare_digest(entry.sha256, login.digest):
                return Principal(f"token:{entry.name}", entry.role, AuthMethod.TOKEN)
        self._logins.pop(cookie, None)
        raise WebUnauthorizedError("the login's token is no longer in the credentials file")

    def _expire(self) -> None:
        now = time.monotonic()
        for key in [k for k, v in self._logins.items() if v.expires <= now]:
            del self._logins[key]


def _bearer(header: str) -> str:
    scheme, _, token = header.strip().partition(" ")
    token = token.strip()
    if scheme.lower() != "bearer" or not token:
        raise WebUnauthorizedError("malformed Authorization header: expected 'Bearer <token>'")
    if len(token) > MAX_TOKEN_CHARS:
        raise WebUnauthorizedError("unknown bearer token")
    return token


def _certificate_cn(request: web.Request) -> str | None:
    """The subject CN of the client certificate TLS verified (None without one)."""
    transport = request.transport
    if transport is None:
        return None
    cert: Any = transport.get_extra_info("peercert")
    if not cert:
        return None
    for rdn in cert.get("subject", ()):
        for key, value in rdn:
            if key == "commonName":
                return str(value)
    return None
