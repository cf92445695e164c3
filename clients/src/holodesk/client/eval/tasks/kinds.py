"""The shapes of the registry's entries: a set-up step and a getter, each with the
parameters it cannot do without (checked when a suite is read, before anything runs).
A metric is a plain function `(result, expected?, **options) -> float`."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from holodesk.client.eval.tasks.context import TaskContext

StepRun = Callable[[TaskContext, Mapping[str, Any]], None]
GetterFetch = Callable[[TaskContext, Mapping[str, Any]], Any]
Metric = Callable[..., float]


@dataclass(frozen=True)
class Step:
    run: StepRun
    required: tuple[str, ...] = ()
    # Checks the parameters when the suite is read: "" when they are fine, else why not.
    check: Callable[[Mapping[str, Any]], str] | None = None


@dataclass(frozen=True)
class Getter:
    fetch: GetterFetch
    required: tuple[str, ...] = ()
    # What a file's checker must also accept: `cloud_file`'s URL schemes, say.
    check: Callable[[Mapping[str, Any]], str] | None = None
