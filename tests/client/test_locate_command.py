"""`holodesk locate` against a real daemon with the OCR policy, on screenshots drawn here
with words at known places; the batching and refusals against small stand-in servers."""

from __future__ import annotations

import asyncio
import json
import socket
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import grpc
import grpc.aio
import pytest
from PIL import Image, ImageDraw, ImageFont

from holodesk.client import cli
from holodesk.client.exit_codes import ExitCode
from holodesk.daemon.policies.ocr.policy import OcrPolicy
from holodesk.proto.v1 import agent_pb2, agent_pb2_grpc, geometry_pb2
from tests.daemon.support import running_daemon

FONT = "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf"
Box = tuple[int, int, int, int]


def screenshot(
    path: Path, words: dict[str, tuple[int, int]], size: tuple[int, int]
) -> dict[str, Box]:
    """Black words on white at the given top-left corners; their pixel boxes."""
    image = Image.new("RGB", size, "white")
    draw = ImageDraw.Draw(image)
    font = ImageFont.truetype(FONT, 32)
    boxes: dict[str, Box] = {}
    for word, (x, y) in words.items():
        draw.text((x, y), word, fill="black", font=font)
        left, top, right, bottom = draw.textbbox((x, y), word, font=font)
        boxes[word] = (int(left), int(top), int(right), int(bottom))
    image.save(path)
    return boxes


@pytest.fixture
def shots(tmp_path: Path) -> tuple[Path, dict[str, dict[str, Box]]]:
    folder = tmp_path / "shots"
    folder.mkdir()
    truth = {
        "a.png": screenshot(
            folder / "a.png", {"Submit": (40, 30), "Cancel": (400, 200)}, (640, 400)
        ),
        "b.png": screenshot(
            folder / "b.png", {"Cancel": (60, 300), "Submit": (500, 90)}, (800, 480)
        ),
        "c.png": screenshot(folder / "c.png", {"Submit": (300, 250)}, (720, 400)),
    }
    (folder / "notes.txt").write_text("not an image")  # skipped: not an image suffix
    return folder, truth


def locate(*args: str | Path) -> int:
    return cli.main(["locate", *(str(a) for a in args)])


def rows(out: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in out.read_text().splitlines()]


def inside(row: dict[str, Any], box: Box) -> bool:
    left, top, right, bottom = box
    x, y = float(row["x"]), float(row["y"])
    return left - 3 <= x <= right + 3 and top - 3 <= y <= bottom + 3


@pytest.fixture
def descriptions(tmp_path: Path) -> Path:
    path = tmp_path / "things.txt"
    path.write_text("# what to find\nSubmit\n\nCancel\nNowhere to be seen\n")
    return path


async def test_a_folder_is_located_and_a_second_run_resumes(
    shots: tuple[Path, dict[str, dict[str, Box]]],
    descriptions: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    folder, truth = shots
    out = tmp_path / "found.jsonl"
    async with running_daemon([OcrPolicy()]) as daemon:
        server = daemon.running.address
        args = ("--server", server, "--dir", folder, "--descriptions", descriptions, "--out", out)
        code = await asyncio.to_thread(locate, *args, "-k", "2")
        assert code == ExitCode.SUCCEEDED, capsys.readouterr().err
        found = rows(out)
        assert len(found) == 3 * 3
        for row in found:
            name = Path(row["image"]).name
            assert Path(row["image"]).parent == folder
            width, height = Image.open(folder / name).size
            assert (row["width"], row["height"]) == (width, height)
            box = truth[name].get(row["description"])
            if box is None:
                assert (row["found"], row["x"], row["y"], row["box"]) == (False, None, None, None)
                assert row["status"] == "absent"  # OCR read the image: no such text
                continue
            assert row["status"] == "found"
            assert row["found"], row
            assert inside(row, box), (row, box)
            left, _, _, bottom = box
            drawn = row["box"]
            assert drawn["x"] <= row["x"] <= drawn["x"] + drawn["width"]
            assert abs(drawn["x"] - left) < 10
            assert abs(drawn["y"] + drawn["height"] - bottom) < 10
            assert json.loads(row["raw_output"])["text"] == row["description"]
        capsys.readouterr()

        # Again: nothing to do, nothing rewritten.
        before = out.read_bytes()
        assert await asyncio.to_thread(locate, *args) == ExitCode.SUCCEEDED
        assert "0 located, 3 already done" in capsys.readouterr().err
        assert out.read_bytes() == before

        # A crash mid-image: c.png has one of its lines, then a line cut short.
        kept = [line for line in before.decode().splitlines() if "c.png" not in line]
        partial = next(line for line in before.decode().splitlines() if "c.png" in line)
        out.write_text("\n".join([*kept, partial, partial[:25]]))
        assert await asyncio.to_thread(locate, *args) == ExitCode.SUCCEEDED
        assert "1 located, 2 already done" in capsys.readouterr().err
        again = rows(out)
        assert sorted(json.dumps(r, sort_keys=True) for r in again) == sorted(
            json.dumps(r, sort_keys=True) for r in found
        )


async def test_a_manifest_gives_each_image_its_own_descriptions_and_bad_images_fail_alone(
    shots: tuple[Path, dict[str, dict[str, Box]]],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    folder, truth = shots
    (folder / "broken.png").write_bytes(b"not a png at all")
    manifest = folder / "manifest.jsonl"
    entries = [
        {"image": "a.png", "descriptions": ["Cancel"]},
        {"image": "broken.png", "descriptions": ["Submit"]},
        {"image": str(folder / "b.png"), "descriptions": ["Submit", "Cancel"]},
    ]
    manifest.write_text("\n".join(json.dumps(e) for e in entries) + "\n")
    out = tmp_path / "found.jsonl"
    async with running_daemon([OcrPolicy()]) as daemon:
        args = ("--server", daemon.running.address, "--manifest", manifest, "--out", out)
        assert await asyncio.to_thread(locate, *args) == ExitCode.FAILED
        assert "broken.png: cannot read" in capsys.readouterr().err
        by_image: dict[str, list[dict[str, Any]]] = {}
        for row in rows(out):
            by_image.setdefault(row["image"], []).append(row)
        (cancel,) = by_image["a.png"]
        assert cancel["description"] == "Cancel"
        assert inside(cancel, truth["a.png"]["Cancel"])
        assert [r["description"] for r in by_image[str(folder / "b.png")]] == ["Submit", "Cancel"]
        (error,) = by_image["broken.png"]
        assert "cannot read" in error["error"]

        # Fixed, and run again: only the failed image is tried, its error line replaced.
        screenshot(folder / "broken.png", {"Submit": (100, 100)}, (400, 300))
        assert await asyncio.to_thread(locate, *args) == ExitCode.SUCCEEDED
        assert "1 located, 2 already done" in capsys.readouterr().err
    fixed = [r for r in rows(out) if r["image"] == "broken.png"]
    assert len(fixed) == 1
    assert fixed[0]["found"]
    assert "error" not in fixed[0]


def test_bad_usage_is_explained(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "out.jsonl"
    manifest = tmp_path / "m.jsonl"
    manifest.write_text('{"image": "a.png", "descriptions": ["x"]}\n{"image": "b.png"}\n')
    cases = [
        (("--dir", tmp_path, "--manifest", manifest), "either --dir"),
        (("--dir", tmp_path), "--dir needs --descriptions"),
        (("--manifest", manifest), f'{manifest}:2: "descriptions" must be'),
        (("--dir", tmp_path / "nope", "--descriptions", manifest), "is not a folder"),
    ]
    for extra, message in cases:
        code = locate("--server", "127.0.0.1:1", *extra, "--out", out)
        assert code == ExitCode.USAGE
        assert message in capsys.readouterr().err
    assert not out.exists()


def unused_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_an_unreachable_daemon_stops_the_batch(
    shots: tuple[Path, dict[str, dict[str, Box]]],
    descriptions: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    folder, _ = shots
    out = tmp_path / "found.jsonl"
    server = f"127.0.0.1:{unused_port()}"
    args = ("--server", server, "--dir", folder, "--descriptions", descriptions, "--out", out)
    assert locate(*args) == ExitCode.DAEMON_ERROR
    assert "UNAVAILABLE" in capsys.readouterr().err
    assert out.read_text() == ""  # nothing failed on the images' account: all are retried


class CountingAgent(agent_pb2_grpc.AgentServiceServicer):
    """Finds every description at (1, 2); remembers each request's descriptions."""

    def __init__(self) -> None:
        self.requests: list[list[str]] = []

    async def Locate(  # noqa: N802
        self, request: agent_pb2.LocateRequest, context: Any
    ) -> agent_pb2.LocateResponse:
        self.requests.append(list(request.descriptions))
        assert request.frame.size.width == 64
        return agent_pb2.LocateResponse(
            locations=[
                agent_pb2.Location(
                    description=d, found=True, point=geometry_pb2.Point(x=1, y=2), raw_output="r"
                )
                for d in request.descriptions
            ]
        )


@pytest.fixture
def counting() -> Iterator[tuple[CountingAgent, str]]:
    agent = CountingAgent()  # type: ignore[abstract]  # only Locate is called

    async def start() -> tuple[grpc.aio.Server, int]:
        server = grpc.aio.server()
        agent_pb2_grpc.add_AgentServiceServicer_to_server(agent, server)
        port = server.add_insecure_port("127.0.0.1:0")
        await server.start()
        return server, port

    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()
    server, port = asyncio.run_coroutine_threadsafe(start(), loop).result(30)
    yield agent, f"127.0.0.1:{port}"
    asyncio.run_coroutine_threadsafe(server.stop(None), loop).result(30)
    loop.call_soon_threadsafe(loop.stop)
    thread.join(30)


def test_descriptions_of_an_image_share_requests_up_to_the_batch_size(
    counting: tuple[CountingAgent, str], tmp_path: Path
) -> None:
    agent, server = counting
    folder = tmp_path / "gif"
    folder.mkdir()
    # A GIF: the daemon takes PNG, JPEG and WebP, so it goes re-encoded as PNG.
    Image.new("P", (64, 32)).save(folder / "one.gif")
    things = tmp_path / "things.txt"
    things.write_text("a\nb\nc\n")
    out = tmp_path / "out.jsonl"
    base = ("--server", server, "--dir", folder, "--descriptions", things)
    assert locate(*base, "--out", out) == ExitCode.SUCCEEDED
    assert agent.requests == [["a", "b", "c"]]
    assert locate(*base, "--out", tmp_path / "two.jsonl", "--batch", "2") == ExitCode.SUCCEEDED
    assert agent.requests[1:] == [["a", "b"], ["c"]]
    assert [(r["description"], r["x"], r["y"]) for r in rows(out)] == [
        ("a", 1.0, 2.0),
        ("b", 1.0, 2.0),
        ("c", 1.0, 2.0),
    ]
