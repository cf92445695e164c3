"""Every file of the bundled suite is what the reader, the registry and the OCR
baseline accept: nothing in it can rot unnoticed."""

from __future__ import annotations

import json
from collections import Counter

from holodesk.client.eval.tasks.command import BUNDLED
from holodesk.client.eval.tasks.registry import GETTERS, METRICS, STEPS
from holodesk.client.eval.tasks.steps.general import local_source
from holodesk.daemon.policies.ocr.instructions import parse

from .suite import bundled

DOMAINS = {"terminal", "text_editor", "spreadsheet", "browser"}


def test_every_task_file_reads_without_a_problem() -> None:
    suite = bundled()
    assert suite.problems == ()
    index = json.loads((BUNDLED / "test_all.json").read_text())
    files = {p.stem for p in BUNDLED.glob("examples/*/*.json")}
    listed = [task_id for ids in index.values() for task_id in ids]
    assert sorted(listed) == sorted(files)  # every file listed once, nothing listed is missing
    assert len(suite.tasks) == len(listed) >= 20
    assert set(index) == DOMAINS
    assert {t.domain for t in suite.tasks} == DOMAINS


def test_tasks_name_only_registered_steps_getters_and_metrics() -> None:
    for task in bundled().tasks:
        evaluator = task.raw["evaluator"]
        steps = [*task.raw.get("config", []), *evaluator.get("postconfig", [])]
        assert {s["type"] for s in steps} <= set(STEPS), task.id
        funcs = evaluator["func"] if isinstance(evaluator["func"], list) else [evaluator["func"]]
        assert set(funcs) - {"infeasible"} <= set(METRICS), task.id
        getters = []
        for key in ("result", "expected"):
            value = evaluator.get(key)
            getters += value if isinstance(value, list) else [value]
        assert {g["type"] for g in getters if g} <= set(GETTERS), task.id


def test_two_tasks_are_infeasible() -> None:
    infeasible = [t.id for t in bundled().tasks if t.evaluator.infeasible]
    assert len(infeasible) == 2
    assert Counter(t.domain for t in bundled().tasks if t.evaluator.infeasible) == {
        "text_editor": 1,
        "browser": 1,
    }


def test_every_ocr_instruction_parses_in_the_ocr_task_language() -> None:
    for task in bundled().tasks:
        assert task.ocr_instruction, task.id
        steps = parse(task.ocr_instruction)
        # OSWorld's step budget (holodesk eval tasks' default) leaves room for the
        # OCR baseline's looks again; its last step is the implied `done`.
        assert 1 <= len(steps) <= 13, (task.id, len(steps))
        assert task.instruction != task.ocr_instruction


def test_every_file_a_task_starts_from_or_compares_with_exists() -> None:
    for task in bundled().tasks:
        urls = [
            entry["url"]
            for step in task.raw["config"]
            if step["type"] == "download"
            for entry in step["parameters"]["files"]
        ]
        evaluator = task.raw["evaluator"]
        expected = evaluator.get("expected")
        for getter in expected if isinstance(expected, list) else [expected]:
            if getter and getter["type"] == "cloud_file":
                urls.append(getter["path"])
        for url in urls:
            source = local_source(url, task.folder).resolve()
            assert source.is_file(), (task.id, url)
            assert BUNDLED.resolve() in source.parents, (task.id, url)  # shipped with the suite
