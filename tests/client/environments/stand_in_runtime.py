"""A stand-in for docker, for the tests of SandboxEnvironment: no container runtime
runs on this machine, so this one runs the sandbox image's own entrypoint
(packaging/container/sandbox/entrypoint.sh) as the "container", on this machine.

    python stand_in_runtime.py STATE_DIR IMAGE=ENTRYPOINT... -- docker arguments...

It answers the calls SandboxEnvironment and the reaper make, as docker does:
`run --detach [--rm] --name --label --publish 127.0.0.1::PORT --env NAME IMAGE`,
`port`, `logs`, `inspect --format {{.State.Running}}`, `ps --all --quiet --filter
label=K=V`, `rm --force`. Like a container, the entrypoint gets only the variables
passed with --env (plus PATH, and a HOME of its own): nothing of the caller's
environment, so none of its reaper markers either. Its VNC listens where the port
is published (127.0.0.1, a free port). Every call's argv is appended to
STATE_DIR/calls.log.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Any

import psutil  # type: ignore[import-untyped]


def main(argv: list[str]) -> int:
    state = Path(argv[0])
    split = argv.index("--")
    images = dict(pair.split("=", 1) for pair in argv[1:split])
    args = argv[split + 1 :]
    state.mkdir(parents=True, exist_ok=True)
    with (state / "calls.log").open("a") as log:
        log.write(json.dumps(args) + "\n")
    command, rest = args[0], args[1:]
    if command == "run":
        return _run(state, images, rest)
    if command == "port":
        info = _find(state, rest[0])
        if info is None:
            return _no_such(rest[0])
        print(f"127.0.0.1:{info['port']}")
        return 0
    if command == "logs":
        info = _find(state, rest[0])
        if info is None:
            return _no_such(rest[0])
        sys.stdout.write((state / info["id"] / "log").read_text(errors="replace"))
        return 0
    if command == "inspect":
        info = _find(state, rest[-1])
        if info is None:
            print(f"Error: No such object: {rest[-1]}", file=sys.stderr)
            return 1
        print("true" if alive(info) else "false")
        return 0
    if command == "ps":
        wanted = rest[rest.index("--filter") + 1].removeprefix("label=")
        key, _, value = wanted.partition("=")
        for info in _containers(state):
            if info["labels"].get(key) == value:
                print(info["id"])
        return 0
    if command == "rm":
        return _remove(state, [a for a in rest if not a.startswith("-")])
    print(f"stand-in runtime: unknown command {command!r}", file=sys.stderr)
    return 125


def _run(state: Path, images: dict[str, str], args: list[str]) -> int:
    name, labels, env, published, remove_on_exit = "", {}, {}, None, False
    index = 0
    while args[index].startswith("-"):
        flag, value = args[index], args[index + 1]
        index += 2
        if flag == "--name":
            name = value
        elif flag == "--label":
            key, _, label = value.partition("=")
            labels[key] = label
        elif flag == "--env":
            key, equals, given = value.partition("=")
            env[key] = given if equals else os.environ.get(key, "")
        elif flag == "--publish":
            published = value
        elif flag == "--pull":
            if value != "never":
                print(f"stand-in runtime: it pulls nothing (--pull {value})", file=sys.stderr)
                return 125
        elif flag in ("--detach", "--rm"):
            remove_on_exit = remove_on_exit or flag == "--rm"
            index -= 1
        else:
            print(f"stand-in runtime: unknown flag {flag}", file=sys.stderr)
            return 125
    asked = args[index]
    entrypoint = images.get(asked)
    if entrypoint is None:
        print(f"Unable to find image '{asked}:latest' locally", file=sys.stderr)
        return 125
    if any(info["name"] == name for info in _containers(state)):
        print(f'Conflict. The container name "/{name}" is already in use', file=sys.stderr)
        return 125
    container = uuid.uuid4().hex + uuid.uuid4().hex
    home = state / container / "home"
    home.mkdir(parents=True)
    port = _free_port()
    listen = published.split(":")[0] if published else "127.0.0.1"
    inside = {
        "PATH": os.environ["PATH"],
        "HOME": str(home),
        "TMPDIR": str(home),
        **env,
        "SANDBOX_DISPLAY": "auto",
        "SANDBOX_VNC_PORT": str(port),
        "SANDBOX_VNC_LISTEN": listen,
    }
    with (state / container / "log").open("wb") as log:
        process = subprocess.Popen(
            ["bash", entrypoint],
            env=inside,
            cwd=home,
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    info = {
        "id": container,
        "name": name,
        "labels": labels,
        "port": port,
        "pid": process.pid,
        "created": psutil.Process(process.pid).create_time(),
        "remove_on_exit": remove_on_exit,
    }
    (state / container / "info.json").write_text(json.dumps(info))
    print(container)
    return 0


def _remove(state: Path, containers: list[str]) -> int:
    code = 0
    for asked in containers:
        info = _find(state, asked)
        if info is None:
            code = _no_such(asked)
            continue
        stop(info)
        _forget(state, info)
    return code


def stop(info: dict[str, Any]) -> None:
    if not alive(info):
        return
    with contextlib.suppress(ProcessLookupError):
        os.killpg(info["pid"], signal.SIGTERM)
    deadline = time.monotonic() + 10
    while alive(info) and time.monotonic() < deadline:
        time.sleep(0.05)
    with contextlib.suppress(ProcessLookupError):
        os.killpg(info["pid"], signal.SIGKILL)


def _containers(state: Path) -> list[dict[str, Any]]:
    """Every container that still exists: --rm removes those whose entrypoint ended."""
    found = []
    for path in sorted(state.glob("*/info.json")):
        info = json.loads(path.read_text())
        if alive(info) or not info["remove_on_exit"]:
            found.append(info)
        else:
            _forget(state, info)
    return found


def _find(state: Path, asked: str) -> dict[str, Any] | None:
    for info in _containers(state):
        if info["id"].startswith(asked) or info["name"] == asked:
            return info
    return None


def _forget(state: Path, info: dict[str, Any]) -> None:
    """Remove the container; what it printed is kept in STATE/removed/ for post-mortems."""
    removed = state / "removed"
    removed.mkdir(exist_ok=True)
    log = state / info["id"] / "log"
    if log.exists():
        log.rename(removed / f"{info['id']}.log")
    subprocess.run(["rm", "-rf", str(state / info["id"])], check=False)


def alive(info: dict[str, Any]) -> bool:
    try:
        process = psutil.Process(info["pid"])
        return bool(
            abs(process.create_time() - info["created"]) < 0.01
            and process.status() != psutil.STATUS_ZOMBIE
        )
    except psutil.NoSuchProcess:
        return False


def _no_such(asked: str) -> int:
    print(f"Error response from daemon: No such container: {asked}", file=sys.stderr)
    return 1


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
