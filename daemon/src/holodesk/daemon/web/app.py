"""The live view's HTTP side (aiohttp, in the daemon's own event loop).

Routes (all but the page's static files need the admin role; web/auth.py):

    GET  /                               the page (static; the app is web/static/app.js)
    GET  /static/...                     its script, style and the vendored Alpine.js
    POST /api/login    {"token": ...}    sets the login cookie; /api/logout drops it
    GET  /api/me                         who you are (401 before a login)
    GET  /api/sessions                   every session, with its last steps
    GET  /api/events[?session=ID]        server-sent events: a snapshot, then changes
    GET  /api/sessions/ID/frame          the newest screen, a JPEG thumbnail
    POST /api/sessions/ID/pause|takeover|resume|stop
                                         resume takes {"note": ...}, stop {"reason": ...}

Requests that change something must be JSON (`Content-Type: application/json`): a
form on another site cannot send that without a CORS preflight this server never
answers, and the login cookie is SameSite=Strict besides. Every response carries a
Content-Security-Policy that allows only this server's own scripts (the Alpine.js
CSP build needs no eval), no framing, no inline script.
"""

from __future__ import annotations

import asyncio
import json
import logging
import ssl
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from importlib import resources
from typing import Any

from aiohttp import web

from holodesk.daemon.config import ServerConfig
from holodesk.daemon.errors import (
    FailedPrecondition,
    HolodeskError,
    InvalidArgument,
    NotFound,
)
from holodesk.daemon.rpc.auth import Authenticator
from holodesk.daemon.session.registry import SessionRegistry
from holodesk.daemon.web.auth import WebAuth, WebForbiddenError, WebUnauthorizedError
from holodesk.daemon.web.hub import LiveHub, Viewer
from holodesk.proto.limits import REASON_CHARS, TEXT_CHARS, clip

log = logging.getLogger(__name__)

# A body larger than this is refused (413) before it is read: notes are short.
MAX_BODY_BYTES = 64 * 1024
# SSE: a comment this often keeps proxies and the connection alive, and notices a
# browser that left; `retry` tells EventSource how soon to reconnect.
KEEPALIVE_S = 15.0
RETRY_MS = 1000
CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; "
    "connect-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"
)
STATIC_TYPES = {
    ".html": "text/html",
    ".js": "text/javascript",
    ".css": "text/css",
    ".svg": "image/svg+xml",
    ".txt": "text/plain",
    ".md": "text/markdown",
}

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]
HUB: web.AppKey[LiveHub] = web.AppKey("hub", LiveHub)
AUTH: web.AppKey[WebAuth] = web.AppKey("auth", WebAuth)
REGISTRY: web.AppKey[SessionRegistry] = web.AppKey("registry", SessionRegistry)


def build_app(registry: SessionRegistry, hub: LiveHub, auth: WebAuth) -> web.Application:
    app = web.Application(middlewares=[_headers, _errors], client_max_size=MAX_BODY_BYTES)
    app[HUB] = hub
    app[AUTH] = auth
    app[REGISTRY] = registry
    app.router.add_get("/", _index)
    app.router.add_get("/static/{path:.+}", _static)
    app.router.add_post("/api/login", _login)
    app.router.add_post("/api/logout", _logout)
    app.router.add_get("/api/me", _me)
    app.router.add_get("/api/sessions", _sessions)
    app.router.add_get("/api/events", _events)
    app.router.add_get("/api/sessions/{session_id}/frame", _frame)
    app.router.add_post("/api/sessions/{session_id}/{verb}", _control)
    return app


# Middleware --------------------------------------------------------------------------


@web.middleware
async def _headers(request: web.Request, handler: Handler) -> web.StreamResponse:
    try:
        response = await handler(request)
    except web.HTTPException as exc:
        _secure(exc)
        raise
    _secure(response)
    return response


def _secure(response: web.StreamResponse) -> None:
    if response.prepared:
        return  # an event stream: its headers went out with it (see _events)
    response.headers.update(_SECURITY_HEADERS)


_SECURITY_HEADERS = {
    "Content-Security-Policy": CSP,
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "X-Frame-Options": "DENY",
    "Cache-Control": "no-store",
}


@web.middleware
async def _errors(request: web.Request, handler: Handler) -> web.StreamResponse:
    """Auth and session errors as JSON {"error": ...} with the matching status."""
    try:
        return await handler(request)
    except WebUnauthorizedError as exc:
        log.warning("live view %s %s denied: %s", request.method, request.path, exc)
        return _error(401, str(exc))
    except WebForbiddenError as exc:
        log.warning("live view %s %s denied: %s", request.method, request.path, exc)
        return _error(403, str(exc))
    except NotFound as exc:
        return _error(404, exc.message)
    except FailedPrecondition as exc:
        return _error(409, exc.message)
    except InvalidArgument as exc:
        return _error(400, exc.message)
    except HolodeskError as exc:
        return _error(500, exc.message)


def _error(status: int, message: str) -> web.Response:
    return web.json_response({"error": message}, status=status)


# The page ------------------------------------------------------------------------------


async def _index(request: web.Request) -> web.StreamResponse:
    return _static_file("index.html")


async def _static(request: web.Request) -> web.StreamResponse:
    return _static_file(request.match_info["path"])


def _static_file(path: str) -> web.Response:
    """A file of web/static, by a path that cannot leave it (no .., no hidden files)."""
    parts = path.split("/")
    if any(not p or p.startswith(".") for p in parts):
        raise web.HTTPNotFound()
    suffix = "." + parts[-1].rpartition(".")[2]
    content_type = STATIC_TYPES.get(suffix)
    if content_type is None:
        raise web.HTTPNotFound()
    node = resources.files("holodesk.daemon.web").joinpath("static")
    for part in parts:
        node = node.joinpath(part)
    if not node.is_file():
        raise web.HTTPNotFound()
    return web.Response(body=node.read_bytes(), content_type=content_type, charset="utf-8")


# Auth ----------------------------------------------------------------------------------


async def _login(request: web.Request) -> web.StreamResponse:
    body = await _json_body(request)
    token = body.get("token")
    if not isinstance(token, str):
        raise InvalidArgument("token", "a string is required")
    response = web.json_response({})
    principal = request.app[AUTH].login(token.strip(), response)
    response.text = json.dumps({"principal": principal.name})
    return response


async def _logout(request: web.Request) -> web.StreamResponse:
    await _json_body(request)
    response = web.json_response({})
    request.app[AUTH].logout(request, response)
    return response


async def _me(request: web.Request) -> web.StreamResponse:
    auth = request.app[AUTH]
    principal = auth.require_admin(request)
    return web.json_response({"principal": principal.name, "open_mode": auth.open_mode})


# Sessions ------------------------------------------------------------------------------


async def _sessions(request: web.Request) -> web.StreamResponse:
    request.app[AUTH].require_admin(request)
    return web.json_response(request.app[HUB].snapshot())


async def _frame(request: web.Request) -> web.StreamResponse:
    request.app[AUTH].require_admin(request)
    session_id = request.match_info["session_id"]
    data = await request.app[HUB].thumbnail(session_id)
    if data is None:
        raise NotFound("frame of session", session_id, "no frame yet, or no such session")
    return web.Response(body=data, content_type="image/jpeg")


async def _control(request: web.Request) -> web.StreamResponse:
    request.app[AUTH].require_admin(request)
    body = await _json_body(request)
    registry, hub = request.app[REGISTRY], request.app[HUB]
    session_id = request.match_info["session_id"]
    verb = request.match_info["verb"]
    if verb == "pause":
        session = registry.pause(session_id)
    elif verb == "takeover":
        session = registry.get(session_id)
        hub.take_over(session)
    elif verb == "resume":
        note = _text(body, "note", TEXT_CHARS)
        session = registry.resume(session_id, note)
        if note:
            log.info("session %s handed back with a note (%d chars)", session_id, len(note))
    elif verb == "stop":
        reason = clip(_text(body, "reason", None), REASON_CHARS) or "stopped from the live view"
        session = registry.cancel(session_id, reason)
    else:
        raise web.HTTPNotFound()
    return web.json_response(hub.summary(session))


def _text(body: dict[str, Any], key: str, limit: int | None) -> str:
    value = body.get(key, "")
    if not isinstance(value, str):
        raise InvalidArgument(key, "must be a string")
    value = value.strip()
    if limit is not None and len(value) > limit:
        raise InvalidArgument(key, f"{len(value)} characters; the limit is {limit}")
    return value


async def _json_body(request: web.Request) -> dict[str, Any]:
    if request.content_type != "application/json":
        raise InvalidArgument("Content-Type", "must be application/json")
    try:
        body = await request.json()
    except json.JSONDecodeError as exc:
        raise InvalidArgument("body", f"not JSON: {exc.msg}") from None
    if body is None:
        return {}
    if not isinstance(body, dict):
        raise InvalidArgument("body", "must be a JSON object")
    return body


# Events --------------------------------------------------------------------------------


async def _events(request: web.Request) -> web.StreamResponse:
    """Server-sent events: a snapshot, then every change, until the viewer leaves,
    falls behind (its browser reconnects) or the daemon stops."""
    request.app[AUTH].require_admin(request)
    hub = request.app[HUB]
    session_id = request.query.get("session") or None
    viewer = hub.subscribe(session_id)
    try:
        response = web.StreamResponse(
            headers={
                "Content-Type": "text/event-stream",
                "X-Accel-Buffering": "no",
                **_SECURITY_HEADERS,
            }
        )
        await response.prepare(request)
        await response.write(f"retry: {RETRY_MS}\n\n".encode())
        await _send(response, hub.snapshot(session_id))
        await _pump(response, viewer, hub)
    finally:
        hub.unsubscribe(viewer)
    return response


async def _pump(response: web.StreamResponse, viewer: Viewer, hub: LiveHub) -> None:
    stop = [
        asyncio.ensure_future(viewer.lagged.wait()),
        asyncio.ensure_future(hub.closing.wait()),
    ]
    try:
        while not viewer.lagged.is_set() and not hub.closing.is_set():
            getter = asyncio.ensure_future(viewer.queue.get())
            done, _ = await asyncio.wait(
                [getter, *stop], timeout=KEEPALIVE_S, return_when=asyncio.FIRST_COMPLETED
            )
            if getter not in done:
                getter.cancel()
                if not done:
                    await response.write(b": keepalive\n\n")
                continue
            await _send(response, getter.result())
            while not viewer.queue.empty():  # drain what piled up in one go
                await _send(response, viewer.queue.get_nowait())
    except ConnectionResetError:
        pass  # the browser left
    finally:
        for waiter in stop:
            waiter.cancel()


async def _send(response: web.StreamResponse, message: dict[str, Any]) -> None:
    kind = message.get("type", "message")
    data = json.dumps(message, separators=(",", ":"))
    await response.write(f"event: {kind}\ndata: {data}\n\n".encode())


# The server ----------------------------------------------------------------------------


@dataclass
class WebServer:
    """The running live view: where it listens, and how to stop it."""

    runner: web.AppRunner
    hub: LiveHub
    host: str
    port: int
    tls: bool

    @property
    def url(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{'https' if self.tls else 'http'}://{host}:{self.port}/"

    async def stop(self) -> None:
        self.hub.detach()  # ends every event stream
        await self.runner.cleanup()


def ssl_context(config: ServerConfig) -> ssl.SSLContext | None:
    """The gRPC port's certificate and key; with --client-ca, browsers may present a
    client certificate (optional: tokens still work)."""
    if not config.tls:
        return None
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(config.tls_cert, config.tls_key)
    if config.client_ca:
        context.load_verify_locations(cafile=config.client_ca)
        context.verify_mode = ssl.CERT_OPTIONAL
    return context


async def start_web(
    config: ServerConfig, registry: SessionRegistry, authenticator: Authenticator
) -> WebServer | None:
    """Serve the live view at config.web (None when it is off)."""
    address = config.web_address
    if address is None:
        return None
    host, port = address
    context = ssl_context(config)
    hub = LiveHub(registry)
    hub.attach()
    auth = WebAuth(authenticator, secure_cookie=context is not None)
    runner = web.AppRunner(build_app(registry, hub, auth), access_log=None, shutdown_timeout=1.0)
    await runner.setup()
    try:
        site = web.TCPSite(runner, host, port, ssl_context=context)
        await site.start()
    except OSError as exc:
        hub.detach()
        await runner.cleanup()
        raise OSError(f"cannot serve the live view on {config.web}: {exc.strerror or exc}") from exc
    bound = runner.addresses[0]
    server = WebServer(runner, hub, host, int(bound[1]), tls=context is not None)
    log.info("live view on %s", server.url)
    return server
