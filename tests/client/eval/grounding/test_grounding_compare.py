"""`holodesk eval compare`: two real runs side by side, and refusals (naming each field)
when their manifests say the scores are not comparable."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from holodesk.client.exit_codes import ExitCode
from holodesk.daemon.policies.ocr.policy import OcrPolicy
from tests.daemon.support import running_daemon
from tests.data.grounding import layouts

from .support import holodesk, holodesk_async, screenspot_v2_records


@pytest.fixture
async def runs(tmp_path: Path) -> tuple[Path, Path, Path]:
    """Two runs of the same data and policy, and one of only its first three samples."""
    records, _ = screenspot_v2_records()
    data = layouts.write_screenspot_v2(tmp_path / "ssv2", records)
    async with running_daemon([OcrPolicy()]) as daemon:
        server = daemon.running.address
        found = []
        for name, extra in (("a", ()), ("b", ()), ("short", ("--limit", "3"))):
            run = tmp_path / name
            code = await holodesk_async(
                "eval", "grounding", "screenspot-v2", data, "--server", server, "--out", run,
                *extra,
            )  # fmt: skip
            assert code == ExitCode.SUCCEEDED
            found.append(run)
    return found[0], found[1], found[2]


async def test_comparable_runs_are_set_side_by_side_and_others_refused(
    runs: tuple[Path, Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    a, b, short = runs
    capsys.readouterr()
    assert holodesk("eval", "compare", a, b) == ExitCode.SUCCEEDED
    out = capsys.readouterr().out
    overall = next(line for line in out.splitlines() if line.startswith("overall"))
    assert overall.count("62.5% [") == 2
    assert "+0.0" in overall
    assert "overlap" in overall
    assert "platform x data_type: web / icon" in out
    assert "data_type: text" in out

    # Other samples: a score over other questions.
    assert holodesk("eval", "compare", a, short) == ExitCode.FAILED
    err = capsys.readouterr().err
    assert "refusing to compare" in err
    assert "dataset.scope: A 8, B 3" in err
    assert "--force" in err

    # Another prompt and another sampling: each field named, with both values.
    other = tmp_path / "other"
    shutil.copytree(b, other)
    manifest = json.loads((other / "manifest.json").read_text())
    manifest["policy"]["prompt_hash"] = "sha256:" + "0" * 64
    manifest["policy"]["sampling"] = {"temperature": 0.7, "top_p": 1.0, "max_tokens": 64,
                                      "seed": None}  # fmt: skip
    (other / "manifest.json").write_text(json.dumps(manifest))
    assert holodesk("eval", "compare", a, other) == ExitCode.FAILED
    err = capsys.readouterr().err
    ours = json.loads((a / "manifest.json").read_text())["policy"]["prompt_hash"]
    assert f'policy.prompt_hash: A "{ours}", B "sha256:000' in err
    assert "policy.sampling: A (none), B" in err

    # --force compares anyway, and still says how they differ.
    assert holodesk("eval", "compare", a, other, "--force") == ExitCode.SUCCEEDED
    captured = capsys.readouterr()
    assert "policy.prompt_hash" in captured.err
    assert "compared anyway" in captured.err
    assert captured.out.startswith("A: ")

    # Not a run at all.
    assert holodesk("eval", "compare", a, tmp_path) == ExitCode.USAGE
    assert "is not a grounding run" in capsys.readouterr().err
