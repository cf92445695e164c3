"""File getters: vm_file (a file of the task's HOME or anywhere on the host) and
cloud_file (a reference file shipped with the suite). Each copies the file into the
task's cache folder under `dest`, as OSWorld does, and gives that copy's path, so
later steps cannot change what was scored and the result folder can keep it."""

from __future__ import annotations

import shutil
from collections.abc import Mapping
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

from holodesk.client.eval.tasks.context import TaskContext
from holodesk.client.eval.tasks.kinds import Getter
from holodesk.client.eval.tasks.steps.general import local_source


def _copies(
    context: TaskContext, spec: Mapping[str, Any], source_of: Any
) -> str | list[str | None] | None:
    multi = bool(spec.get("multi", False))
    paths = spec["path"] if multi else [spec["path"]]
    dests = spec.get("dest", [None] * len(paths)) if multi else [spec.get("dest")]
    found: list[str | None] = []
    for path, dest in zip(paths, dests, strict=True):
        source: Path = source_of(str(path))
        if not source.is_file():
            found.append(None)
            continue
        target = context.cache / (str(dest) if dest else source.name)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(source, target)
        found.append(str(target))
    if not multi:
        return found[0]
    gives = spec.get("gives")
    return [found[i] for i in gives] if gives is not None else found


def vm_file(context: TaskContext, spec: Mapping[str, Any]) -> Any:
    return _copies(context, spec, context.path)


def cloud_file(context: TaskContext, spec: Mapping[str, Any]) -> Any:
    return _copies(context, spec, lambda url: local_source(url, context.task_folder))


def _check_multi(spec: Mapping[str, Any]) -> str:
    if spec.get("multi"):
        if not isinstance(spec.get("path"), list):
            return "with multi, `path` must be a list"
        if "dest" in spec and (
            not isinstance(spec["dest"], list) or len(spec["dest"]) != len(spec["path"])
        ):
            return "with multi, `dest` must be a list as long as `path`"
    elif not isinstance(spec.get("path"), str):
        return f"`path` must be a string, got {spec.get('path')!r}"
    return ""


def _check_cloud(spec: Mapping[str, Any]) -> str:
    problem = _check_multi(spec)
    if problem:
        return problem
    paths = spec["path"] if spec.get("multi") else [spec["path"]]
    for path in paths:
        if urlparse(str(path)).scheme not in ("", "file"):
            return f"cloud_file: {path!r} is not a file:// URL or a path (no network here)"
    return ""


GETTERS: Mapping[str, Getter] = {
    "vm_file": Getter(vm_file, ("path",), _check_multi),
    "cloud_file": Getter(cloud_file, ("path",), _check_cloud),
}
