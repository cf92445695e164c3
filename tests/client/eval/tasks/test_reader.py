"""The reader on OSWorld's exact layout: tasks shaped as OSWorld's own are read with
every field; tasks that cannot run are named (file, task id, what) and left out, or
stop `holodesk eval tasks` before anything runs."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from holodesk.client.cli import main
from holodesk.client.eval.tasks import read_suite, read_task
from holodesk.client.eval.tasks.reader import TaskFileError

from .suite_files import chrome_task, os_task, write_suite


def _problem(suite_problems: Any, task_id: str) -> str:
    found = [str(p) for p in suite_problems if p.task_id == task_id]
    assert len(found) == 1, suite_problems
    return found[0]


def test_osworld_layout_is_read_with_every_field(tmp_path: Path) -> None:
    listed = {
        "os": [os_task("94d95f96-9699-4208-98ba-3c3119edf9c2")],
        "chrome": [chrome_task("bb5e4c0d-f964-439c-97b6-bdb9747de3f4")],
    }
    root = write_suite(tmp_path / "evaluation_examples", listed)
    # The repository root holding evaluation_examples/ works as well as the folder.
    suite = read_suite(tmp_path)
    assert suite.root == root
    assert suite.problems == ()
    assert [(t.domain, t.id) for t in suite.tasks] == [
        ("os", "94d95f96-9699-4208-98ba-3c3119edf9c2"),
        ("chrome", "bb5e4c0d-f964-439c-97b6-bdb9747de3f4"),
    ]
    os_one, chrome = suite.tasks
    assert [s.type for s in os_one.config] == ["execute", "sleep"]
    assert os_one.config[0].parameters["command"] == ["mkdir", "-p", "/home/user/Desktop"]
    call = os_one.evaluator.calls[0]
    assert os_one.evaluator.single
    assert call.func == "exact_match"
    assert call.result is not None
    assert call.result.type == "vm_command_line"
    assert call.result.config == {"command": "cat ~/out.txt", "shell": True}
    assert call.expected is not None
    assert call.expected.config["rules"] == {"expected": "done\n"}
    assert os_one.raw["possibility_of_env_change"] == "low"
    assert os_one.raw["related_apps"] == ["os"]
    assert os_one.raw["snapshot"] == "os"
    assert os_one.ocr_instruction is None
    assert [s.type for s in chrome.config] == [
        "launch",
        "launch",
        "chrome_open_tabs",
        "activate_window",
    ]


def test_list_evaluators_keep_nulls_options_and_conj(tmp_path: Path) -> None:
    evaluator = {
        "func": ["check_include_exclude", "compare_text_file"],
        "conj": "or",
        "result": [
            {"type": "vm_command_line", "command": "ls ~", "shell": True},
            {"type": "vm_file", "path": "/home/user/a.txt", "dest": "a.txt"},
        ],
        "expected": [
            {"type": "rule", "rules": {"include": ["a.txt"], "exclude": []}},
            {"type": "cloud_file", "path": "gold/a.txt", "dest": "gold.txt"},
        ],
        "options": [None, {"ignore_blanks": True}],
        "postconfig": [{"type": "sleep", "parameters": {"seconds": 0.5}}],
    }
    task = os_task("multi", evaluator=evaluator, ocr_instruction='type "x"; press enter')
    write_suite(tmp_path, {"os": [task]})
    (only,) = read_suite(tmp_path).tasks
    calls = only.evaluator.calls
    assert not only.evaluator.single
    assert only.evaluator.conj == "or"
    assert [c.func for c in calls] == ["check_include_exclude", "compare_text_file"]
    assert calls[0].options == {}
    assert calls[1].options == {"ignore_blanks": True}
    assert calls[1].expected is not None
    assert calls[1].expected.type == "cloud_file"
    assert [s.type for s in only.evaluator.postconfig] == ["sleep"]
    assert only.instruction_for("ocr_instruction") == 'type "x"; press enter'


def test_an_infeasible_task_needs_no_getter(tmp_path: Path) -> None:
    task = os_task("cannot", evaluator={"func": "infeasible"})
    write_suite(tmp_path, {"os": [task]})
    (only,) = read_suite(tmp_path).tasks
    assert only.evaluator.infeasible


BAD: list[tuple[dict[str, Any], str]] = [
    (
        os_task("gdrive", config=[{"type": "googledrive", "parameters": {"settings_file": "x"}}]),
        "config step 1: unknown step type 'googledrive'",
    ),
    (
        os_task("pptx", evaluator={**os_task("x")["evaluator"], "func": "compare_pptx_files"}),
        "evaluator.func: unknown metric 'compare_pptx_files'",
    ),
    (
        os_task(
            "a11y",
            evaluator={
                "func": "check_accessibility_tree",
                "result": {"type": "accessibility_tree"},
            },
        ),
        "unknown metric 'check_accessibility_tree'",
    ),
    (
        os_task(
            "tree",
            evaluator={
                "func": "exact_match",
                "result": {"type": "accessibility_tree"},
                "expected": {"type": "rule", "rules": {"expected": 1}},
            },
        ),
        "evaluator.result: unknown getter type 'accessibility_tree'",
    ),
    (
        os_task(
            "web",
            config=[
                {
                    "type": "download",
                    "parameters": {
                        "files": [{"url": "https://example.org/a.xlsx", "path": "/home/user/a"}]
                    },
                }
            ],
        ),
        "config step 1 (download): download: 'https://example.org/a.xlsx' is not a file:// URL",
    ),
    (
        os_task(
            "short",
            evaluator={
                "func": ["exact_match", "exact_match"],
                "result": [{"type": "rule", "rules": {}}],
            },
        ),
        "evaluator.result must be a list as long as func (2 metrics)",
    ),
    (
        os_task("nolaunch", config=[{"type": "launch", "parameters": {}}]),
        "missing parameter(s) command",
    ),
    (os_task("conj", evaluator={**os_task("x")["evaluator"], "conj": "xor"}), "conj must be"),
    (
        os_task("nap", config=[{"type": "sleep", "parameters": {"seconds": "long"}}]),
        "config step 1 (sleep): `seconds` must be a number from 0 to 600, got 'long'",
    ),
    (os_task("noinstr", instruction=""), "`instruction` must be a non-empty string"),
]


def test_tasks_that_cannot_run_are_named_and_left_out(tmp_path: Path) -> None:
    good = os_task("good")
    mismatched = os_task("the-real-id")
    write_suite(tmp_path, {"os": [good, *(task for task, _ in BAD)]})
    # A file whose id is not its name, and a task the index lists but nobody wrote.
    (tmp_path / "examples" / "os" / "renamed.json").write_text(json.dumps(mismatched))
    (tmp_path / "examples" / "os" / "broken.json").write_text("{not json")
    index = json.loads((tmp_path / "test_all.json").read_text())
    index["os"] += ["renamed", "broken", "missing"]
    (tmp_path / "test_all.json").write_text(json.dumps(index))

    suite = read_suite(tmp_path)

    assert [t.id for t in suite.tasks] == ["good"]
    assert len(suite.problems) == len(BAD) + 3
    for task, what in BAD:
        said = _problem(suite.problems, task["id"])
        assert f"examples/os/{task['id']}.json (task {task['id']}): " in said
        assert what in said, said
    assert "`id` is 'the-real-id' but the file is named renamed.json" in _problem(
        suite.problems, "renamed"
    )
    assert "not JSON" in _problem(suite.problems, "broken")
    assert "listed in test_all.json under 'os' but missing" in _problem(suite.problems, "missing")


def test_the_ocr_field_is_required_only_when_it_is_used(tmp_path: Path) -> None:
    with_ocr = os_task("with", ocr_instruction='type "echo done > ~/out.txt"; press enter')
    write_suite(tmp_path, {"os": [with_ocr, os_task("without")]})
    assert len(read_suite(tmp_path, instruction_field="instruction").tasks) == 2
    suite = read_suite(tmp_path, instruction_field="ocr_instruction")
    assert [t.id for t in suite.tasks] == ["with"]
    assert "no ocr_instruction" in _problem(suite.problems, "without")


def test_domains_filter_and_a_single_file(tmp_path: Path) -> None:
    write_suite(tmp_path, {"os": [os_task("a")], "chrome": [chrome_task("b")]})
    assert [t.id for t in read_suite(tmp_path, domains=["chrome"]).tasks] == ["b"]
    single = read_suite(tmp_path / "examples" / "os" / "a.json")
    assert [(t.domain, t.id) for t in single.tasks] == [("os", "a")]
    path = tmp_path / "gdrive.json"
    path.write_text(json.dumps(BAD[0][0] | {"id": "gdrive"}))
    with pytest.raises(TaskFileError, match="unknown step type 'googledrive'"):
        read_task(path)


def test_on_problem_stop_runs_nothing(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    write_suite(tmp_path / "suite", {"os": [os_task("good"), BAD[0][0]]})
    out = tmp_path / "out"
    # No daemon answers at this address: stopping happens before any session.
    argv = ["eval", "tasks", str(tmp_path / "suite"), "--server", "127.0.0.1:9", "--out", str(out)]
    flags = ["--instruction-field", "instruction", "--policy", "ocr", "--on-problem", "stop"]
    assert main([*argv, *flags]) == 2
    err = capsys.readouterr().err
    assert "examples/os/gdrive.json (task gdrive): config step 1: unknown step type" in err
    assert "1 task(s) cannot run (above); nothing was run" in err
    assert not out.exists()
