"""Who is calling, and may they: authentication and authorization of every RPC.

The principal of a call, first match wins:

1. ``authorization: Bearer <token>`` metadata -> that token's [[token]] entry
   ("token:<name>"). A token that matches no entry is UNAUTHENTICATED even when
   another credential would have done: a wrong credential is never ignored.
2. A client certificate verified against --client-ca (mTLS) -> its subject CN's
   [[client]] entry ("cn:<CN>"); a verified CN without an entry is UNAUTHENTICATED.
3. A caller on the daemon's Unix socket -> admin ("unix"), but only while the
   socket file is owned by the daemon's user and grants nothing to group or
   others (mode 0600, as the daemon creates it): then only that user (and root)
   can connect at all, so the filesystem already authenticated them. Widen the
   mode (say, chmod 660 to share it with a group) and its callers need a token.
4. Open mode: no credentials configured at all (no --tokens-file, no --client-ca)
   on a loopback address, or --insecure -> admin ("anonymous"), as before auth existed.

Anything else is UNAUTHENTICATED. Roles: `agent` may call AgentService,
`operator` AgentService and ComputerService (it drives the desktops attached under
its own principal and those its entry's `drives` lists; computer_service.py),
`trainer` AgentService and TrainerService (it changes a policy's weights while
sessions run; trainer_service.py), `admin` may call everything (ControlService
too) and drive every desktop; a known caller with the wrong role gets
PERMISSION_DENIED. Health checking and server reflection stay open to everyone
(load balancers and grpcurl need them; they reveal the API's shape and whether it
serves, nothing about sessions). Credentials
never reach a log line: failures are logged by cause ("unknown bearer token"),
never by value.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import logging
import os
import stat
from collections.abc import AsyncIterator, Awaitable, Callable
from functools import partial
from typing import Any

import grpc

from holodesk.daemon.errors import HolodeskError, PermissionDenied, Unauthenticated
from holodesk.daemon.principals import ANONYMOUS, AuthMethod, Principal, Role
from holodesk.daemon.rpc.credentials import MAX_TOKEN_CHARS, Credentials
from holodesk.daemon.rpc.interceptor import aclose, wrap_behavior

log = logging.getLogger(__name__)

# Services anyone may call, authenticated or not.
OPEN_SERVICES = (
    "grpc.health.v1.Health",
    "grpc.reflection.v1.ServerReflection",
    "grpc.reflection.v1alpha.ServerReflection",
)
AGENT_SERVICE = "holodesk.v1.AgentService"
COMPUTER_SERVICE = "holodesk.v1.ComputerService"
TRAINER_SERVICE = "holodesk.v1.TrainerService"
# How long a denied request stream may take to deliver its first message before
# the denial is sent anyway (see `_deny_after_first_request`).
DENIAL_AWAITS_FIRST_REQUEST_S = 1.0


_CURRENT: contextvars.ContextVar[Principal] = contextvars.ContextVar(
    "holodesk_principal", default=ANONYMOUS
)


def current_principal() -> Principal:
    """The caller of the RPC being handled (set by AuthInterceptor for its duration)."""
    return _CURRENT.get()


def required_role(method: str) -> Role | None:
    """The role a full method name ("/pkg.Service/Method") needs; None: open to all."""
    service = method.lstrip("/").split("/", 1)[0]
    if service in OPEN_SERVICES:
        return None
    if service == AGENT_SERVICE:
        return Role.AGENT
    if service == COMPUTER_SERVICE:
        return Role.OPERATOR
    if service == TRAINER_SERVICE:
        return Role.TRAINER
    return Role.ADMIN  # ControlService, and anything added later, until said otherwise


class Authenticator:
    def __init__(
        self,
        credentials: Credentials,
        *,
        open_mode: bool,
        unix_socket: str | None = None,
    ) -> None:
        self.credentials = credentials
        self.open_mode = open_mode
        self.unix_socket = unix_socket

    def authenticate(self, context: Any) -> Principal:
        """The caller of this call, or Unauthenticated naming the cause (never the value)."""
        token = _bearer_token(context.invocation_metadata() or ())
        if token is not None:
            entry = self.credentials.match_token(token)
            if entry is None:
                raise Unauthenticated("unknown bearer token")
            return Principal(f"token:{entry.name}", entry.role, AuthMethod.TOKEN, entry.drives)
        cn = _certificate_cn(context)
        if cn is not None:
            client = self.credentials.client_entry(cn)
            if client is None:
                raise Unauthenticated(
                    f"client certificate CN {cn!r} has no [[client]] entry in the credentials file"
                )
            return Principal(f"cn:{cn}", client.role, AuthMethod.MTLS, client.drives)
        if self._trusted_unix_peer(context):
            return Principal("unix", Role.ADMIN, AuthMethod.UNIX)
        if self.open_mode:
            return ANONYMOUS
        raise Unauthenticated(
            "credentials required: send 'authorization: Bearer <token>' metadata"
            + (" or use the Unix socket" if self.unix_socket else "")
        )

    def authorize(self, principal: Principal, method: str) -> None:
        needed = required_role(method)
        if needed is not None and not principal.role.allows(needed):
            raise PermissionDenied(
                f"{principal.name} has role {principal.role.value}; {method} needs {needed.value}",
                principal=principal.name,
                required_role=needed.value,
            )

    def _trusted_unix_peer(self, context: Any) -> bool:
        if self.unix_socket is None or not str(context.peer() or "").startswith("unix:"):
            return False
        return socket_is_private(self.unix_socket)


def socket_is_private(path: str) -> bool:
    """Owned by this process's user and closed to group and others."""
    try:
        info = os.stat(path)
    except OSError:
        return False
    return (
        stat.S_ISSOCK(info.st_mode)
        and info.st_uid == os.geteuid()
        and not info.st_mode & (stat.S_IRWXG | stat.S_IRWXO)
    )


def _bearer_token(metadata: Any) -> str | None:
    for key, value in metadata:
        if key != "authorization":
            continue
        text = value.decode("utf-8", "replace") if isinstance(value, bytes) else str(value)
        scheme, _, token = text.strip().partition(" ")
        token = token.strip()
        if scheme.lower() != "bearer" or not token:
            raise Unauthenticated("malformed authorization metadata: expected 'Bearer <token>'")
        if len(token) > MAX_TOKEN_CHARS:
            raise Unauthenticated("unknown bearer token")
        return token
    return None


def _certificate_cn(context: Any) -> str | None:
    """The subject CN of a verified client certificate (gRPC only reports verified ones)."""
    auth = context.auth_context() or {}
    names = auth.get("x509_common_name") or ()
    if not names:
        return None
    first = names[0]
    return first.decode("utf-8", "replace") if isinstance(first, bytes) else str(first)


class AuthInterceptor(grpc.aio.ServerInterceptor):  # type: ignore[misc]
    """Authenticates and authorizes every call before its handler runs.

    Wraps the handler (unary and streaming alike) because the caller's transport
    identity (certificate, socket) is only visible on the call's context; the
    principal is then available to the servicer through `current_principal()`.
    """

    def __init__(self, authenticator: Authenticator) -> None:
        self.authenticator = authenticator

    async def intercept_service(
        self,
        continuation: Callable[[Any], Awaitable[Any]],
        handler_call_details: Any,
    ) -> Any:
        handler = await continuation(handler_call_details)
        method: str = handler_call_details.method
        if handler is None or required_role(method) is None:
            return handler
        streamed = bool(handler.request_streaming)
        return wrap_behavior(
            handler,
            partial(self._wrap_unary, method=method, streamed=streamed),
            partial(self._wrap_stream, method=method, streamed=streamed),
        )

    async def _admit(self, request: Any, context: Any, method: str, streamed: bool) -> Principal:
        try:
            principal = self.authenticator.authenticate(context)
            self.authenticator.authorize(principal, method)
        except (Unauthenticated, PermissionDenied) as exc:
            log.warning("%s denied (peer %s): %s", method, context.peer(), exc.message)
            if streamed:
                await _deny_after_first_request(request)
            raise
        _CURRENT.set(principal)
        return principal

    def _wrap_unary(
        self, behavior: Callable[[Any, Any], Awaitable[Any]], method: str, streamed: bool
    ) -> Callable[[Any, Any], Awaitable[Any]]:
        async def wrapped(request: Any, context: Any) -> Any:
            await self._admit(request, context, method, streamed)
            return await behavior(request, context)

        return wrapped

    def _wrap_stream(
        self, behavior: Callable[[Any, Any], AsyncIterator[Any]], method: str, streamed: bool
    ) -> Callable[[Any, Any], AsyncIterator[Any]]:
        async def wrapped(request: Any, context: Any) -> AsyncIterator[Any]:
            await self._admit(request, context, method, streamed)
            responses = behavior(request, context)
            try:
                async for response in responses:
                    yield response
            finally:
                await aclose(responses)

        return wrapped


async def _deny_after_first_request(requests: AsyncIterator[Any]) -> None:
    """Let a denied request stream deliver its first message (or end) before the
    denial goes out.

    A grpc.aio client whose write is still in flight when the call's status
    arrives reports INTERNAL ("Internal error from Core") instead of that status
    (grpc/grpc#36066, open in grpcio 1.85), so a caller without a token would be
    told the daemon failed. Callers write their first message right after opening
    the call; once it has arrived that write has succeeded, and the denial reaches
    them as UNAUTHENTICATED or PERMISSION_DENIED. The message itself is dropped
    unread: nothing of a denied call is acted on. Bounded, so a caller that never
    writes is still denied promptly. Costs no more than a unary call, whose
    request the server reads whole before any handler runs.
    """
    with contextlib.suppress(TimeoutError, StopAsyncIteration, HolodeskError):
        await asyncio.wait_for(anext(aiter(requests)), DENIAL_AWAITS_FIRST_REQUEST_S)
