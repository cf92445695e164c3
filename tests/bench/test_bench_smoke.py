"""Every benchmark runs in --quick mode, so none of them can rot.

These check that each script runs end to end and writes what it promises (the
JSON with a figure per measurement, each with its same-run baseline, and the PNG
plot), never how fast anything was: targets are read from the output, not asserted.
The engine-path and weight-update benchmarks start vLLM, so they carry the `vllm`
marker; the end-to-end one needs an X server (Xvfb) and xdotool, so it carries `x11`.
"""

from __future__ import annotations

import importlib
import itertools
import json
import math
import shutil
import struct
from pathlib import Path
from typing import Any

import pytest

from holodesk.daemon.dialects import dialect_names
from tests.bench.common import RESULTS_ENV, Figure, percentile, reproduce_command
from tests.engines.support import needs_vllm
from tests.platform.vnc.servers import require

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def run_quick(module: str, out: Path) -> dict[str, Any]:
    """Run the benchmark's main() with --quick into `out`; its parsed JSON."""
    main = importlib.import_module(f"tests.bench.{module}").main
    assert main(["--quick", "--out", str(out)]) == 0
    data: dict[str, Any] = json.loads((out / f"{module}.json").read_text())
    plot = (out / f"{module}.png").read_bytes()
    assert plot.startswith(PNG_SIGNATURE)
    width, height = struct.unpack(">II", plot[16:24])
    assert width > 300
    assert height > 200
    assert data["name"] == module
    assert data["quick"] is True
    assert data["command"] == f"uv run python -m tests.bench.{module} --quick"
    for figure in data["figures"]:
        assert math.isfinite(figure["value"]), figure
    return data


def figures(data: dict[str, Any], fragment: str) -> list[dict[str, Any]]:
    found = [f for f in data["figures"] if fragment in f["name"]]
    assert found, f"no figure named like {fragment!r} in {[f['name'] for f in data['figures']]}"
    return found


@pytest.mark.timeout(300)
def test_daemon_overhead_quick(tmp_path: Path) -> None:
    data = run_quick("bench_daemon_overhead", tmp_path)
    (p50,) = figures(data, "step latency p50, 1 session")[:1]
    assert p50["baseline_name"] == "bare grpc.aio echo"
    assert p50["ratio"] == pytest.approx(p50["value"] / p50["baseline"])
    assert p50["value"] > 0
    assert p50["baseline"] > 0
    # Quick levels are 4 and 16 sessions; every step of every session got its actions.
    for level in ("4", "16"):
        load = data["data"]["load"][level]
        assert load["holodesk"]["steps"] > 0
        assert load["echo"]["steps"] > 0
        assert load["holodesk"]["errors"] == {}, load["holodesk"]["errors"]
    # Model-shaped sessions (1 and 4): every step of every phase answered, by both the
    # ModelPolicy daemon and the instant-policy baseline, and CPU per step of each kind
    # printed against that baseline.
    model_levels = data["data"]["model_levels"]
    assert set(model_levels) == {"1", "4"}
    for level, by_policy in model_levels.items():
        for policy in ("model", "instant"):
            run = by_policy[policy]
            assert run["opened"] == int(level), run
            assert run["errors"] == {}, run["errors"]
            assert run["server_exit"] is None
            assert run["rss_peak"] > 10 * 2**20
            for kind in ("changed", "unchanged"):
                phase = run["phases"][kind]
                assert phase["steps"] >= 2 * int(level), phase
                assert phase["server_cpu_s"] > 0
    for kind in ("changed", "unchanged"):
        (cpu,) = figures(data, f"model-shaped 4 sessions: daemon CPU per {kind} step")
        assert cpu["baseline_name"] == "holodesk, instant policy (plumbing only)"
        assert cpu["target"] == ("<= 15 ms" if kind == "changed" else "<= 5 ms")
        assert cpu["met"] is not None
        (flat,) = figures(data, f"model-shaped: CPU per {kind} step, worst level (4) vs 1 sessions")
        assert flat["ratio"] == pytest.approx(flat["value"] / flat["baseline"])
        assert flat["note"].startswith("4: ")
    # The screens are realistic: thousands of colours, a few hundred KiB as PNG.
    screens = data["data"]["model_screens"]
    assert min(screens["base_colours"]) > 256
    assert screens["base_bytes_mean"] > 100 * 1024


@pytest.mark.timeout(300)
def test_daemon_memory_quick(tmp_path: Path) -> None:
    data = run_quick("bench_daemon_memory", tmp_path)
    for fmt in ("PNG", "WEBP"):
        levels = data["data"]["levels"][fmt]
        assert [lv["sessions"] for lv in levels] == [4, 12]
        for level in levels:
            assert level["errors"] == {}
            assert level["opened"] == level["sessions"]
            assert level["rss_empty"] > 10 * 2**20  # a Python daemon, measured
        per_full = figures(data, f"{fmt} 12 sessions: RSS per full-window session")[0]
        # Its baseline is the raw size of the 3 frames a session holds.
        assert per_full["baseline"] == pytest.approx(3 * levels[-1]["frame_bytes"] / 1024)
    model_levels = data["data"]["model_levels"]
    assert set(model_levels) == {"1", "4"}
    for by_policy in model_levels.values():
        for run in by_policy.values():
            assert run["errors"] == {}
            assert run["server_exit"] is None
            # Every window filled: set-up (2 frames) + at least 3 changed steps.
            assert run["phases"]["changed"]["steps"] >= 3 * run["sessions"]
    (peak,) = figures(data, "model-shaped 4 sessions: daemon peak RSS")
    assert peak["baseline_name"] == "holodesk, instant policy (plumbing only)"
    assert peak["value"] > 10


@pytest.mark.timeout(300)
def test_prompt_growth_quick(tmp_path: Path) -> None:
    data = run_quick("bench_prompt_growth", tmp_path)
    dialects = data["data"]["dialects"]
    assert set(dialects) == set(dialect_names())  # every built-in dialect
    # Holotron: a 1920x1080 screen is sent as 1820x1024 and seen on a 4x2 grid of
    # 512 px tiles plus a thumbnail: 9 x 256 tokens, and <img> </img>.
    assert dialects["holotron"]["image_tokens_each"] == 9 * 256 + 2
    for name, result in dialects.items():
        bounded = [c["prompt_tokens"] for c in result["bounded"]]
        everything = [c["prompt_tokens"] for c in result["unbounded"]]
        window = result["history_images"]
        assert [c["images"] for c in result["bounded"]][-1] == window, name
        assert [c["images"] for c in result["unbounded"]][-1] == len(everything), name
        # Identical until the window drops its first screenshot, then the baseline grows.
        assert bounded[:window] == everything[:window], name
        assert (
            everything[-1] - bounded[-1] >= (len(bounded) - window) * result["image_tokens_each"]
        ), name
        # Past the fill step (21: 20 step lines + the screen) the prompt stays flat: only
        # the text of the shown steps varies (step numbers, actions), by far less than
        # the screenshot a step adds to the baseline.
        tail = bounded[result["fill_step"] - 1 :]
        if len(tail) >= 3:
            assert max(tail) - min(tail) < result["image_tokens_each"] / 10, (name, tail)
        else:  # a text history longer than this run (hdesktop keeps 64 steps' text)
            steps = bounded[window:]
            growth = max(b - a for a, b in itertools.pairwise(steps))
            assert growth < result["image_tokens_each"] / 10, (name, steps)
    # The append layout's prefix share is deterministic (tokens, not timings): each
    # dialect's steady-state figure meets its target with the same average screenshots.
    shares = [f for f in data["figures"] if "a prefix of the previous step's" in f["name"]]
    assert len(shares) == 2 * len(dialects)
    assert all(f["met"] for f in shares), [f["name"] for f in shares if not f["met"]]


@pytest.mark.vllm
@needs_vllm
@pytest.mark.timeout(900)
def test_engine_path_quick(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("VLLM_ENABLE_V1_MULTIPROCESSING", "0")
    data = run_quick("bench_engine_path", tmp_path)
    levels = data["data"]["levels"]
    # The tile-grid size and 1080p, each at 1 and 2 sessions.
    assert [(lv["screen"], lv["concurrency"]) for lv in levels] == [
        ("512x512", 1),
        ("512x512", 2),
        ("1920x1080", 1),
        ("1920x1080", 2),
    ]
    for level in levels:
        # The direct baseline replays exactly the daemon's requests.
        assert level["daemon"]["steps"] == level["direct"]["steps"] == 2 * level["concurrency"]
        assert level["daemon"]["prompt_tokens"] == level["direct"]["prompt_tokens"]
        assert level["daemon"]["prompt_tokens"] > 0
    # A 1080p screen is sent as it is, and seen as a 2048x1024 model image.
    assert data["data"]["frames"]["1920x1080"]["size"] == [1920, 1080]
    assert data["data"]["frames"]["1920x1080"]["model_image"] == [2048, 1024]
    for screen in ("512x512", "1920x1080"):
        (kept,) = figures(data, f"steps/s through the daemon, {screen}, 1 sessions")
        assert kept["target"] == ">= 90% kept"


@pytest.mark.vllm
@needs_vllm
@pytest.mark.timeout(900)
def test_weight_update_quick(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("VLLM_ENABLE_V1_MULTIPROCESSING", "0")
    data = run_quick("bench_weight_update", tmp_path)
    # Quick: no session, then 1 and 4 sessions, one update in each mode.
    assert [u["mode"] for u in data["data"]["idle"]] == ["keep", "wait", "abort"]
    levels = data["data"]["levels"]
    assert [lv["sessions"] for lv in levels] == [1, 4]
    for level in levels:
        assert [u["mode"] for u in level["updates"]] == ["keep", "wait", "abort"]
        assert level["continued"] == [level["sessions"]] * 3
    for name in ("sessions ended by an update", "action ids received twice"):
        (figure,) = figures(data, name)
        assert figure["target"] == "0"
    (paused,) = figures(data, "generation paused, KEEP, 4 sessions")
    assert paused["baseline_name"] == "KEEP, 1 session(s)"
    # Token ids are recorded when asked, and only then.
    tokens = data["data"]["token_ids"]
    assert tokens["with"]["prompt_ids"] > 0
    assert tokens["without"]["prompt_ids"] == 0
    (events,) = figures(data, "token ids: recorded bytes per step (events.jsonl)")
    assert events["value"] > events["baseline"]


@pytest.mark.vllm
@needs_vllm
@pytest.mark.timeout(600)
def test_locate_throughput_quick(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("VLLM_ENABLE_V1_MULTIPROCESSING", "0")
    data = run_quick("bench_locate_throughput", tmp_path)
    levels = data["data"]["levels"]
    assert [lv["in_flight"] for lv in levels] == [1, 4]
    for level in levels:
        assert set(level["rates"]) == {"engine", "policy", "daemon"}
        assert level["failures"] == {"engine": 0, "policy": 0, "daemon": 0}
    (daemon,) = figures(data, "daemon Locate calls/s, 4 in flight")
    assert daemon["baseline_name"] == "engine directly, 4 in flight"
    assert daemon["better"] == "higher"


@pytest.mark.x11
@pytest.mark.skipif(shutil.which("Xvfb") is None, reason="needs Xvfb")
@pytest.mark.skipif(shutil.which("xdotool") is None, reason="needs xdotool (the minimal loop)")
@pytest.mark.timeout(300)
def test_end_to_end_quick(tmp_path: Path) -> None:
    data = run_quick("bench_end_to_end", tmp_path)
    for kind in ("changed", "unchanged"):
        (step,) = figures(data, f"end-to-end 1080p step, {kind} screen")
        assert step["baseline_name"].startswith("minimal loop")
        assert step["target"] == "<= 0.5x the minimal loop"
        assert step["value"] > 0
        assert step["baseline"] > 0
        loops = data["data"]["loops"][kind]
        # Quick: 10 timed steps of each loop.
        assert len(loops["holodesk"]["steps_ms"]) == len(loops["minimal"]["steps_ms"]) == 10
        assert set(loops["minimal"]["parts_ms"]) == {"grab", "png", "grpc echo", "xdotool click"}


@pytest.mark.vnc
@pytest.mark.timeout(180)
def test_environment_reset_quick(tmp_path: Path) -> None:
    require("Xvnc", "tigervnc-standalone-server")
    require("vncpasswd", "tigervnc-tools")
    data = run_quick("bench_environment_reset", tmp_path)
    assert set(data["data"]["seconds"]) == {"xvfb", "vnc", "sandbox"}
    (sandbox,) = figures(data, "sandbox: reset to the app on screen")
    assert sandbox["baseline_name"] == "xvfb: the app restarted on a kept Xvfb"
    assert sandbox["value"] > 0


def test_figure_ratio_and_percentiles() -> None:
    assert Figure("x", 3.0, "ms", 2.0).ratio == 1.5
    assert Figure("x", 3.0, "ms").ratio is None
    assert Figure("x", 3.0, "ms", 0.0).ratio is None
    assert percentile([4.0, 1.0, 3.0, 2.0], 50) == 2.5
    assert percentile([1.0, 2.0, 3.0, 4.0, 5.0], 99) == pytest.approx(4.96)
    with pytest.raises(ValueError, match="outside"):
        percentile([1.0], 101)


def test_reproduce_command_drops_the_output_folder() -> None:
    command = reproduce_command("tests.bench.x", ["--quick", "--out", "/tmp/a", "--steps=3"])
    assert command == "uv run python -m tests.bench.x --quick --steps=3"
    assert RESULTS_ENV == "HOLODESK_BENCH_DIR"
