"""Reads task suites in OSWorld's layout and checks every task fully before anything
runs: fields, set-up steps, getters, metrics and the shape of list evaluators.

Layouts: a folder with an index (`test_all.json`: {domain: [ids]}) and
`examples/<domain>/<id>.json` (OSWorld's `evaluation_examples/`; the repository root
holding it works too), or one task file. What cannot run is a Problem naming the
file, the task and what is wrong; the caller skips those tasks or stops."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from holodesk.client.eval.tasks.model import (
    ConfigStep,
    Evaluator,
    GetterSpec,
    MetricCall,
    Problem,
    Suite,
    Task,
)
from holodesk.client.eval.tasks.registry import GETTERS, METRICS, STEPS

DEFAULT_INDEX = "test_all.json"
INSTRUCTION_FIELDS = ("instruction", "ocr_instruction")


class TaskFileError(Exception):
    """One thing wrong with a task file (the reader turns it into a Problem)."""


def suite_root(source: Path, index: str = DEFAULT_INDEX) -> Path:
    """The folder holding `examples/` (and the index): `source` itself, or its
    `evaluation_examples/` as in OSWorld's repository."""
    for candidate in (source, source / "evaluation_examples"):
        if (candidate / index).is_file() or (candidate / "examples").is_dir():
            return candidate
    raise FileNotFoundError(
        f"{source}: not a task suite (no {index} and no examples/ folder, nor an "
        "evaluation_examples/ holding them)"
    )


def read_suite(
    source: Path,
    *,
    index: str = DEFAULT_INDEX,
    domains: Sequence[str] = (),
    instruction_field: str | None = None,
) -> Suite:
    """Every task of the suite at `source` (a folder or one task file), checked.

    `domains` keeps only those domains; `instruction_field` ("instruction" or
    "ocr_instruction"), when given, must be present in every task."""
    if source.is_file():
        root = source.parent
        entries = [(source.parent.name, source.stem, source)]
    else:
        root = suite_root(source, index)
        entries = _indexed(root, index)
    tasks: list[Task] = []
    problems: list[Problem] = []
    seen: set[tuple[str, str]] = set()
    for domain, task_id, path in entries:
        if domains and domain not in domains:
            continue
        if isinstance(path, Problem):
            problems.append(path)
            continue
        if (domain, task_id) in seen:
            problems.append(Problem(path, task_id, f"listed twice in domain {domain!r}"))
            continue
        seen.add((domain, task_id))
        try:
            task = read_task(path, domain)
            if instruction_field is not None:
                _require_field(task, instruction_field)
        except TaskFileError as error:
            problems.append(Problem(path, task_id, str(error)))
            continue
        tasks.append(task)
    return Suite(root, tuple(tasks), tuple(problems))


def _indexed(root: Path, index: str) -> list[tuple[str, str, Any]]:
    index_path = root / index
    examples = root / "examples"
    if not index_path.is_file():
        return [(path.parent.name, path.stem, path) for path in sorted(examples.glob("*/*.json"))]
    try:
        listing = json.loads(index_path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as error:
        raise ValueError(f"{index_path}: not a readable JSON index: {error}") from error
    if not isinstance(listing, dict) or not all(
        isinstance(ids, list) and all(isinstance(i, str) for i in ids) for ids in listing.values()
    ):
        raise ValueError(f"{index_path}: the index must be {{domain: [task ids]}}")
    entries: list[tuple[str, str, Any]] = []
    for domain, ids in listing.items():
        for task_id in ids:
            path = examples / domain / f"{task_id}.json"
            if not path.is_file():
                problem = Problem(path, task_id, f"listed in {index} under {domain!r} but missing")
                entries.append((domain, task_id, problem))
            else:
                entries.append((domain, task_id, path))
    return entries


def _require_field(task: Task, field: str) -> None:
    if field not in INSTRUCTION_FIELDS:
        raise ValueError(
            f"the instruction field must be one of {INSTRUCTION_FIELDS}, not {field!r}"
        )
    if field == "ocr_instruction" and task.ocr_instruction is None:
        raise TaskFileError(
            "no ocr_instruction: the daemon's policy is the OCR baseline, which needs the "
            "task in its language (docs/ocr-tasks.md); add one, or pass "
            "--instruction-field instruction"
        )


def read_task(path: Path, domain: str = "") -> Task:
    """One task file, checked; TaskFileError says what is wrong."""
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as error:
        raise TaskFileError(f"cannot read the file: {error}") from error
    except json.JSONDecodeError as error:
        raise TaskFileError(f"not JSON: {error}") from error
    if not isinstance(raw, dict):
        raise TaskFileError(f"a task file holds a JSON object, not {type(raw).__name__}")
    task_id = _text(raw, "id")
    if task_id != path.stem:
        raise TaskFileError(f"`id` is {task_id!r} but the file is named {path.name}")
    instruction = _text(raw, "instruction")
    ocr = raw.get("ocr_instruction")
    if ocr is not None and (not isinstance(ocr, str) or not ocr.strip()):
        raise TaskFileError("`ocr_instruction` must be a non-empty string when present")
    config = _steps(raw.get("config", []), "config")
    if "evaluator" not in raw:
        raise TaskFileError("no `evaluator`")
    evaluator = _evaluator(raw["evaluator"])
    return Task(
        id=task_id,
        domain=domain or path.parent.name,
        instruction=instruction,
        config=config,
        evaluator=evaluator,
        path=path.resolve(),
        ocr_instruction=ocr,
        raw=raw,
    )


def _text(raw: Mapping[str, Any], key: str) -> str:
    value = raw.get(key)
    if not isinstance(value, str) or not value.strip():
        raise TaskFileError(f"`{key}` must be a non-empty string, got {value!r}")
    return value


def _steps(entries: Any, where: str) -> tuple[ConfigStep, ...]:
    if not isinstance(entries, list):
        raise TaskFileError(f"`{where}` must be a list of {{type, parameters}}")
    steps: list[ConfigStep] = []
    for number, entry in enumerate(entries, 1):
        at = f"{where} step {number}"
        if not isinstance(entry, dict) or not isinstance(entry.get("type"), str):
            raise TaskFileError(f"{at}: must be an object with a `type`, got {entry!r}")
        kind = entry["type"]
        parameters = entry.get("parameters", {})
        if not isinstance(parameters, dict):
            raise TaskFileError(f"{at} ({kind}): `parameters` must be an object")
        step = STEPS.get(kind)
        if step is None:
            raise TaskFileError(
                f"{at}: unknown step type {kind!r} (known: {', '.join(sorted(STEPS))})"
            )
        missing = [p for p in step.required if p not in parameters]
        if missing:
            raise TaskFileError(f"{at} ({kind}): missing parameter(s) {', '.join(missing)}")
        problem = step.check(parameters) if step.check is not None else ""
        if problem:
            raise TaskFileError(f"{at} ({kind}): {problem}")
        steps.append(ConfigStep(kind, parameters))
    return tuple(steps)


def _getter(spec: Any, where: str, *, optional: bool) -> GetterSpec | None:
    if spec is None or (optional and spec == {}):
        if optional:
            return None
        raise TaskFileError(f"{where}: a getter is needed here")
    if not isinstance(spec, dict) or not isinstance(spec.get("type"), str):
        raise TaskFileError(f"{where}: a getter is an object with a `type`, got {spec!r}")
    kind = spec["type"]
    getter = GETTERS.get(kind)
    if getter is None:
        raise TaskFileError(
            f"{where}: unknown getter type {kind!r} (known: {', '.join(sorted(GETTERS))})"
        )
    missing = [p for p in getter.required if p not in spec]
    if missing:
        raise TaskFileError(f"{where} ({kind}): missing field(s) {', '.join(missing)}")
    problem = getter.check(spec) if getter.check is not None else ""
    if problem:
        raise TaskFileError(f"{where} ({kind}): {problem}")
    return GetterSpec(kind, {k: v for k, v in spec.items() if k != "type"})


def _evaluator(raw: Any) -> Evaluator:
    if not isinstance(raw, dict):
        raise TaskFileError("`evaluator` must be an object")
    func = raw.get("func")
    single = isinstance(func, str)
    funcs = [func] if single else func
    if not isinstance(funcs, list) or not funcs or not all(isinstance(f, str) for f in funcs):
        raise TaskFileError(f"evaluator.func must be a metric name or a list of them, got {func!r}")
    for name in funcs:
        if name not in METRICS:
            raise TaskFileError(
                f"evaluator.func: unknown metric {name!r} (known: {', '.join(sorted(METRICS))})"
            )
    if "infeasible" in funcs and not single:
        raise TaskFileError("evaluator.func: infeasible stands alone, not in a list")
    conj = raw.get("conj", "and")
    if conj not in ("and", "or"):
        raise TaskFileError(f"evaluator.conj must be 'and' or 'or', got {conj!r}")
    postconfig = _steps(raw.get("postconfig", []), "evaluator.postconfig")
    if single and func == "infeasible":
        call = MetricCall("infeasible", None, None, {})
        return Evaluator((call,), conj, True, postconfig)
    results = _per_metric(raw, "result", funcs, single, required=True)
    expected = _per_metric(raw, "expected", funcs, single, required=False)
    options = _per_metric(raw, "options", funcs, single, required=False)
    calls = []
    for i, name in enumerate(funcs):
        where = "evaluator" if single else f"evaluator (metric {i + 1}, {name})"
        option = options[i] if options[i] is not None else {}
        if not isinstance(option, dict):
            raise TaskFileError(f"{where}: options must be an object, got {option!r}")
        calls.append(
            MetricCall(
                name,
                _getter(results[i], f"{where}.result", optional=False),
                _getter(expected[i], f"{where}.expected", optional=True),
                option,
            )
        )
    return Evaluator(tuple(calls), conj, single, postconfig)


def _per_metric(
    raw: Mapping[str, Any], key: str, funcs: list[str], single: bool, *, required: bool
) -> list[Any]:
    """The `key` entry for each metric (None where absent)."""
    if key not in raw or raw[key] in (None, [], {}):
        if required:
            raise TaskFileError(
                f"evaluator.{key} is needed (a getter{'' if single else ' per metric'})"
            )
        return [None] * len(funcs)
    value = raw[key]
    if single:
        return [value]
    if not isinstance(value, list) or len(value) != len(funcs):
        raise TaskFileError(
            f"evaluator.{key} must be a list as long as func ({len(funcs)} metrics), got {value!r}"
        )
    return list(value)
