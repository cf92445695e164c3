"""The live view's HTTP side (web/): auth, TLS rules, events, controls, bounded viewers.

A real daemon (gRPC and the aiohttp live view on 127.0.0.1:0) with a real session
on its RunSession stream; requests go through a real aiohttp client.
"""

from __future__ import annotations

import asyncio
import io
import json
import logging
import ssl
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from PIL import Image

from holodesk.daemon.config import ServerConfig
from holodesk.daemon.rpc.server import RunningServer, serve
from holodesk.daemon.web.hub import KEPT_LEFT_FRAMES, VIEWER_QUEUE
from holodesk.proto.v1 import agent_pb2, frame_pb2, geometry_pb2
from tests.daemon.support import (
    GUARD_S,
    RecordingPolicy,
    holo,
    make_frame,
    ok_results,
    running_daemon,
    wait_until,
    write_tokens,
)
from tests.support.certs import CertificateAuthority

WAIT = holo({"action": "wait", "seconds": 0}, thought="look again")


def web_url(running: RunningServer, path: str = "/") -> str:
    assert running.web is not None
    return running.web.url.rstrip("/") + path


def json_post(session: aiohttp.ClientSession, url: str, body: Any, **kwargs: Any) -> Any:
    return session.post(
        url, data=json.dumps(body), headers={"Content-Type": "application/json"}, **kwargs
    )


class Events:
    """An SSE stream read line by line: (event, data) pairs."""

    def __init__(self, response: aiohttp.ClientResponse) -> None:
        self.response = response

    async def next(self) -> tuple[str, dict[str, Any]]:
        kind, data = "message", ""
        while True:
            raw = await asyncio.wait_for(self.response.content.readline(), GUARD_S)
            if not raw:
                raise AssertionError("the event stream ended")
            line = raw.decode().rstrip("\n")
            if not line:
                if data:
                    return kind, json.loads(data)
                continue
            if line.startswith("event: "):
                kind = line[len("event: ") :]
            elif line.startswith("data: "):
                data += line[len("data: ") :]

    async def until(self, kind: str, **match: Any) -> dict[str, Any]:
        while True:
            got, data = await self.next()
            if got == kind and all(data.get(k) == v for k, v in match.items()):
                return data


@pytest.fixture
async def http() -> AsyncIterator[aiohttp.ClientSession]:
    async with aiohttp.ClientSession() as session:
        yield session


# Off by default; exposure rules ------------------------------------------------------


async def test_off_by_default() -> None:
    async with running_daemon([RecordingPolicy([])]) as daemon:
        assert daemon.running.web is None


def test_a_non_loopback_web_address_needs_tls_and_tokens(tmp_path: Path) -> None:
    with pytest.raises(
        ValueError, match=r"refusing to serve the live view \(--web\) on 0\.0\.0\.0"
    ):
        ServerConfig(web="0.0.0.0:8080")
    tokens = write_tokens(tmp_path, admin="admin")
    with pytest.raises(ValueError, match=r"TLS \(--tls-cert and --tls-key\) is not configured"):
        ServerConfig(web="0.0.0.0:8080", tokens_file=str(tokens.path))
    ServerConfig(web="0.0.0.0:8080", insecure=True)  # the explicit opt-out, as for gRPC


def test_bad_web_addresses_are_refused_clearly() -> None:
    with pytest.raises(ValueError, match=r"--web 'nonsense' is not HOST:PORT or PORT"):
        ServerConfig(web="nonsense")
    with pytest.raises(ValueError, match=r"is not HOST:PORT or PORT"):
        ServerConfig(web="127.0.0.1:99999")
    assert ServerConfig(web="50080").web_address == ("127.0.0.1", 50080)
    assert ServerConfig(web="[::1]:50080").web_address == ("::1", 50080)
    with pytest.raises(ValueError, match=r"needs --tokens-file"):
        ServerConfig(listen="unix:/tmp/holodesk-test.sock", web="127.0.0.1:0")


# Who may look -----------------------------------------------------------------------


async def test_tokens_are_required_and_only_admin_may_look(
    tmp_path: Path, http: aiohttp.ClientSession
) -> None:
    tokens = write_tokens(tmp_path, boss="admin", runner="agent")
    async with running_daemon(
        [RecordingPolicy([])], web="127.0.0.1:0", tokens_file=str(tokens.path)
    ) as daemon:
        url = web_url(daemon.running, "/api/sessions")
        async with http.get(url) as refused:
            assert refused.status == 401
            assert "log in" in (await refused.json())["error"]
        async with http.get(url, headers={"Authorization": "Bearer not-a-token"}) as wrong:
            assert wrong.status == 401
        agent = {"Authorization": f"Bearer {tokens.by_name['runner']}"}
        async with http.get(url, headers=agent) as forbidden:
            assert forbidden.status == 403
        admin = {"Authorization": f"Bearer {tokens.by_name['boss']}"}
        async with http.get(url, headers=admin) as ok:
            assert ok.status == 200
            assert (await ok.json()) == {"type": "snapshot", "sessions": [], "ended": []}
        # The page itself is static and open; it holds no data and a strict CSP.
        async with http.get(web_url(daemon.running)) as page:
            assert page.status == 200
            assert "x-data" in await page.text()
            csp = page.headers["Content-Security-Policy"]
            assert "script-src 'self'" in csp
            assert "unsafe" not in csp
        async with http.get(web_url(daemon.running, "/static/vendor/alpine-csp.esm.min.js")) as js:
            assert js.status == 200
            assert js.content_type == "text/javascript"
        async with http.get(web_url(daemon.running, "/static/../auth.py")) as escape:
            assert escape.status == 404


async def test_cookie_login_logout_and_revocation(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    tokens = write_tokens(tmp_path, boss="admin", runner="agent")
    async with (
        running_daemon(
            [RecordingPolicy([])], web="127.0.0.1:0", tokens_file=str(tokens.path)
        ) as daemon,
        aiohttp.ClientSession(cookie_jar=aiohttp.CookieJar(unsafe=True)) as http,
    ):
        login = web_url(daemon.running, "/api/login")
        me = web_url(daemon.running, "/api/me")
        async with json_post(http, login, {"token": "wrong"}) as bad:
            assert bad.status == 401
        async with json_post(http, login, {"token": tokens.by_name["runner"]}) as agent:
            assert agent.status == 403
        # A form post (what another site could make a browser send) is refused.
        async with http.post(login, data={"token": tokens.by_name["boss"]}) as form:
            assert form.status == 400
        async with json_post(http, login, {"token": tokens.by_name["boss"]}) as ok:
            assert ok.status == 200
            assert (await ok.json()) == {"principal": "token:boss"}
            cookie = ok.headers["Set-Cookie"]
            assert "HttpOnly" in cookie
            assert "SameSite=Strict" in cookie
            assert tokens.by_name["boss"] not in cookie  # a random login id, never the token
            assert "Secure" not in cookie  # plain HTTP on loopback
        async with http.get(me) as who:
            assert (await who.json())["principal"] == "token:boss"

        # The token leaves the credentials file (SIGHUP): its logins end with it.
        write_tokens(tmp_path, someone="admin")  # the same file, without boss
        daemon.running.reload_credentials()
        async with http.get(me) as revoked:
            assert revoked.status == 401
            assert "no longer" in (await revoked.json())["error"]
    assert "live view: token:boss logged in" in caplog.text
    for token in tokens.by_name.values():  # refused or accepted, never logged
        assert token not in caplog.text


async def test_logout_ends_the_login(tmp_path: Path) -> None:
    tokens = write_tokens(tmp_path, boss="admin")
    async with (
        running_daemon(
            [RecordingPolicy([])], web="127.0.0.1:0", tokens_file=str(tokens.path)
        ) as daemon,
        aiohttp.ClientSession(cookie_jar=aiohttp.CookieJar(unsafe=True)) as http,
    ):
        async with json_post(
            http, web_url(daemon.running, "/api/login"), {"token": tokens.by_name["boss"]}
        ):
            pass
        jar = {c.key: c.value for c in http.cookie_jar}
        async with json_post(http, web_url(daemon.running, "/api/logout"), {}) as out:
            assert out.status == 200
        async with (
            aiohttp.ClientSession(cookies=jar) as replay,  # the old cookie, replayed
            replay.get(web_url(daemon.running, "/api/me")) as gone,
        ):
            assert gone.status == 401


async def test_tls_serves_the_page_over_https_with_a_secure_cookie(tmp_path: Path) -> None:
    ca = CertificateAuthority("holodesk test CA")
    cert, key = ca.issue("localhost", hosts=("localhost", "127.0.0.1")).write(tmp_path, "server")
    tokens = write_tokens(tmp_path, boss="admin")
    trust = ssl.create_default_context(cafile=str(ca.write(tmp_path)))
    settings = ServerConfig(
        listen="127.0.0.1:0",
        web="127.0.0.1:0",
        tls_cert=str(cert),
        tls_key=str(key),
        tokens_file=str(tokens.path),
    )
    async with serve(settings, policies=[RecordingPolicy([])]) as running:
        assert running.web is not None
        assert running.web.url.startswith("https://127.0.0.1:")
        async with aiohttp.ClientSession(cookie_jar=aiohttp.CookieJar(unsafe=True)) as http:
            async with json_post(
                http, web_url(running, "/api/login"), {"token": tokens.by_name["boss"]}, ssl=trust
            ) as ok:
                assert ok.status == 200
                assert "Secure" in ok.headers["Set-Cookie"]
            plain = web_url(running, "/").replace("https://", "http://")
            with pytest.raises(aiohttp.ClientError):
                async with http.get(plain):
                    pass


# Watching and steering ----------------------------------------------------------------


async def start_session(daemon: Any, task: str = "watch me") -> Any:
    stream = daemon.stream()
    started = await stream.start(task)
    return stream, started.session_id


async def observe(stream: Any, frame_id: str, results: Any = ()) -> agent_pb2.RunSessionResponse:
    await stream.send(
        agent_pb2.RunSessionRequest(
            observation=agent_pb2.Observation(
                frame=make_frame(frame_id, 64, 48), results=list(results)
            )
        )
    )
    response: agent_pb2.RunSessionResponse = await stream.recv()
    return response


def ok(actions: agent_pb2.Actions) -> list[Any]:
    return ok_results(actions)


async def test_events_show_frames_thoughts_actions_and_results(http: aiohttp.ClientSession) -> None:
    policy = RecordingPolicy([WAIT, WAIT, WAIT])
    async with running_daemon([policy], web="127.0.0.1:0") as daemon:
        stream, sid = await start_session(daemon)
        async with http.get(web_url(daemon.running, "/api/events")) as response:
            assert response.headers["Content-Type"] == "text/event-stream"
            events = Events(response)
            kind, snapshot = await events.next()
            assert kind == "snapshot"
            (info,) = snapshot["sessions"]
            assert (info["session_id"], info["task"], info["state"]) == (
                sid,
                "watch me",
                "waiting_for_client",
            )

            first = await observe(stream, "f1")
            frame = await events.until("frame", session_id=sid)
            assert (frame["frame_id"], frame["width"], frame["height"]) == ("f1", 64, 48)
            step = await events.until("step", session_id=sid)
            assert step["step"] == 1
            assert step["thought"] == "look again"
            assert step["actions"] == ["wait 0 ms"]
            await observe(stream, "f2", ok(first.actions))
            results = await events.until("results", session_id=sid, step=1)
            assert [r["status"] for r in results["results"]] == ["ok"]

        async with http.get(web_url(daemon.running, f"/api/sessions/{sid}/frame")) as thumb:
            assert thumb.status == 200
            assert thumb.content_type == "image/jpeg"
            image = Image.open(io.BytesIO(await thumb.read()))
            assert image.size == (64, 48)
        async with http.get(web_url(daemon.running, "/api/sessions/nope/frame")) as missing:
            assert missing.status == 404


async def test_pause_resume_with_a_note_and_stop(http: aiohttp.ClientSession) -> None:
    policy = RecordingPolicy([WAIT] * 5)
    async with running_daemon([policy], web="127.0.0.1:0") as daemon:
        stream, sid = await start_session(daemon)
        control = web_url(daemon.running, f"/api/sessions/{sid}")
        first = await observe(stream, "f1")
        assert first.actions.step == 1

        async with json_post(http, control + "/takeover", {}) as taken:
            body = await taken.json()
            assert (body["state"], body["taken_over"]) == ("paused", True)
        await stream.send(
            agent_pb2.RunSessionRequest(
                observation=agent_pb2.Observation(
                    frame=make_frame("f2", 64, 48), results=ok(first.actions)
                )
            )
        )
        session = daemon.running.registry.get(sid)
        await asyncio.wait_for(session.held.wait(), GUARD_S)  # parked: no step decided
        assert policy.decisions == 1

        async with json_post(http, control + "/resume", {"note": 7}) as bad:
            assert bad.status == 400
        async with json_post(http, control + "/resume", {"note": "x" * 20000}) as long:
            assert long.status == 400
        async with json_post(http, control + "/resume", {"note": "I closed the popup"}) as back:
            body = await back.json()
            assert body["state"] != "paused"
            assert body["taken_over"] is False
        # The screen changed by hand: a fresh frame first, then the step with the note.
        refresh = await stream.recv()
        assert not refresh.actions.actions
        second = await observe(stream, "f3")
        assert second.actions.step == 2
        context = policy.contexts[-1]
        assert context.operator_note == "I closed the popup"
        assert context.frame.frame_id == "f3"
        # ... and only that step: the note is spent.
        await observe(stream, "f4", ok(second.actions))
        assert policy.contexts[-1].operator_note == ""

        async with json_post(http, control + "/pause", {}) as paused:
            assert (await paused.json())["state"] == "paused"
        async with json_post(http, control + "/stop", {"reason": "enough"}) as stopped:
            assert stopped.status == 200
        ended = await stream.recv()
        while not ended.HasField("ended"):
            ended = await stream.recv()
        assert ended.ended.outcome == agent_pb2.SESSION_OUTCOME_CANCELLED
        assert ended.ended.reason == "enough"
        await wait_until(lambda: len(daemon.running.registry) == 0, "the session to leave")
        async with json_post(http, control + "/pause", {}) as gone:
            assert gone.status == 404
        # Its last frame still answers: a page may ask for it just before it hears "gone"
        # (tests/e2e/test_live_view.py got a 404 there once).
        async with http.get(control + "/frame?seq=9") as last:
            assert last.status == 200
            assert Image.open(io.BytesIO(await last.read())).size == (64, 48)
        async with json_post(http, control + "/dance", {}) as unknown:
            assert unknown.status == 404


async def test_only_the_last_frames_of_sessions_that_left_are_kept(
    http: aiohttp.ClientSession,
) -> None:
    policy = RecordingPolicy([WAIT] * (KEPT_LEFT_FRAMES + 2))
    async with running_daemon([policy], web="127.0.0.1:0") as daemon:
        registry = daemon.running.registry

        async def frame_status(sid: str) -> int:
            async with http.get(web_url(daemon.running, f"/api/sessions/{sid}/frame")) as got:
                return got.status

        left = []
        for index in range(KEPT_LEFT_FRAMES + 1):
            stream, sid = await start_session(daemon, f"task {index}")
            await observe(stream, f"f{index}")
            assert await frame_status(sid) == 200  # taken before the step was decided
            registry.cancel(sid, "done")
            await wait_until(lambda: len(registry) == 0, "the session to leave")
            left.append(sid)
        assert await frame_status(left[0]) == 404  # the oldest went
        assert [await frame_status(sid) for sid in left[1:]] == [200] * KEPT_LEFT_FRAMES


async def test_a_viewer_that_never_reads_is_cut_off_and_costs_nothing() -> None:
    """A stalled viewer's queue fills to its bound and the viewer is dropped; the
    session runs on at full speed and the daemon holds no more for it."""
    policy = RecordingPolicy([WAIT] * 400)
    async with running_daemon([policy], web="127.0.0.1:0") as daemon:
        assert daemon.running.web is not None
        hub = daemon.running.web.hub
        stalled = hub.subscribe()
        stream, _sid = await start_session(daemon)
        response = await observe(stream, "f0")
        for index in range(1, 200):
            response = await observe(stream, f"f{index}", ok(response.actions))
            if stalled.lagged.is_set():
                break
        assert stalled.lagged.is_set()
        assert stalled.queue.qsize() == VIEWER_QUEUE
        more = 0
        while more < 20:  # nothing more is queued for it, and the session goes on
            response = await observe(stream, f"g{more}", ok(response.actions))
            more += 1
        assert stalled.queue.qsize() == VIEWER_QUEUE
        assert response.actions.step > 20
        hub.unsubscribe(stalled)
        assert hub.viewers == 0


async def test_after_a_hold_the_fresh_frame_may_be_a_delta_and_replaces_the_held_one(
    http: aiohttp.ClientSession,
) -> None:
    """A client sends deltas on its last frame: the held one stays a base until the
    fresh frame arrives, then leaves the window (one frame per step)."""
    policy = RecordingPolicy([WAIT] * 3)
    async with running_daemon([policy], web="127.0.0.1:0") as daemon:
        stream, sid = await start_session(daemon)
        first = await observe(stream, "f1")
        async with json_post(http, web_url(daemon.running, f"/api/sessions/{sid}/pause"), {}):
            pass
        await stream.send(
            agent_pb2.RunSessionRequest(
                observation=agent_pb2.Observation(
                    frame=make_frame("f2", 64, 48), results=ok(first.actions)
                )
            )
        )
        await asyncio.wait_for(daemon.running.registry.get(sid).held.wait(), GUARD_S)
        async with json_post(http, web_url(daemon.running, f"/api/sessions/{sid}/resume"), {}):
            pass
        refresh = await stream.recv()
        assert not refresh.actions.actions
        unchanged = frame_pb2.Frame(
            frame_id="f3",
            size=geometry_pb2.Size(width=64, height=48),
            base_frame_id="f2",
            source=geometry_pb2.Rect(x=0, y=0, width=64, height=48),
            scale_factor=1.0,
        )
        await stream.send(
            agent_pb2.RunSessionRequest(observation=agent_pb2.Observation(frame=unchanged))
        )
        second = await stream.recv()
        assert second.actions.step == 2
        assert [f.frame_id for f in policy.contexts[-1].frames] == ["f1", "f3"]


async def test_mtls_a_browser_certificate_maps_to_its_client_entry(tmp_path: Path) -> None:
    ca = CertificateAuthority("holodesk test CA")
    cert, key = ca.issue("localhost", hosts=("localhost", "127.0.0.1")).write(tmp_path, "server")
    ca_file = ca.write(tmp_path)
    admin_cert, admin_key = ca.issue("ops-laptop").write(tmp_path, "ops")
    agent_cert, agent_key = ca.issue("build-bot").write(tmp_path, "bot")
    tokens = write_tokens(tmp_path, clients={"ops-laptop": "admin", "build-bot": "agent"})
    settings = ServerConfig(
        listen="127.0.0.1:0",
        web="127.0.0.1:0",
        tls_cert=str(cert),
        tls_key=str(key),
        client_ca=str(ca_file),
        tokens_file=str(tokens.path),
    )

    def context(cert_file: Path | None = None, key_file: Path | None = None) -> ssl.SSLContext:
        made = ssl.create_default_context(cafile=str(ca_file))
        if cert_file is not None:
            made.load_cert_chain(cert_file, key_file)
        return made

    async with serve(settings, policies=[RecordingPolicy([])]) as running:
        me = web_url(running, "/api/me")
        async with aiohttp.ClientSession() as http:
            async with http.get(me, ssl=context(admin_cert, admin_key)) as admin:
                assert admin.status == 200
                assert (await admin.json())["principal"] == "cn:ops-laptop"
            async with http.get(me, ssl=context(agent_cert, agent_key)) as agent:
                assert agent.status == 403
            async with http.get(me, ssl=context()) as nobody:  # optional: tokens still work
                assert nobody.status == 401


async def test_a_stream_for_one_session_hears_only_that_session(
    http: aiohttp.ClientSession,
) -> None:
    policy = RecordingPolicy([WAIT] * 4)
    async with running_daemon([policy], web="127.0.0.1:0") as daemon:
        watched_stream, watched = await start_session(daemon, "the watched one")
        other_stream, other = await start_session(daemon, "another one")
        url = web_url(daemon.running, f"/api/events?session={watched}")
        async with http.get(url) as response:
            events = Events(response)
            kind, snapshot = await events.next()
            assert kind == "snapshot"
            assert [s["session_id"] for s in snapshot["sessions"]] == [watched]
            await observe(other_stream, "o1")
            await observe(watched_stream, "w1")
            seen = []
            while True:
                kind, data = await events.next()
                seen.append(data.get("session_id"))
                if kind == "step":
                    break
            assert other not in seen
            assert set(seen) == {watched}
