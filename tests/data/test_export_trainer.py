"""`holodesk export --format trainer` on recordings a real daemon wrote.

The daemon (grpc.aio on 127.0.0.1, recording on) runs the holo dialect on the
VersionedEngine (tests/support/versioned_engine.py: the scripted engine that says
which policy version made each token and gives prompt token ids made from the
prompt itself), so every path a trainer row comes from is real: ModelPolicy's
candidates and repair attempts, the wire's Generation, the recorder's JSON
(uint64 as strings, zeros left out), the frames. The token ids from the
transformers engine on the tiny model are checked in
tests/engines/test_transformers_trainer_export.py.
"""

from __future__ import annotations

import io
import json
import random
import re
import shutil
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest
import pytest_asyncio
from PIL import Image

from holodesk.client.cli import main
from holodesk.client.exit_codes import ExitCode
from holodesk.daemon.dialects import get_dialect
from holodesk.daemon.policies.model import ModelPolicy
from holodesk.data import trainer_export
from holodesk.data.export import export
from holodesk.data.stepview import find_recordings
from holodesk.data.trainer_export import trainer_schema
from holodesk.data.trainer_rows import (
    EARLIER_ATTEMPT,
    FRAME_UNREADABLE,
    NO_COMPLETION_TOKENS,
    NO_PROMPT_IDS,
    NO_PROMPT_IDS_GIVEN,
    UNKNOWN_CALL,
)
from holodesk.proto.v1 import agent_pb2, frame_pb2, geometry_pb2
from tests.daemon.support import Daemon, holo, ok_results, running_daemon, scripted_policy
from tests.support.versioned_engine import VersionedEngine, label_of, prompt_ids

pytestmark = pytest.mark.asyncio(loop_scope="module")

CLICK = holo({"action": "click", "x": 500, "y": 500}, thought="open it")
CLICK2 = holo({"action": "click", "x": 100, "y": 900}, thought="then this")
ANSWER = holo({"action": "answer", "content": "done"}, thought="finished")
# Per call: step 1 does not parse at first (both candidates), then does; a session
# sampling one candidate takes the first of each entry.
SCRIPT: list[str | list[str]] = [
    ["not json", "{also not"],
    [CLICK, "nope"],
    [CLICK2, CLICK2],
    [ANSWER, ANSWER],
]
FRAME_SIZE = (900, 500)  # holo shows it at 896x512: the daemon resizes it


def noisy_png(seed: int) -> bytes:
    """Random pixels: any other resize filter or size would change them."""
    width, height = FRAME_SIZE
    pixels = random.Random(seed).randbytes(width * height * 3)
    buffer = io.BytesIO()
    Image.frombytes("RGB", FRAME_SIZE, pixels).save(buffer, format="PNG")
    return buffer.getvalue()


def frame(frame_id: str, seed: int) -> frame_pb2.Frame:
    width, height = FRAME_SIZE
    return frame_pb2.Frame(
        frame_id=frame_id,
        size=geometry_pb2.Size(width=width, height=height),
        encoding=frame_pb2.IMAGE_ENCODING_PNG,
        data=noisy_png(seed),
        source=geometry_pb2.Rect(x=0, y=0, width=width, height=height),
        scale_factor=1.0,
    )


@dataclass
class Session:
    session_id: str
    recording_id: str
    # The Actions messages the client received, by step.
    received: dict[int, agent_pb2.Actions]
    frames: dict[str, bytes]


@dataclass
class Recorded:
    root: Path
    engine: VersionedEngine
    sessions: dict[str, Session]


async def run_session(
    daemon: Daemon,
    engine: VersionedEngine,
    task: str,
    sampling: agent_pb2.SamplingParams,
    *,
    straddle_step: int = 0,
    policy: str = "versioned",
) -> Session:
    stream = daemon.stream()
    started = await stream.start(task, sampling=sampling, policy=policy)
    received: dict[int, agent_pb2.Actions] = {}
    frames: dict[str, bytes] = {}
    results: list[Any] = []
    for number in range(1, 4):
        sent = frame(f"f{number}", number)
        frames[sent.frame_id] = sent.data
        if number == straddle_step:
            engine.straddle_next()
        reply = await stream.observe(sent, results)
        if reply.WhichOneof("event") == "ended":
            assert reply.ended.outcome == agent_pb2.SESSION_OUTCOME_SUCCEEDED, reply
            break
        received[reply.actions.step] = reply.actions
        results = ok_results(reply.actions)
    await stream.finished_ok()
    return Session(started.session_id, started.recording_id, received, frames)


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def recorded(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Recorded]:
    """Recorded sessions of three steps: "rl" with two candidates a step, token ids
    and logprobs, and an update landing while step 2 is sampled; "no-ids" without
    prompt ids; "no-logprobs" without logprobs; "ids-not-given" asking for both from
    an engine that gives no prompt ids (the scripted one). "rl" is rewarded."""
    root = tmp_path_factory.mktemp("recordings")
    engine = VersionedEngine(SCRIPT)
    policy = ModelPolicy(get_dialect("holo"), engine, name="versioned")
    scripted = scripted_policy([CLICK, CLICK2, ANSWER])
    sessions: dict[str, Session] = {}
    async with running_daemon([policy, scripted], record=True, record_dir=str(root)) as daemon:
        sessions["rl"] = await run_session(
            daemon,
            engine,
            "rl",
            agent_pb2.SamplingParams(
                candidates=2, temperature=1.0, logprobs=True, prompt_token_ids=True
            ),
            straddle_step=2,
        )
        sessions["no-ids"] = await run_session(
            daemon, engine, "no-ids", agent_pb2.SamplingParams(logprobs=True)
        )
        sessions["no-logprobs"] = await run_session(
            daemon, engine, "no-logprobs", agent_pb2.SamplingParams(prompt_token_ids=True)
        )
        sessions["ids-not-given"] = await run_session(
            daemon,
            engine,
            "ids-not-given",
            agent_pb2.SamplingParams(logprobs=True, prompt_token_ids=True),
            policy="scripted",
        )
        await daemon.agent.ReportReward(
            agent_pb2.ReportRewardRequest(
                session_id=sessions["rl"].session_id, reward=1.0, success=True
            )
        )
    yield Recorded(root, engine, sessions)


def read_rows(path: Path) -> list[dict[str, Any]]:
    table = pq.read_table(path)
    assert table.schema.equals(trainer_schema()), table.schema
    rows: list[dict[str, Any]] = table.to_pylist()
    return rows


def export_trainer(
    recordings: list[Path], out: Path, capsys: pytest.CaptureFixture[str]
) -> tuple[list[dict[str, Any]], str]:
    code = main(["export", *map(str, recordings), "--out", str(out), "--format", "trainer"])
    assert code == ExitCode.SUCCEEDED
    err = capsys.readouterr().err
    return read_rows(out / "trainer.parquet"), err


async def test_rows_hold_every_completion_of_the_last_call_with_its_tokens(
    recorded: Recorded, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    session = recorded.sessions["rl"]
    rows, err = export_trainer([recorded.root / session.recording_id], tmp_path / "out", capsys)

    # Step 1: attempt 1's two candidates did not parse, attempt 2's first did; the
    # recorded prompt ids are attempt 2's, so attempt 1's completions are no rows.
    assert [(r["step"], r["completion_index"], r["chosen"]) for r in rows] == [
        (1, 2, True),
        (1, 3, False),
        (2, 0, True),
        (2, 1, False),
        (3, 0, True),
        (3, 1, False),
    ]
    assert f"skipped 2 completion(s): {EARLIER_ATTEMPT}" in err
    assert "6 row(s) from 1 of 1 recording(s)" in err
    requests = {r.request_id: r for r in recorded.engine.requests}
    first, repaired = (requests[f"{session.session_id}/1/{n}"] for n in (0, 1))
    assert prompt_ids(first) != prompt_ids(repaired)

    for row in rows:
        attempt = 1 if row["step"] == 1 else 0
        request = requests[f"{session.session_id}/{row['step']}/{attempt}"]
        assert row["prompt_token_ids"] == list(prompt_ids(request))
        # The scripted engine's tokens are its text's UTF-8 bytes, each with logprob 0.
        assert row["completion_token_ids"] == list(row["completion_text"].encode("utf-8"))
        assert row["completion_logprobs"] == [0.0] * len(row["completion_token_ids"])
        prompt, completion = len(row["prompt_token_ids"]), len(row["completion_token_ids"])
        assert row["loss_mask"] == [0] * prompt + [1] * completion
        assert row["parsed"] == (row["completion_text"] in (CLICK, CLICK2, ANSWER))
        assert (row["recording_id"], row["session_id"]) == (
            session.recording_id,
            session.session_id,
        )
        assert (row["task"], row["outcome"], row["reward"], row["success"]) == (
            "rl",
            "succeeded",
            1.0,
            True,
        )
        assert (row["policy"], row["dialect"], row["model"]) == ("versioned", "holo", None)

    # What the client received on the wire, token for token.
    for row in rows:
        wire = session.received.get(row["step"])
        if wire is None:  # the last step ended the session: its message was not sent
            continue
        generation = wire.generation
        sampled = generation.completions[row["completion_index"]]
        assert row["completion_token_ids"] == list(sampled.token_ids)
        assert row["completion_logprobs"] == list(sampled.token_logprobs)
        assert row["prompt_token_ids"] == list(generation.prompt_token_ids)
        assert row["policy_version"] == generation.policy_version
        assert row["policy_label"] == generation.policy_label
        assert row["versions"] == [
            {"version": s.version, "start": s.start, "end": s.end} for s in sampled.versions
        ]
        assert row["image_content_ids"] == [i.content_id for i in generation.images]
        assert row["image_frame_ids"] == [i.frame_id for i in generation.images]
        assert row["image_sizes"] == [
            {"width": i.width, "height": i.height} for i in generation.images
        ]

    # An update landed while step 2's first candidate was sampled: v1 then v2.
    by_step = {(r["step"], r["completion_index"]): r for r in rows}
    straddled = by_step[(2, 0)]
    half = len(straddled["completion_token_ids"]) // 2
    assert straddled["versions"] == [
        {"version": 1, "start": 0, "end": half},
        {"version": 2, "start": half, "end": len(straddled["completion_token_ids"])},
    ]
    assert straddled["mixed_versions"] is True
    assert (straddled["policy_version"], straddled["policy_label"]) == (2, label_of(2))
    assert by_step[(2, 1)]["mixed_versions"] is False
    assert by_step[(1, 2)]["policy_version"] == 1


async def test_images_are_the_pixels_the_engine_got(
    recorded: Recorded, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    session = recorded.sessions["rl"]
    rows, _ = export_trainer([recorded.root / session.recording_id], tmp_path / "out", capsys)
    last = rows[-1]
    # Step 3 shows the window's three frames, oldest first.
    assert last["image_frame_ids"] == ["f1", "f2", "f3"]
    assert len(last["images"]) == 3
    for frame_id, size, image, file in zip(
        last["image_frame_ids"],
        last["image_sizes"],
        last["images"],
        last["image_files"],
        strict=True,
    ):
        assert (size["width"], size["height"]) == (896, 512)
        # The daemon resized the frame (bicubic) before the engine got it.
        with Image.open(io.BytesIO(session.frames[frame_id])) as sent:
            expected = sent.convert("RGB").resize((896, 512), Image.Resampling.BICUBIC)
        with Image.open(io.BytesIO(image["bytes"])) as exported:
            assert exported.size == (896, 512)
            assert exported.convert("RGB").tobytes() == expected.tobytes()
        # Where its pixels are in the recording: the frame as sent.
        recorded_file = recorded.root / session.recording_id / file
        assert recorded_file.read_bytes() == session.frames[frame_id]


async def test_steps_without_prompt_ids_or_logprobs_are_skipped_and_counted(
    recorded: Recorded, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    no_ids, no_logprobs, not_given = (
        recorded.root / recorded.sessions[name].recording_id
        for name in ("no-ids", "no-logprobs", "ids-not-given")
    )
    rows, err = export_trainer([no_ids, no_logprobs, not_given], tmp_path / "out", capsys)
    assert rows == []
    # Without prompt ids: every step (3). Without logprobs: each step's last call's
    # completion (3), and the first attempt of step 1.
    assert f"skipped 3 step(s): {NO_PROMPT_IDS}" in err
    assert f"skipped 3 completion(s): {NO_COMPLETION_TOKENS}" in err
    assert f"skipped 1 completion(s): {EARLIER_ATTEMPT}" in err
    assert f"skipped {no_ids.name}: no rows: 3 step(s): {NO_PROMPT_IDS}" in err
    # Asked for, but the engine gives none: the reason says so.
    assert f"skipped 3 step(s): {NO_PROMPT_IDS_GIVEN}" in err
    assert "0 row(s) from 3 of 3 recording(s)" in err


def copy_recording(recorded: Recorded, name: str, to: Path) -> Path:
    source = recorded.root / recorded.sessions[name].recording_id
    return Path(shutil.copytree(source, to / source.name))


def rewrite_events(recording: Path, change: Any) -> None:
    events = recording / "events.jsonl"
    lines = [json.loads(line) for line in events.read_text(encoding="utf-8").splitlines()]
    events.write_text("".join(json.dumps(change(e)) + "\n" for e in lines), encoding="utf-8")


async def test_a_corrupt_recording_is_named_with_its_error(
    recorded: Recorded, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    broken = copy_recording(recorded, "rl", tmp_path / "broken")
    lines = (broken / "events.jsonl").read_text(encoding="utf-8").splitlines(keepends=True)
    lines[2] = lines[2][: len(lines[2]) // 2] + "\n"  # cut in the middle of the file
    (broken / "events.jsonl").write_text("".join(lines), encoding="utf-8")
    good = recorded.root / recorded.sessions["rl"].recording_id
    rows, err = export_trainer([broken, good], tmp_path / "out", capsys)
    assert f"skipped {broken.name}: unreadable: {broken / 'events.jsonl'}:3: not JSON" in err
    assert len(rows) == 6  # the readable recording still gives its rows


async def test_tokens_that_contradict_themselves_give_no_row(
    recorded: Recorded, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    recording = copy_recording(recorded, "rl", tmp_path / "edited")

    def damage(event: dict[str, Any]) -> dict[str, Any]:
        if event["type"] != "actions":
            return event
        generation = event["message"]["generation"]
        if event["step"] == 1:  # a logprob lost from completion 2
            generation["completions"][2]["token_logprobs"].pop()
        elif event["step"] == 2:  # the prompt ids disagree with the prompt's length
            generation["prompt_token_ids"].pop()
        elif event["step"] == 3:  # a span past the completion's end
            generation["completions"][1]["versions"][0]["end"] = 10_000
        return event

    rewrite_events(recording, damage)
    rows, err = export_trainer([recording], tmp_path / "out", capsys)
    assert [(r["step"], r["completion_index"]) for r in rows] == [(1, 3), (3, 0)]
    lost = re.search(
        r"skipped 1 completion\(s\): corrupt: (\d+) completion token ids but (\d+) ", err
    )
    assert lost is not None, err
    assert int(lost[1]) == int(lost[2]) + 1 == len(CLICK)
    short = re.search(
        r"skipped 1 step\(s\): corrupt: (\d+) prompt token ids where prompt_tokens says (\d+)", err
    )
    assert short is not None, err
    assert int(short[1]) + 1 == int(short[2])
    assert (
        f"skipped 1 completion(s): corrupt: a version span ends at token 10000 of {len(ANSWER)}"
        in err
    )


async def test_a_damaged_frame_file_gives_no_row_for_the_steps_that_show_it(
    recorded: Recorded, tmp_path: Path
) -> None:
    recording = copy_recording(recorded, "rl", tmp_path / "frames")
    frame_file = sorted((recording / "frames").iterdir())[1]  # f2: shown in steps 2 and 3
    frame_file.write_bytes(frame_file.read_bytes()[:1000])
    summary = export(find_recordings([recording]), tmp_path / "out", "trainer")
    assert summary.rows == 2
    assert {str(skip): count for skip, count in summary.skip_counts.items()} == {
        f"completion(s): {EARLIER_ATTEMPT}": 2,
        f"step(s): {FRAME_UNREADABLE}": 2,
    }
    assert [r["step"] for r in read_rows(summary.dataset)] == [1, 1]


DOC = Path(__file__).parents[2] / "docs" / "recordings-export-report-replay.md"


async def test_the_documented_schema_is_the_written_one() -> None:
    """Every column of the docs' table, with its type, is the Parquet schema's."""
    lines = DOC.read_text(encoding="utf-8").splitlines()
    table = lines[lines.index("| column | type | |") + 2 :]
    documented: dict[str, str] = {}
    for line in table:
        if not line.startswith("| "):
            break
        names, types = line.split(" | ")[:2]
        columns = re.findall(r"`([^`]+)`", names.removeprefix("| "))
        kinds = re.findall(r"`([^`]+)`", types)
        kinds = kinds if len(kinds) == len(columns) else kinds * len(columns)
        documented.update(zip(columns, kinds, strict=True))
    written = {
        f.name: str(f.type).replace("item: ", "").replace("double", "float64")
        for f in trainer_schema()
    }
    assert documented == written


async def test_completions_whose_call_cannot_be_told_give_no_row(
    recorded: Recorded, tmp_path: Path
) -> None:
    """Step 1's four completions (two calls of two) read as calls of three: only the
    chosen one is surely of the recorded prompt's call."""
    recording = copy_recording(recorded, "rl", tmp_path / "calls")
    manifest = json.loads((recording / "recording.json").read_text(encoding="utf-8"))
    manifest["sampling"]["candidates"] = 3
    (recording / "recording.json").write_text(json.dumps(manifest), encoding="utf-8")
    summary = export(find_recordings([recording]), tmp_path / "out", "trainer")
    rows = read_rows(summary.dataset)
    assert [(r["step"], r["completion_index"], r["chosen"]) for r in rows] == [
        (1, 2, True),
        (2, 0, True),
        (3, 0, True),
    ]
    assert {str(skip): count for skip, count in summary.skip_counts.items()} == {
        f"completion(s): {UNKNOWN_CALL}": 5
    }


async def test_rows_are_written_in_batches_of_bounded_image_bytes(
    recorded: Recorded, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    recording = recorded.root / recorded.sessions["rl"].recording_id
    whole = read_rows(export(find_recordings([recording]), tmp_path / "a", "trainer").dataset)
    monkeypatch.setattr(trainer_export, "BATCH_IMAGE_BYTES", 1)
    summary = export(find_recordings([recording]), tmp_path / "b", "trainer")
    assert pq.ParquetFile(summary.dataset).num_row_groups == summary.rows == len(whole) == 6
    assert read_rows(summary.dataset) == whole
    assert summary.images == 3  # f1, f2, f3 at the model's size, each counted once
