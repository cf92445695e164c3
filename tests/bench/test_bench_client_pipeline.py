"""The client pipeline benchmark runs in --quick mode, so it cannot rot.

It checks that the script runs end to end on a real Xvfb and writes what it
promises, never how fast anything was: targets are read from the output.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.bench.test_bench_smoke import figures, run_quick

pytestmark = pytest.mark.x11


@pytest.mark.timeout(300)
def test_client_pipeline_quick(tmp_path: Path) -> None:
    data = run_quick("bench_client_pipeline", tmp_path)
    (run,) = data["data"]["runs"].values()  # quick: 1280x800, text-dense only
    assert set(run["per_frame"]) == {"holotron", "ocr"}
    for spec in ("holotron", "ocr"):
        per_frame = run["per_frame"][spec]["median_ms"]
        assert set(per_frame) == {"baseline", "full", "unchanged", "typing"}
        steps = run["session"][spec]["steps"]
        assert [s["kind"] for s in steps][:1] == ["full"]  # a stream starts with a full frame
        assert all(s["kind"] != "full" for s in steps[1:]), steps  # small changes: deltas
        assert all(s["bytes"] < s["baseline_bytes"] for s in steps[1:])
    # Lossless spec: the daemon rebuilt every frame exactly as the client made it.
    ocr = run["session"]["ocr"]
    assert ocr["exact"] == ocr["checked"] == len(ocr["steps"])
    unchanged = figures(data, "unchanged screen (delta)")
    assert all(f["baseline_name"] == "grab + full-size PNG" for f in unchanged)
    per_step = figures(data, "KiB per step")
    assert all(f["target"] == "<= 0.1x (10x fewer)" for f in per_step)
