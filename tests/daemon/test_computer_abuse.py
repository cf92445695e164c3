"""ComputerService under hostile or careless callers, against a real daemon: who may
drive whose desktop, malformed and oversized requests, a flood of requests on one
desktop, and a second client taking a name already attached. Each gets a precise
status naming the cause, and nothing reaches the desktop."""

from __future__ import annotations

import asyncio
import math
from pathlib import Path

import grpc
import pytest
from google.rpc import error_details_pb2

from holodesk.daemon.principals import Role
from holodesk.daemon.rpc.credentials import (
    CredentialsError,
    new_token,
    parse_credentials,
    token_entry_toml,
)
from holodesk.daemon.session.attached_desktops import MAX_QUEUED_BATCHES
from holodesk.proto.limits import ID_CHARS, MAX_ACTIONS
from holodesk.proto.v1 import action_pb2, agent_pb2, computer_pb2, geometry_pb2
from tests.daemon.computer_support import (
    act_request,
    attach,
    click,
    computer,
    desktops_of,
    results,
    type_text,
)
from tests.daemon.support import (
    GUARD_S,
    Tokens,
    make_frame,
    rich_status,
    running_daemon,
    wait_until,
)

pytestmark = pytest.mark.abuse


def _tokens(directory: Path) -> Tokens:
    """owner and stranger are operators; helper is an operator allowed to drive owner's."""
    roles = {"owner": "operator", "stranger": "operator", "bot": "agent", "root": "admin"}
    tokens = {name: new_token() for name in [*roles, "helper"]}
    text = "".join(token_entry_toml(n, Role(r), tokens[n]) + "\n" for n, r in roles.items())
    text += token_entry_toml("helper", Role.OPERATOR, tokens["helper"])
    text += 'drives = ["token:owner"]\n'
    path = directory / "tokens.toml"
    path.write_text(text)
    return Tokens(path, tokens)


async def _code(call: object) -> grpc.StatusCode:
    try:
        await call  # type: ignore[misc]
    except grpc.aio.AioRpcError as exc:
        return exc.code()
    return grpc.StatusCode.OK


async def test_roles_decide_who_may_list_look_at_and_drive_a_desktop(tmp_path: Path) -> None:
    tokens = _tokens(tmp_path)
    async with running_daemon([], tokens_file=str(tokens.path)) as daemon:
        desk, _ = await attach(daemon, "desk", metadata=tokens.metadata("owner"))
        api = computer(daemon.channel)
        frame_request = computer_pb2.GetFrameRequest(desktop_id="desk")

        assert await _code(api.GetFrame(frame_request)) == grpc.StatusCode.UNAUTHENTICATED
        # An agent cannot call the service at all; the error names the role needed.
        with pytest.raises(grpc.aio.AioRpcError) as caught:
            await api.GetFrame(frame_request, metadata=tokens.metadata("bot"))
        assert caught.value.code() == grpc.StatusCode.PERMISSION_DENIED
        assert "needs operator" in (caught.value.details() or "")
        # Another operator sees nothing and may not drive it.
        stranger = tokens.metadata("stranger")
        listed = await api.ListDesktops(computer_pb2.ListDesktopsRequest(), metadata=stranger)
        assert not listed.desktops
        for call in (
            api.GetFrame(frame_request, metadata=stranger),
            api.Act(act_request("desk", type_text("x1", "no")), metadata=stranger),
        ):
            assert await _code(call) == grpc.StatusCode.PERMISSION_DENIED
        assert daemon.running.registry.list()[0].step == 0
        # Its owner, the operator its entry names in drives, and an admin may.
        for name in ("owner", "helper", "root"):
            metadata = tokens.metadata(name)
            listed = await api.ListDesktops(computer_pb2.ListDesktopsRequest(), metadata=metadata)
            assert [(d.desktop_id, d.owner) for d in listed.desktops] == [("desk", "token:owner")]
            got = await api.GetFrame(frame_request, metadata=metadata)
            assert got.frame.frame_id == "f1"
        call = api.Act(
            act_request("desk", type_text("h1", "hi")), metadata=tokens.metadata("helper")
        )
        step = await desk.recv()
        await desk.observe_nowait(make_frame("f2", 320, 200), results(step.actions))
        response = await asyncio.wait_for(call, GUARD_S)
        assert response.results[0].status == action_pb2.ACTION_STATUS_OK


def test_drives_is_for_operators_and_names_principals() -> None:
    digest = "0" * 64
    entry = {"name": "a", "role": "operator", "sha256": digest, "drives": ["token:b", "cn:desk"]}
    (parsed,) = parse_credentials({"token": [entry]}).tokens
    assert parsed.drives == ("token:b", "cn:desk")
    with pytest.raises(CredentialsError, match="drives is for role operator"):
        parse_credentials({"token": [{**entry, "role": "agent"}]})
    with pytest.raises(CredentialsError, match="name principals"):
        parse_credentials({"token": [{**entry, "drives": ["laptop"]}]})
    with pytest.raises(CredentialsError, match="list of principal names"):
        parse_credentials({"token": [{**entry, "drives": "token:b"}]})
    assert Role.OPERATOR.allows(Role.AGENT)
    assert not Role.AGENT.allows(Role.OPERATOR)
    assert not Role.OPERATOR.allows(Role.ADMIN)


def _with(action: action_pb2.Action, **changes: object) -> action_pb2.Action:
    copy = action_pb2.Action()
    copy.CopyFrom(action)
    for name, value in changes.items():
        setattr(copy, name, value)
    return copy


def _bad_requests() -> dict[str, tuple[computer_pb2.ActRequest, str]]:
    """Request -> the field its INVALID_ARGUMENT must name."""
    far = click("c", math.inf, 1)
    triple = click("c", 1, 1)
    triple.click.count = 4
    no_point = action_pb2.Action(action_id="c", frame_id="f1", click=action_pb2.ClickAction())
    done = action_pb2.Action(action_id="d", done=action_pb2.DoneAction(answer="x"))
    short_drag = action_pb2.Action(
        action_id="g", frame_id="f1", drag=action_pb2.DragAction(path=[geometry_pb2.Point()])
    )
    return {
        "too many actions": (
            act_request("desk", *(type_text(f"t{i}", "x") for i in range(MAX_ACTIONS + 1))),
            "actions",
        ),
        "long id": (
            act_request("desk", type_text("i" * (ID_CHARS + 1), "x")),
            "actions[0].action_id",
        ),
        "long desktop id": (act_request("d" * (ID_CHARS + 1), type_text("a", "x")), "desktop_id"),
        "no desktop id": (act_request("", type_text("a", "x")), "desktop_id"),
        "no actions": (act_request("desk"), "actions"),
        "no action id": (act_request("desk", type_text("", "x")), "actions[0].action_id"),
        "id twice": (
            act_request("desk", type_text("a", "x"), type_text("a", "x")),
            "actions[1].action_id",
        ),
        "no kind": (act_request("desk", action_pb2.Action(action_id="k")), "actions[0]"),
        "done": (act_request("desk", done), "actions[0].done"),
        "no frame id": (
            act_request("desk", _with(click("c", 1, 1), frame_id="")),
            "actions[0].frame_id",
        ),
        "unknown frame": (act_request("desk", click("c", 1, 1, "nope")), "actions[0].frame_id"),
        "infinite point": (act_request("desk", far), "actions[0].click.point"),
        "no point": (act_request("desk", no_point), "actions[0].click.point"),
        "count 4": (act_request("desk", triple), "actions[0].click.count"),
        "short drag": (act_request("desk", short_drag), "actions[0].drag.path"),
    }


async def test_malformed_and_oversized_requests_name_their_field_and_run_nothing() -> None:
    async with running_daemon([]) as daemon:
        await attach(daemon)
        api = computer(daemon.channel)
        for label, (request, field) in _bad_requests().items():
            with pytest.raises(grpc.aio.AioRpcError) as caught:
                await api.Act(request)
            assert caught.value.code() == grpc.StatusCode.INVALID_ARGUMENT, label
            violation = error_details_pb2.BadRequest()
            assert rich_status(caught.value).details[0].Unpack(violation), label
            assert violation.field_violations[0].field == field, label
        assert daemon.running.registry.list()[0].step == 0
        assert not desktops_of(daemon).get("desk").store  # no id was taken
        assert await _code(api.Act(act_request("nowhere", type_text("a", "x")))) == (
            grpc.StatusCode.NOT_FOUND
        )


async def test_an_id_reused_for_another_action_is_refused() -> None:
    async with running_daemon([]) as daemon:
        desk, _ = await attach(daemon)
        api = computer(daemon.channel)
        call = api.Act(act_request("desk", type_text("a", "first")))
        step = await desk.recv()
        await desk.observe_nowait(make_frame("f2", 320, 200), results(step.actions))
        await asyncio.wait_for(call, GUARD_S)
        with pytest.raises(grpc.aio.AioRpcError) as caught:
            await api.Act(act_request("desk", type_text("a", "second")))
        assert caught.value.code() == grpc.StatusCode.INVALID_ARGUMENT
        assert "already used on this desktop for another action" in (caught.value.details() or "")
        assert daemon.running.registry.list()[0].step == 1


async def test_a_flood_on_one_desktop_is_resource_exhausted_with_retry_info() -> None:
    async with running_daemon([]) as daemon:
        desk, _ = await attach(daemon)
        api = computer(daemon.channel)
        desktop = desktops_of(daemon).get("desk")
        # One batch goes out to the client (which does not answer yet), the rest queue.
        calls = [api.Act(act_request("desk", type_text("first", "x")))]
        await desk.recv()
        calls += [
            api.Act(act_request("desk", type_text(f"q{i}", "x"))) for i in range(MAX_QUEUED_BATCHES)
        ]
        await wait_until(lambda: len(desktop.queue) == MAX_QUEUED_BATCHES, "the queue full")
        with pytest.raises(grpc.aio.AioRpcError) as caught:
            await api.Act(act_request("desk", type_text("one-too-many", "x")))
        assert caught.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
        retry = error_details_pb2.RetryInfo()
        assert any(d.Unpack(retry) for d in rich_status(caught.value).details)
        assert "one-too-many" not in desktop.store
        # The client leaves: the queued callers hear that nothing of theirs ran.
        desk.call.cancel()
        codes = await asyncio.wait_for(asyncio.gather(*(_code(c) for c in calls)), GUARD_S)
        assert set(codes) == {grpc.StatusCode.UNAVAILABLE}
        assert [i for i in desktop.store if i.startswith("q")] == []


async def test_a_second_client_cannot_take_a_name_already_attached() -> None:
    async with running_daemon([]) as daemon:
        await attach(daemon, "desk")
        second = daemon.stream()
        await second.start("desk", policy="computer")
        ended = await second.observe(make_frame("g1", 320, 200))
        assert ended.ended.outcome == agent_pb2.SESSION_OUTCOME_FAILED
        assert "already attached" in ended.ended.reason
        listed = await computer(daemon.channel).ListDesktops(computer_pb2.ListDesktopsRequest())
        assert [d.frame_id for d in listed.desktops] == ["f1"]
