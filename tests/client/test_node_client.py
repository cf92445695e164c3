"""The Node.js client (clients/node, @grpc/grpc-js) against a real daemon: a whole
session with token auth, Locate with the OCR policy, and the errors it reports."""

from __future__ import annotations

import asyncio
import io
import json
import os
import shutil
import subprocess
import tarfile
from pathlib import Path
from typing import Any

import pytest
from PIL import Image, ImageDraw, ImageFont

from holodesk.daemon.policies.ocr.policy import OcrPolicy
from tests.daemon.support import GUARD_S, holo, running_daemon, scripted_policy, write_tokens

NODE_CLIENT = Path(__file__).resolve().parents[2] / "clients" / "node"


def _node() -> str:
    node = shutil.which("node")
    installed = (NODE_CLIENT / "node_modules" / "@grpc" / "grpc-js").is_dir()
    if node and installed:
        return node
    why = (
        "node is not on PATH" if not node else "run `npm ci` in clients/node (tools/setup.sh does)"
    )
    if os.environ.get("CI"):
        pytest.fail(f"the Node.js client cannot run: {why}")
    pytest.skip(why)


async def _run_node(script: str, *args: str) -> tuple[int, list[dict[str, Any]], str]:
    process = await asyncio.create_subprocess_exec(
        _node(),
        str(NODE_CLIENT / "bin" / script),
        *args,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await asyncio.wait_for(process.communicate(), GUARD_S)
    events = [json.loads(line) for line in out.decode().splitlines() if line.strip()]
    assert process.returncode is not None
    return process.returncode, events, err.decode()


def _screenshot(path: Path, text: str = "", at: tuple[int, int] = (0, 0)) -> Path:
    image = Image.new("RGB", (640, 400), "white")
    if text:
        font = ImageFont.truetype("DejaVuSans.ttf", 28)
        ImageDraw.Draw(image).text(at, text, fill="black", font=font)
    buffer = io.BytesIO()
    image.save(buffer, "PNG")
    path.write_bytes(buffer.getvalue())
    return path


async def test_node_client_runs_a_whole_session_with_a_token(tmp_path: Path) -> None:
    tokens = write_tokens(tmp_path, node="agent")
    (tmp_path / "token").write_text(tokens.by_name["node"])
    policy = scripted_policy(
        [
            holo({"action": "click", "x": 500, "y": 250}),
            holo({"action": "write", "text": "héllo 日本"}),
            holo({"action": "answer", "content": "all done"}),
        ]
    )
    image = _screenshot(tmp_path / "screen.png")
    async with running_daemon([policy], tokens_file=str(tokens.path)) as daemon:
        code, events, err = await _run_node(
            "run-session.mjs",
            *("--server", daemon.running.address, "--task", "click then type"),
            *("--image", str(image), "--token-file", str(tmp_path / "token")),
        )
    assert code == 0, err
    executed = [e["action"] for e in events if e["event"] == "execute"]
    click, typed = executed
    # holo's 0-1000 coordinates land in the 640x400 frame's pixels.
    assert click["kind"] == "click"
    assert (click["click"]["point"]["x"], click["click"]["point"]["y"]) == (320, 100)
    assert click["frame_id"] == "node-1"
    assert typed["type_text"]["text"] == "héllo 日本"
    ended = events[-1]
    assert ended["event"] == "ended"
    assert ended["outcome"] == "SESSION_OUTCOME_SUCCEEDED"
    assert ended["answer"] == "all done"


async def test_node_client_without_the_token_is_refused_clearly(tmp_path: Path) -> None:
    tokens = write_tokens(tmp_path, node="agent")
    image = _screenshot(tmp_path / "screen.png")
    async with running_daemon([scripted_policy([])], tokens_file=str(tokens.path)) as daemon:
        code, _, err = await _run_node(
            "run-session.mjs",
            *("--server", daemon.running.address, "--task", "t", "--image", str(image)),
        )
    assert code == 5
    assert "UNAUTHENTICATED" in err
    assert "Bearer" in err


async def test_node_client_locates_text_with_the_ocr_policy(tmp_path: Path) -> None:
    image = _screenshot(tmp_path / "screen.png", "Submit", at=(400, 300))
    async with running_daemon([OcrPolicy()]) as daemon:
        code, locations, err = await _run_node(
            "locate.mjs",
            *("--server", daemon.running.address, "--image", str(image)),
            *("--describe", "Submit", "--describe", "Nowhere to be seen"),
        )
    assert code == 1, err  # one of the two was not found
    found, missing = locations
    assert found["found"] is True
    point = found["point"]
    assert isinstance(point, dict)
    # The word was drawn from (400, 300), about 90x30 pixels.
    assert 400 <= point["x"] <= 500
    assert 300 <= point["y"] <= 340
    assert missing["found"] is False


async def test_node_client_reports_a_bad_image_as_usage_error(tmp_path: Path) -> None:
    bad = tmp_path / "not.png"
    bad.write_text("hello")
    code, _, err = await _run_node(
        "run-session.mjs", "--server", "127.0.0.1:1", "--task", "t", "--image", str(bad)
    )
    assert code == 2
    assert err.strip() == f"{bad}: not a PNG file"


@pytest.mark.parametrize("script", ["run-session.mjs", "locate.mjs"])
async def test_node_commands_explain_themselves(script: str) -> None:
    process = await asyncio.create_subprocess_exec(
        _node(), str(NODE_CLIENT / "bin" / script), "--help", stdout=asyncio.subprocess.PIPE
    )
    out, _ = await asyncio.wait_for(process.communicate(), GUARD_S)
    assert process.returncode == 0
    text = out.decode()
    assert text.startswith(f"usage: holodesk-{script.removesuffix('.mjs')} --server HOST:PORT")
    assert "--token-file FILE" in text


def test_an_installed_package_carries_the_contract_it_loads(tmp_path: Path) -> None:
    """`npm pack` puts the protos in the package (and takes its copy out of the checkout
    again); unpacked elsewhere, with no repository beside it, the client loads them."""
    npm = shutil.which("npm")
    assert npm is not None
    node = _node()
    packed = subprocess.run(
        [npm, "pack", "--pack-destination", str(tmp_path)],
        cwd=NODE_CLIENT,
        capture_output=True,
        text=True,
        timeout=GUARD_S,
        check=False,
    )
    assert packed.returncode == 0, packed.stderr
    assert not (NODE_CLIENT / "protos").exists()  # the checkout loads protos/ at the root
    (tarball,) = tmp_path.glob("*.tgz")
    with tarfile.open(tarball) as archive:
        archive.extractall(tmp_path / "installed", filter="data")
    package = tmp_path / "installed" / "package"
    assert (package / "protos" / "holodesk" / "v1" / "agent.proto").is_file()
    (package / "node_modules").symlink_to(NODE_CLIENT / "node_modules")
    check = (
        "import('./src/holodesk.mjs').then((m) => { const v1 = m.loadContract();"
        " console.log(m.DEFAULT_PROTO_ROOT, typeof v1.AgentService); })"
    )
    env = {k: v for k, v in os.environ.items() if k != "HOLODESK_PROTO_ROOT"}
    loaded = subprocess.run(
        [node, "-e", check],
        cwd=package,
        env=env,
        capture_output=True,
        text=True,
        timeout=GUARD_S,
        check=False,
    )
    assert loaded.returncode == 0, loaded.stderr
    root, kind = loaded.stdout.split()
    assert (Path(root), kind) == (package / "protos", "function")
