"""Stopped grounding runs: a `holodesk eval grounding` process killed midway, and a
daemon that drops mid-run, each finished by --resume with nothing asked twice and the
summary of an uninterrupted run; resumes that would mix two runs are refused."""

from __future__ import annotations

import asyncio
import json
import signal
import subprocess
from pathlib import Path

import pytest

from holodesk.client.exit_codes import ExitCode
from holodesk.daemon.policies.ocr.planner import PlannerConfig
from holodesk.daemon.policies.ocr.policy import OcrPolicy, OcrPolicyConfig
from tests.daemon.support import running_daemon, wait_until
from tests.data.grounding import layouts

from .support import eval_argv, holodesk_async, ids, lines, screenspot_v2_records


def dataset(tmp_path: Path) -> Path:
    records, _ = screenspot_v2_records()
    # Twice the screens under other names: 16 samples, enough to stop midway.
    more = [{**r, "img_filename": "x" + r["img_filename"]} for r in records]
    return layouts.write_screenspot_v2(tmp_path / "ssv2", [*records, *more])


def whole_lines(path: Path) -> list[dict[str, object]]:
    """The lines a kill left whole (a line being written when it struck is cut)."""
    found = []
    for line in path.read_text().splitlines():
        try:
            found.append(json.loads(line))
        except ValueError:
            continue
    return found


def comparable(summary_path: Path) -> dict[str, object]:
    return json.loads(summary_path.read_text())  # type: ignore[no-any-return]


async def wait_for_answers(path: Path, count: int) -> None:
    def enough() -> bool:
        return path.exists() and path.read_text().count("\n") >= count

    await wait_until(enough, f"{count} answers in {path}")


async def test_a_killed_run_resumes_without_asking_twice_and_scores_as_an_unbroken_one(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = dataset(tmp_path)
    killed, whole = tmp_path / "killed", tmp_path / "whole"
    async with running_daemon([OcrPolicy()]) as daemon:
        server = daemon.running.address
        argv = eval_argv("grounding", "screenspot-v2", data, "--server", server,
                         "--out", killed, "-k", "1")  # fmt: skip
        process = await asyncio.create_subprocess_exec(
            *argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
        )
        try:
            await wait_for_answers(killed / "predictions.jsonl", 3)
        finally:
            process.send_signal(signal.SIGKILL)
            await process.wait()
        before = whole_lines(killed / "predictions.jsonl")
        assert 3 <= len(before) < 16
        assert not (killed / "summary.json").exists()
        # A crash mid-write leaves a cut line: it is dropped, and its sample asked again.
        with (killed / "predictions.jsonl").open("a") as file:
            file.write('{"id": "web-2", "status": "fou')

        again = ("eval", "grounding", "screenspot-v2", data, "--server", server, "--out", killed)
        assert await holodesk_async(*again) == ExitCode.USAGE  # a run is there: --resume
        assert "--resume" in capsys.readouterr().err
        assert await holodesk_async(*again, "--resume", "-k", "4") == ExitCode.SUCCEEDED
        err = capsys.readouterr().err
        assert f"{len(before)} already answered, {16 - len(before)} to ask" in err
        assert "dropped 1 line(s) cut short" in err

        code = await holodesk_async(
            "eval", "grounding", "screenspot-v2", data, "--server", server, "--out", whole
        )
        assert code == ExitCode.SUCCEEDED
    after = lines(killed / "predictions.jsonl")
    assert after[: len(before)] == before  # kept as they were
    assert sorted(ids(after)) == sorted(set(ids(after)))  # nobody asked twice
    assert len(after) == 16
    assert comparable(killed / "summary.json") == comparable(whole / "summary.json")
    manifest = json.loads((killed / "manifest.json").read_text())
    assert len(manifest["resumed_at"]) == 1


async def test_a_daemon_that_drops_stops_the_run_and_resume_finishes_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = dataset(tmp_path)
    run = tmp_path / "run"
    async with running_daemon([OcrPolicy()]) as daemon:
        argv = eval_argv("grounding", "screenspot-v2", data, "--server",
                         daemon.running.address, "--out", run, "-k", "1")  # fmt: skip
        process = await asyncio.create_subprocess_exec(
            *argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
        )
        await wait_for_answers(run / "predictions.jsonl", 2)
    # The daemon is gone: the run stops, says so, and keeps what was answered.
    _, err = await process.communicate()
    message = err.decode()
    assert process.returncode == ExitCode.DAEMON_ERROR, message
    assert "stopped: the daemon refused sample" in message
    assert "UNAVAILABLE" in message
    assert "--resume" in message
    kept = lines(run / "predictions.jsonl")
    assert 2 <= len(kept) < 16
    assert all("error" not in row for row in kept), kept
    stopped = json.loads((run / "summary.json").read_text())
    assert stopped["complete"] is False
    assert stopped["overall"]["count"] == len(kept)  # never scores what was not answered
    assert stopped["left_out"] == 16 - len(kept)
    assert stopped["left_out_reasons"] == {"not asked": 16 - len(kept)}

    # Another daemon (another port: the manifest's server is not what makes a run).
    async with running_daemon([OcrPolicy()]) as daemon:
        code = await holodesk_async(
            "eval", "grounding", "screenspot-v2", data, "--server", daemon.running.address,
            "--out", run, "--resume",
        )  # fmt: skip
    assert code == ExitCode.SUCCEEDED, capsys.readouterr().err
    done = lines(run / "predictions.jsonl")
    assert done[: len(kept)] == kept
    assert sorted(ids(done)) == sorted(set(ids(done)))
    assert len(done) == 16
    summary = json.loads((run / "summary.json").read_text())
    assert (summary["complete"], summary["left_out"], summary["overall"]["count"]) == (True, 0, 16)


async def test_a_resume_that_would_mix_two_runs_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = dataset(tmp_path)
    run = tmp_path / "run"
    async with running_daemon([OcrPolicy()]) as daemon:
        server = daemon.running.address
        code = await holodesk_async(
            "eval", "grounding", "screenspot-v2", data, "--server", server, "--out", run,
            "--limit", "3",
        )  # fmt: skip
        assert code == ExitCode.SUCCEEDED
        capsys.readouterr()
        code = await holodesk_async(
            "eval", "grounding", "screenspot-v2", data, "--server", server, "--out", run,
            "--limit", "5", "--resume",
        )  # fmt: skip
        err = capsys.readouterr().err
        assert code == ExitCode.USAGE
        assert "dataset.limit: run 3, now 5" in err
        assert "dataset.scope: run 3, now 5" in err
    assert len(lines(run / "predictions.jsonl")) == 3

    # Another OCR matcher is another policy: its answers would not be this run's.
    other = OcrPolicy(OcrPolicyConfig(planner=PlannerConfig(match_threshold=0.5)))
    async with running_daemon([other]) as daemon:
        code = await holodesk_async(
            "eval", "grounding", "screenspot-v2", data, "--server", daemon.running.address,
            "--out", run, "--limit", "3", "--resume",
        )  # fmt: skip
        assert code == ExitCode.SUCCEEDED  # nothing left to ask: nothing checked, rescored
        capsys.readouterr()
        (run / "predictions.jsonl").write_text(
            "".join(json.dumps(r) + "\n" for r in lines(run / "predictions.jsonl")[:2])
        )
        code = await holodesk_async(
            "eval", "grounding", "screenspot-v2", data, "--server", daemon.running.address,
            "--out", run, "--limit", "3", "--resume",
        )  # fmt: skip
    err = capsys.readouterr().err
    assert code == ExitCode.USAGE, err
    assert "refusing to resume: the daemon's policy is not the run's" in err
    assert "policy.prompt_hash" in err
    assert len(lines(run / "predictions.jsonl")) == 2  # its answer was not written
