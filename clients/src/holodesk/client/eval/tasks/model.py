"""The values of a task suite: a task as its OSWorld file says it (Task), its set-up
steps (ConfigStep), its evaluator (Evaluator: metrics over getters), and what is
wrong with a file that cannot run (Problem).

These are plain data, read once and checked by reader.py before anything runs; the
code that gives them meaning is in steps/, getters/, metrics/ (through registry.py)
and evaluate.py."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


@dataclass(frozen=True)
class ConfigStep:
    """One `{type, parameters}` entry of `config` or `postconfig`."""

    type: str
    parameters: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class GetterSpec:
    """A `{type, ...}` getter: the fields other than `type` are its configuration."""

    type: str
    config: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class MetricCall:
    """One metric of an evaluator with the getters and options that feed it. `expected`
    None: the metric is called without an expected value (OSWorld's rule)."""

    func: str
    result: GetterSpec | None
    expected: GetterSpec | None
    options: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Evaluator:
    """`func` a name or a list: `calls` has one entry per metric; `single` says which
    form the file used (a single metric's score is returned as is, a list's by `conj`)."""

    calls: tuple[MetricCall, ...]
    conj: str = "and"
    single: bool = True
    postconfig: tuple[ConfigStep, ...] = ()

    @property
    def infeasible(self) -> bool:
        return self.single and self.calls[0].func == "infeasible"


@dataclass(frozen=True)
class Task:
    """One task file, read. `path` is the file (relative paths in `download` and
    `cloud_file` are relative to its folder); `raw` the whole JSON object, every field
    kept (snapshot, source, related_apps and whatever else the file holds)."""

    id: str
    domain: str
    instruction: str
    config: tuple[ConfigStep, ...]
    evaluator: Evaluator
    path: Path
    ocr_instruction: str | None = None
    raw: Mapping[str, Any] = field(default_factory=dict)

    @property
    def folder(self) -> Path:
        return self.path.parent

    def instruction_for(self, field_name: str) -> str:
        """The task's text for `field_name` ("instruction" or "ocr_instruction")."""
        if field_name == "ocr_instruction":
            if self.ocr_instruction is None:
                raise ValueError(f"task {self.id} has no ocr_instruction")
            return self.ocr_instruction
        return self.instruction


@dataclass(frozen=True)
class Problem:
    """Why a task (or the suite's index) cannot run: the file, the task id when known,
    and what is wrong, said so that the fix is obvious."""

    file: Path
    task_id: str
    what: str

    def __str__(self) -> str:
        where = f"{self.file}" + (f" (task {self.task_id})" if self.task_id else "")
        return f"{where}: {self.what}"


@dataclass(frozen=True)
class Suite:
    """The tasks that passed every check, in index order, and the problems found."""

    root: Path
    tasks: tuple[Task, ...]
    problems: tuple[Problem, ...] = ()
