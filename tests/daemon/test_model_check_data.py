"""`holodesk model check --dialect auto --data BENCHMARK:PATH`: every dialect also locates
a grounding data set's samples, scored by the benchmark's own rule, and those trials
count in the ranking. Against a stand-in OpenAI-compatible server (a real HTTP server on
loopback) whose "model" answers in holo's format: at a sample's target for one
instruction, far from it for another."""

from __future__ import annotations

import io
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from holodesk.client.cli import main
from holodesk.daemon.model_check.auto import run_auto
from holodesk.daemon.model_check.check import CheckOptions, Exit
from holodesk.daemon.model_check.data import DataError, load_data
from holodesk.data.grounding import Box
from tests.data.grounding import layouts
from tests.support.dialect_standins import answering_in
from tests.support.openai_server import OpenAIServer

SIZE = (400, 200)
# In the image's pixels: x, y, w, h (ScreenSpot-v2's convention).
PROFILE = [300, 20, 60, 20]
SETTINGS = [20, 150, 80, 20]


def write_data(root: Path) -> Path:
    records = [
        {"_platform": "web", "_size": SIZE, "img_filename": "a.png", "bbox": PROFILE,
         "instruction": "open the Profile page", "data_type": "text", "data_source": "t"},
        {"_platform": "web", "_size": SIZE, "img_filename": "a.png", "bbox": SETTINGS,
         "instruction": "open the Settings page", "data_type": "icon", "data_source": "t"},
    ]  # fmt: skip
    return layouts.write_screenspot_v2(root, records)


def holo_point(box: list[int]) -> str:
    """The box's centre as holo's 0-1000 answer on the SIZE image."""
    x, y, w, h = box
    return json.dumps({"x": (x + w / 2) * 1000 / SIZE[0], "y": (y + h / 2) * 1000 / SIZE[1]})


def answer(body: dict[str, Any], headers: Mapping[str, str]) -> Any:
    text = json.dumps(body)
    if "open the Profile page" in text:
        return holo_point(PROFILE)  # on its target
    if "open the Settings page" in text:
        return holo_point(PROFILE)  # the other element: a miss
    return answering_in("holo")(body, headers)


async def test_data_samples_count_in_the_ranking(tmp_path: Path) -> None:
    data = load_data(f"screenspot-v2:{write_data(tmp_path / 'ssv2')}")
    assert [s.id for s in data.samples] == ["web-0", "web-1"]
    assert isinstance(data.samples[0].target, Box)
    async with OpenAIServer(answer=answer) as server:
        options = CheckOptions(
            model="tiny",
            engine="openai",
            policy_options={"base_url": server.base_url},
            template=False,
        )
        out = io.StringIO()
        result = await run_auto(options, tmp_path / "dialect.toml", out=out, data=data)
    text = out.getvalue()
    assert result.ranking is not None
    winner = result.ranking.winner
    assert winner is not None
    assert winner.dialect == "holo", text
    # Two bundled trials and two data samples: one on its target, one on the other's.
    assert [t.kind for t in winner.trials] == ["locate", "navigate", "data", "data"]
    assert (winner.parsed, winner.landed) == (4, 3)
    hit, miss = winner.trials[2:]
    assert hit.hit is True
    assert miss.hit is False
    assert miss.distance_px is not None
    assert miss.distance_px > 100
    assert result.exit == Exit.FAILED  # a miss: the best guess, not a pass
    assert "2 sample(s) of screenspot-v2" in text
    assert "screenspot-v2 hits" in text
    assert "1/2" in text


def test_bad_data_is_refused_before_anything_runs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    for spec, message in (
        ("screenspot-v2", "is not BENCHMARK:PATH"),
        (f"nope:{tmp_path}", "unknown benchmark 'nope'"),
        (f"showdown:{tmp_path / 'missing'}", "--data showdown:"),
    ):
        with pytest.raises(DataError, match=message):
            load_data(spec)
    base = ["model", "check", "--model", "m", "--engine", "openai"]
    code = main([*base, "--data", f"screenspot-v2:{tmp_path}"])
    assert code == int(Exit.USAGE)
    assert "--data goes with --dialect auto" in capsys.readouterr().err
    code = main([*base, "--dialect", "auto", "--data", f"nope:{tmp_path}"])
    assert code == int(Exit.USAGE)
    assert "unknown benchmark 'nope'" in capsys.readouterr().err
