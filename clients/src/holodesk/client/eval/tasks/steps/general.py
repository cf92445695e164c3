"""OSWorld's general set-up steps, run on this host against the task's display and
HOME: launch, open, execute (and its alias command), sleep, download."""

from __future__ import annotations

import mimetypes
import re
import shutil
import subprocess
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlparse

from holodesk.client.eval.tasks import chromium
from holodesk.client.eval.tasks.context import StepError, TaskContext
from holodesk.client.eval.tasks.kinds import Step

EXECUTE_TIMEOUT_S = 60.0
UNTIL_TRIES = 5

SPREADSHEET = frozenset({".csv", ".tsv", ".xls", ".xlsx", ".ods", ".gnumeric"})
BROWSER = frozenset({".html", ".htm", ".pdf", ".svg"})
TEXT = frozenset(
    {
        ".txt",
        ".md",
        ".py",
        ".sh",
        ".json",
        ".log",
        ".conf",
        ".cfg",
        ".ini",
        ".yaml",
        ".yml",
        ".xml",
        "",
    }
)


def launch(context: TaskContext, parameters: Mapping[str, Any]) -> None:
    command = parameters["command"]
    shell = bool(parameters.get("shell", False))
    if chromium.is_devtools_forwarder(command):
        return
    if chromium.is_chrome(command):
        chromium.start(context, context.command(command, shell=False))
        return
    _check_program(command, shell)
    context.start(command, shell=shell)


def open_path(context: TaskContext, parameters: Mapping[str, Any]) -> None:
    target = str(parameters["path"])
    if urlparse(target).scheme in ("http", "https", "file"):
        chromium.start(context, urls=[target])
        return
    path = context.path(target)
    if not path.exists():
        raise StepError(f"{path} does not exist")
    suffix = path.suffix.lower()
    if path.is_dir():
        context.processes.start(["xterm"], shell=False, env=context.env(), cwd=path)
    elif suffix in SPREADSHEET:
        context.start(["gnumeric", str(path)])
    elif suffix in BROWSER:
        chromium.start(context, urls=[path.as_uri()])
    elif suffix in TEXT or (mimetypes.guess_type(path.name)[0] or "").startswith("text/"):
        context.start(["mousepad", str(path)])
    else:
        context.start(["xdg-open", str(path)])


def execute(context: TaskContext, parameters: Mapping[str, Any]) -> None:
    command = parameters["command"]
    shell = bool(parameters.get("shell", False))
    until = parameters.get("until") or {}
    _check_program(command, shell)
    for attempt in range(UNTIL_TRIES if until else 1):
        try:
            ran = context.run(command, shell=shell, timeout_s=EXECUTE_TIMEOUT_S)
        except subprocess.TimeoutExpired as error:
            raise StepError(f"{command!r} did not finish within {EXECUTE_TIMEOUT_S:g} s") from error
        for name, text in (("stdout", ran.stdout), ("stderr", ran.stderr)):
            if parameters.get(name):
                (context.cache / str(parameters[name])).write_text(text)
        if not until or _until_met(until, ran.returncode, ran.stdout, ran.stderr):
            return
        if attempt < UNTIL_TRIES - 1:
            time.sleep(1.0)
    raise StepError(
        f"{command!r}: its output never matched `until` {dict(until)!r} ({UNTIL_TRIES} tries)"
    )


def _until_met(until: Mapping[str, Any], returncode: int, stdout: str, stderr: str) -> bool:
    if "returncode" in until and returncode != until["returncode"]:
        return False
    if "stdout" in until and str(until["stdout"]) not in stdout:
        return False
    return not ("stderr" in until and str(until["stderr"]) not in stderr)


def _check_program(command: Any, shell: bool) -> None:
    """A missing program is said plainly (not as Popen's bare FileNotFoundError)."""
    if shell:
        return
    words = command.split() if isinstance(command, str) else [str(w) for w in command]
    if not words:
        raise StepError("the command is empty")
    program = words[0]
    if "/" not in program and program != "~" and shutil.which(program) is None:
        raise StepError(f"{program!r} is not installed (not found on PATH)")


def sleep(context: TaskContext, parameters: Mapping[str, Any]) -> None:
    seconds = float(parameters["seconds"])
    if not 0 <= seconds <= 600:
        raise StepError(f"seconds must be between 0 and 600, got {seconds:g}")
    time.sleep(seconds)


def download(context: TaskContext, parameters: Mapping[str, Any]) -> None:
    for entry in parameters["files"]:
        source = local_source(str(entry["url"]), context.task_folder)
        target = context.path(str(entry["path"]))
        if not source.is_file():
            raise StepError(f"{entry['url']!r}: no such file ({source})")
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(source, target)


def local_source(url: str, folder: Path) -> Path:
    """A `file://` URL or a path (relative to the task file's folder) as a path; any
    other scheme is refused: the suite runs with no network."""
    parsed = urlparse(url)
    if parsed.scheme == "file":
        return Path(unquote(parsed.path))
    if parsed.scheme and not re.fullmatch(r"[a-zA-Z]", parsed.scheme):
        raise StepError(f"{url!r}: only file:// URLs and paths are read here (no network)")
    path = Path(url).expanduser()
    return path if path.is_absolute() else folder / path


def check_download(parameters: Mapping[str, Any]) -> str:
    files = parameters.get("files")
    if not isinstance(files, list) or not files:
        return "download needs `files`, a list of {url, path}"
    for entry in files:
        if not isinstance(entry, dict) or "url" not in entry or "path" not in entry:
            return f"download: every file needs `url` and `path`, got {entry!r}"
        scheme = urlparse(str(entry["url"])).scheme
        if scheme not in ("", "file"):
            return f"download: {entry['url']!r} is not a file:// URL or a path (no network here)"
    return ""


def check_command(parameters: Mapping[str, Any]) -> str:
    command = parameters.get("command")
    if isinstance(command, str) and command.strip():
        return ""
    if (
        isinstance(command, list)
        and command
        and all(isinstance(w, str | int | float) for w in command)
    ):
        return ""
    return f"`command` must be a non-empty string or list of strings, got {command!r}"


def check_seconds(parameters: Mapping[str, Any]) -> str:
    seconds = parameters.get("seconds")
    if isinstance(seconds, bool) or not isinstance(seconds, int | float) or not 0 <= seconds <= 600:
        return f"`seconds` must be a number from 0 to 600, got {seconds!r}"
    return ""


def check_path(parameters: Mapping[str, Any]) -> str:
    path = parameters.get("path")
    return (
        "" if isinstance(path, str) and path.strip() else f"`path` must be a string, got {path!r}"
    )


STEPS: Mapping[str, Step] = {
    "launch": Step(launch, ("command",), check_command),
    "open": Step(open_path, ("path",), check_path),
    "execute": Step(execute, ("command",), check_command),
    "command": Step(execute, ("command",), check_command),
    "sleep": Step(sleep, ("seconds",), check_seconds),
    "download": Step(download, ("files",), check_download),
}
