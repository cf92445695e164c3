"""`holodesk export`: recordings from the real RecordingWriter -> JSONL / Parquet, read back."""

from __future__ import annotations

import io
import json
import os
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest
from PIL import Image

from holodesk.client.cli import main
from holodesk.client.exit_codes import ExitCode
from holodesk.data.export import ExportError, ExportFilter, export
from holodesk.data.stepview import LoadedRecording, find_recordings

from .recordings import (
    RecordingSpec,
    StepSpec,
    click,
    completion,
    done,
    holo_output,
    type_text,
    write_recording,
)

TASK = 'Sign up as "Zoë" <script>alert(1)</script>'
CLICK_OUT = holo_output("click the name field", {"action": "click", "x": 500, "y": 250})
TYPE_OUT = holo_output("type the name", {"action": "write", "content": "Zoë"})
DONE_OUT = holo_output("finished", {"action": "answer", "content": "signed up"})
LOGPROBS = [-0.25, -1.5, float("-inf")]


@pytest.fixture
def root(tmp_path: Path) -> Path:
    """Four recordings: a rewarded success with a model, a failure, a scripted run, a crash."""
    root = tmp_path / "recordings"
    write_recording(
        root,
        RecordingSpec(
            session_id="a-success",
            task=TASK,
            reward=1.0,
            success=True,
            answer="signed up",
            steps=[
                StepSpec(
                    [click("a1", "f1", 160, 100)],
                    thought="click the name field",
                    completions=[completion(CLICK_OUT, LOGPROBS)],
                    model_size=(160, 100),
                    color=(255, 0, 0),
                ),
                StepSpec(
                    [type_text("a2", "Zoë")],
                    # A repaired step: candidate 0 did not parse, candidate 1 was used.
                    completions=[completion("garbage", parsed=False), completion(TYPE_OUT)],
                    chosen=1,
                    model_size=(160, 100),
                    history=1,
                    color=(0, 255, 0),
                ),
                StepSpec(
                    [done("a3", "signed up")],
                    completions=[completion(DONE_OUT)],
                    model_size=(160, 100),
                    history=1,
                    color=(0, 0, 255),
                ),
            ],
        ),
    )
    write_recording(
        root,
        RecordingSpec(
            session_id="b-failure",
            outcome="failed",
            reason="gave up",
            reward=0.0,
            policy="uitars-local",
            dialect="uitars",
            model="ByteDance-Seed/UI-TARS-1.5-7B",
            steps=[StepSpec([click("b1", "f1", 10, 10)], completions=[completion("click(…)")])],
        ),
    )
    # A policy without a model: no prompt, no generation, so no rows.
    write_recording(
        root,
        RecordingSpec(
            session_id="c-scripted",
            policy="ocr",
            dialect=None,
            model=None,
            steps=[StepSpec([click("c1", "f1", 5, 5)]), StepSpec([done("c2", "ok")])],
        ),
    )
    # The daemon died mid-session: no end event, no outcome.
    write_recording(
        root,
        RecordingSpec(
            session_id="d-crash",
            outcome=None,
            steps=[StepSpec([click("d1", "f1", 1, 1)], completions=[completion(CLICK_OUT)])],
        ),
    )
    return root


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def rows_by_recording(rows: list[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    grouped: dict[str, list[dict[str, Any]]] = {}
    for row in rows:
        grouped.setdefault(row["session_id"], []).append(row)
    return grouped


def test_jsonl_rows_hold_the_prompt_the_chosen_output_and_the_images(
    root: Path, tmp_path: Path
) -> None:
    out = tmp_path / "dataset"
    summary = export(find_recordings([root]), out, "jsonl")

    rows = read_jsonl(out / "data.jsonl")
    grouped = rows_by_recording(rows)
    assert sorted(grouped) == ["a-success", "b-failure", "d-crash"]
    assert summary.rows == len(rows) == 5
    first, second, third = grouped["a-success"]
    assert [r["step"] for r in (first, second, third)] == [1, 2, 3]

    # The layout: system, user (images, then text), assistant (the raw output).
    assert [m["role"] for m in first["messages"]] == ["system", "user", "assistant"]
    user = first["messages"][1]["content"]
    assert user[0] == {"type": "image", "image": first["images"][0]}
    assert user[1] == {"type": "text", "text": f"Task: {TASK}"}
    assert first["messages"][2]["content"] == [{"type": "text", "text": CLICK_OUT}]
    # The repaired step trains on the candidate the actions came from, not the first one.
    assert second["messages"][-1]["content"][0]["text"] == TYPE_OUT

    assert first["task"] == TASK
    assert (first["outcome"], first["reward"], first["success"]) == ("succeeded", 1.0, True)
    assert (first["policy"], first["dialect"], first["model"]) == (
        "holo2",
        "holo",
        "Hcompany/Holotron-12B",
    )
    assert first["recording_id"].endswith("-a-success")
    # Strict JSON has no infinities: a -inf logprob is written as null.
    assert first["logprobs"] == [*LOGPROBS[:2], None]
    assert first["token_ids"] == [100, 101, 102]
    assert second["logprobs"] is None
    assert second["cumulative_logprob"] is None
    assert grouped["d-crash"][0]["outcome"] is None


def test_jsonl_images_are_what_the_model_saw_and_written_once(root: Path, tmp_path: Path) -> None:
    out = tmp_path / "dataset"
    summary = export(find_recordings([root]), out, "jsonl")
    grouped = rows_by_recording(read_jsonl(out / "data.jsonl"))
    first, second, third = grouped["a-success"]

    # Step 2 shows the step-1 frame again (history) and its own: the same file, once.
    assert second["images"][0] == first["images"][0]
    assert second["images"][1] == third["images"][0]
    assert len(second["images"]) == 2
    names = {name for row in read_jsonl(out / "data.jsonl") for name in row["images"]}
    assert summary.images == len(names) == len(list((out / "images").iterdir()))

    assert (out / "data.jsonl").read_text().count("Infinity") == 0
    # Resized to the model's 160x100, colours intact.
    with Image.open(out / first["images"][0]) as image:
        assert image.size == (160, 100)
        assert image.convert("RGB").getpixel((80, 50)) == (255, 0, 0)
    # Shown at the size sent: the recorded file itself, hard-linked.
    failure = grouped["b-failure"][0]
    exported = out / failure["images"][0]
    recording = LoadedRecording.load(find_recordings([root])[1])
    frame = recording.frames["f1"]
    assert exported.read_bytes() == frame.path.read_bytes()
    assert os.stat(exported).st_ino == os.stat(frame.path).st_ino


@pytest.mark.parametrize(
    ("flags", "sessions"),
    [
        (["--outcome", "succeeded"], {"a-success"}),
        (["--outcome", "succeeded,failed"], {"a-success", "b-failure"}),
        (["--outcome", "failed", "--outcome", "succeeded"], {"a-success", "b-failure"}),
        (["--min-reward", "0.5"], {"a-success"}),
        (["--min-reward", "0"], {"a-success", "b-failure"}),
        (["--policy", "uitars-local"], {"b-failure"}),
        (["--dialect", "holo"], {"a-success", "d-crash"}),
        (["--dialect", "holo", "--outcome", "failed"], set()),
    ],
)
def test_filters_through_the_cli(
    root: Path, tmp_path: Path, flags: list[str], sessions: set[str]
) -> None:
    out = tmp_path / "dataset"
    assert main(["export", str(root), "--out", str(out), *flags]) == ExitCode.SUCCEEDED
    rows = read_jsonl(out / "data.jsonl")
    assert {row["session_id"] for row in rows} == sessions


def test_parquet_embeds_the_images_and_reads_back_with_pyarrow(
    root: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "parquet"
    recordings = [str(p) for p in find_recordings([root])]
    code = main(
        ["export", *recordings, "--out", str(out), "--format", "parquet", "--outcome", "succeeded"]
    )
    assert code == ExitCode.SUCCEEDED
    assert "3 row(s) from 2 of 4 recording(s)" in capsys.readouterr().err
    assert not (out / "images").exists()

    table = pq.read_table(out / "data.parquet")
    rows = table.to_pylist()
    assert [(r["session_id"], r["step"]) for r in rows] == [("a-success", s) for s in (1, 2, 3)]
    first, second, _ = rows
    assert first["task"] == TASK
    assert first["reward"] == 1.0
    assert first["outcome"] == "succeeded"
    assert first["logprobs"][:2] == LOGPROBS[:2]
    assert first["logprobs"][2] == float("-inf")
    assert second["logprobs"] is None
    messages = first["messages"]
    assert [m["role"] for m in messages] == ["system", "user", "assistant"]
    image_part = {"type": "image", "text": None, "image": first["images"][0]["path"]}
    assert messages[1]["content"][0] == image_part
    assert messages[2]["content"][0]["text"] == CLICK_OUT
    # Each row carries its images' bytes: decodable, at the model's size, in prompt order.
    colors = []
    for image in second["images"]:
        with Image.open(io.BytesIO(image["bytes"])) as decoded:
            assert decoded.size == (160, 100)
            colors.append(decoded.convert("RGB").getpixel((10, 10)))
    assert colors == [(255, 0, 0), (0, 255, 0)]


def test_parquet_of_nothing_is_an_empty_table_with_the_schema(root: Path, tmp_path: Path) -> None:
    out = tmp_path / "empty"
    summary = export(
        find_recordings([root]), out, "parquet", ExportFilter(outcomes=frozenset({"cancelled"}))
    )
    assert summary.rows == 0
    table = pq.read_table(out / "data.parquet")
    assert table.num_rows == 0
    assert "messages" in table.schema.names
    assert "logprobs" in table.schema.names


def test_bad_input_gets_a_clear_error(
    root: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "dataset"
    assert main(["export", str(root), "--out", str(out), "--outcome", "won"]) == ExitCode.USAGE
    assert "unknown outcome(s) won" in capsys.readouterr().err
    assert main(["export", str(tmp_path / "nope"), "--out", str(out)]) == ExitCode.USAGE
    assert "no such recording" in capsys.readouterr().err
    (tmp_path / "empty").mkdir()
    assert main(["export", str(tmp_path / "empty"), "--out", str(out)]) == ExitCode.USAGE
    assert "neither a recording nor a folder of recordings" in capsys.readouterr().err

    assert main(["export", str(root), "--out", str(out)]) == ExitCode.SUCCEEDED
    capsys.readouterr()
    assert main(["export", str(root), "--out", str(out)]) == ExitCode.FAILED
    assert "exists; pass overwrite (--overwrite)" in capsys.readouterr().err
    assert main(["export", str(root), "--out", str(out), "--overwrite"]) == ExitCode.SUCCEEDED

    with pytest.raises(ExportError, match="unknown outcome"):
        ExportFilter(outcomes=frozenset({"won"}))


def test_an_unreadable_recording_is_skipped_and_named(root: Path, tmp_path: Path) -> None:
    paths = find_recordings([root])
    manifest = json.loads((paths[0] / "recording.json").read_text())
    manifest["version"] = 2
    (paths[0] / "recording.json").write_text(json.dumps(manifest))
    summary = export(paths, tmp_path / "out", "jsonl")
    assert {row["session_id"] for row in read_jsonl(summary.dataset)} == {"b-failure", "d-crash"}
    ((name, why),) = [s for s in summary.skipped if s[1].startswith("unreadable")]
    assert name == paths[0].name
    assert "newer than this reader" in why
