"""The computer API from the Node.js client: clients/node's drive-desktop script
(@grpc/grpc-js, the contract loaded from protos/) lists, takes a frame and clicks
on a desktop a real `holodesk attach` lent on Xvfb; the Tk probe app must receive
the click. The daemon runs with tokens: the script is an operator driving a desktop
attached by another principal that its credentials entry names in `drives`."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
from pathlib import Path
from typing import Any

import pytest

from holodesk.daemon.principals import Role
from holodesk.daemon.rpc.credentials import new_token, token_entry_toml
from holodesk.proto.v1 import computer_pb2_grpc
from tests.daemon.support import GUARD_S, bearer, running_daemon
from tests.support.probe import ProbeApp

from .computer_api_support import attached, wait_listed

pytestmark = [pytest.mark.x11, pytest.mark.e2e]

NODE_CLIENT = Path(__file__).resolve().parents[2] / "clients" / "node"


def _node() -> str:
    node = shutil.which("node")
    if node and (NODE_CLIENT / "node_modules" / "@grpc" / "grpc-js").is_dir():
        return node
    why = (
        "node is not on PATH" if not node else "run `npm ci` in clients/node (tools/setup.sh does)"
    )
    if os.environ.get("CI"):
        pytest.fail(f"the Node.js client cannot run: {why}")
    pytest.skip(why)


async def _drive(*args: str) -> tuple[int, list[dict[str, Any]], str]:
    process = await asyncio.create_subprocess_exec(
        _node(),
        str(NODE_CLIENT / "bin" / "drive-desktop.mjs"),
        *args,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await asyncio.wait_for(process.communicate(), GUARD_S)
    assert process.returncode is not None
    return process.returncode, [json.loads(x) for x in out.decode().splitlines()], err.decode()


async def test_the_node_client_clicks_a_button_on_an_attached_desktop(
    xvfb: str, probe: ProbeApp, tmp_path: Path
) -> None:
    desk_token, agent_token = new_token(), new_token()
    tokens = tmp_path / "tokens.toml"
    tokens.write_text(
        token_entry_toml("desk", Role.AGENT, desk_token)
        + "\n"
        + token_entry_toml("node-agent", Role.OPERATOR, agent_token)
        + 'drives = ["token:desk"]\n'
    )
    (tmp_path / "desk.token").write_text(desk_token)
    (tmp_path / "agent.token").write_text(agent_token)
    errlog = tmp_path / "attach.log"
    async with (
        running_daemon([], tokens_file=str(tokens)) as daemon,
        attached(
            daemon.running.address,
            xvfb,
            "node-desk",
            errlog,
            *("--token-file", str(tmp_path / "desk.token")),
        ),
    ):
        server = daemon.running.address
        token = ("--token-file", str(tmp_path / "agent.token"))

        api = computer_pb2_grpc.ComputerServiceStub(daemon.channel)
        await wait_listed(api, "node-desk", errlog, bearer(agent_token))
        ok_x, ok_y = probe.widgets["ok"].center
        saved = tmp_path / "frame.png"
        code, events, err = await _drive(
            *("--server", server, "--desktop", "node-desk", *token),
            *("--save-frame", str(saved), f"click:{ok_x},{ok_y}"),
        )
        assert code == 0, err
        desktops, frame, result, done = events
        assert desktops["desktops"] == [
            {"desktop_id": "node-desk", "owner": "token:desk", "attached": True}
        ]
        # Xvfb's frames are its whole screen at full size: frame pixels are screen pixels.
        assert frame["size"] == {"width": 1280, "height": 800}
        assert frame["source"] == {"x": 0, "y": 0, "width": 1280, "height": 800}
        assert saved.read_bytes().startswith(b"\x89PNG")
        assert result["status"] == "ACTION_STATUS_OK"
        assert result["action"] == f"click:{ok_x},{ok_y}"
        assert done["frame_id"] != frame["frame_id"]
        await asyncio.to_thread(probe.wait_for_event, "command", GUARD_S, widget="ok")

        # The desktop's own token is an agent's: it may attach, never drive.
        code, _, err = await _drive(
            "--server", server, "--token-file", str(tmp_path / "desk.token")
        )
        assert code == 5
        assert "PERMISSION_DENIED" in err
