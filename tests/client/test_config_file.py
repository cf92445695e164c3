"""holodesk's config file, through the real executables: `holodesk run` takes its
daemon from $XDG_CONFIG_HOME/holodesk/client.toml's [run] table and talks to a real
holodeskd (scripted policy) on 127.0.0.1; a flag and $HOLODESK_SERVER beat the file;
a file that cannot be used stops holodesk with exit code 2 before it connects."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.daemon.support import GUARD_S, HOLODESKD, holo

HOLODESK = Path(sys.executable).with_name("holodesk")
ANSWER = "config answer"
# Nothing listens on port 1: a session sent there fails (quickly, with no retries).
NOWHERE = "127.0.0.1:1"


@pytest.fixture(scope="module")
def daemon(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A real holodeskd whose every session answers ANSWER at once; its address."""
    script = tmp_path_factory.mktemp("daemon") / "script.json"
    script.write_text(json.dumps([holo({"action": "answer", "content": ANSWER})]))
    process = subprocess.Popen(
        [
            str(HOLODESKD),
            "--listen",
            "127.0.0.1:0",
            "--policy",
            "scripted",
            "--script",
            str(script),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        env=_env(tmp_path_factory.mktemp("daemon-config")),
    )
    try:
        assert process.stdout is not None
        line = process.stdout.readline()
        assert line.startswith("holodeskd listening on "), line
        yield line.rsplit(" ", 1)[-1].strip()
    finally:
        process.terminate()
        process.wait(GUARD_S)


def _env(config_home: Path, **extra: str) -> dict[str, str]:
    drop = {"HOLODESK_CONFIG", "HOLODESKD_CONFIG", "HOLODESK_SERVER", "HOLODESK_TOKEN_FILE"}
    env = {k: v for k, v in os.environ.items() if k not in drop}
    return {**env, "XDG_CONFIG_HOME": str(config_home), **extra}


def _write(config_home: Path, text: str) -> Path:
    path = config_home / "holodesk" / "client.toml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def _holodesk(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(HOLODESK), *args], env=env, capture_output=True, text=True, timeout=GUARD_S * 2
    )


RUN = '[run]\nbackend = "fake"\nno-estop = true\nreconnect-attempts = 0\nserver = "{server}"\n'


def test_run_takes_its_daemon_from_the_file(tmp_path: Path, daemon: str) -> None:
    _write(tmp_path, RUN.format(server=daemon))
    done = _holodesk(_env(tmp_path), "run", "say something")
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == ANSWER


def test_a_flag_and_the_environment_beat_the_file(tmp_path: Path, daemon: str) -> None:
    _write(tmp_path, RUN.format(server=NOWHERE))
    failed = _holodesk(_env(tmp_path), "run", "say something")
    assert failed.returncode != 0  # the file's daemon is really the one asked
    assert ANSWER not in failed.stdout
    done = _holodesk(_env(tmp_path), "run", "--server", daemon, "say something")
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == ANSWER
    done = _holodesk(_env(tmp_path, HOLODESK_SERVER=daemon), "run", "say something")
    assert done.returncode == 0, done.stderr


def test_config_flag_and_env_name_another_file(tmp_path: Path, daemon: str) -> None:
    _write(tmp_path, RUN.format(server=NOWHERE))  # the default file, not read below
    other = tmp_path / "elsewhere.toml"
    other.write_text(RUN.format(server=daemon))
    done = _holodesk(_env(tmp_path), "--config", str(other), "run", "say something")
    assert done.returncode == 0, done.stderr
    done = _holodesk(_env(tmp_path, HOLODESK_CONFIG=str(other)), "run", "say something")
    assert done.returncode == 0, done.stderr


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            "[run]\nmax_steps = 3\n",
            "line 2: run.max_steps: unknown key 'max_steps' in [run]; did you mean 'max-steps'?",
        ),
        (
            "[run]\n\nmax-steps = 2.5\n",
            "line 3: run.max-steps: 2.5: expected a whole number",
        ),
        ('[run]\njson = "yes"\n', 'line 2: run.json: expected true or false, got a string ("yes")'),
        ('[rnu]\nserver = "x"\n', "line 1: rnu: unknown table [rnu] (the tables here: [run], "),
        ('server = "x"\n', "line 1: server: unknown key 'server' in the top level"),
        ('[locate]\nserver = ["a"]\n', "line 2: locate.server: expected a string, got an array"),
        ("[run\n", "not valid TOML"),
    ],
)
def test_a_bad_file_names_the_file_line_key_and_type(
    tmp_path: Path, text: str, expected: str
) -> None:
    path = _write(tmp_path, text)
    failed = _holodesk(_env(tmp_path), "run", "--backend", "fake", "--server", NOWHERE, "t")
    assert failed.returncode == 2, failed.stderr
    assert failed.stderr.startswith(f"holodesk: error: {path}: "), failed.stderr
    assert expected in failed.stderr
    assert failed.stdout == ""
    assert "session" not in failed.stderr  # nothing started


def test_a_named_file_that_is_missing_is_an_error(tmp_path: Path) -> None:
    missing = tmp_path / "missing.toml"
    failed = _holodesk(_env(tmp_path), "--config", str(missing), "config", "path")
    assert failed.returncode == 2
    assert f"config file {missing} (from --config) does not exist" in failed.stderr


def test_config_path_shows_the_file_and_effective_values(tmp_path: Path) -> None:
    path = _write(tmp_path, RUN.format(server=NOWHERE) + "[locate]\nbatch = 2\n")
    shown = _holodesk(_env(tmp_path), "config", "path")
    assert shown.returncode == 0, shown.stderr
    text = shown.stdout
    assert text.startswith(f"# holodesk reads {path} (the default)\n")
    run = text[text.index("\n[run]\n") : text.index("\n[demo]")]
    assert f'server = "{NOWHERE}"  # from the file' in run
    assert "no-estop = true  # from the file" in run
    assert "json = false  # default" in run
    # $HOLODESK_SERVER beats the file, and the listing says so.
    shown = _holodesk(_env(tmp_path, HOLODESK_SERVER="10.0.0.9:7"), "config", "path")
    assert 'server = "10.0.0.9:7"  # from $HOLODESK_SERVER (it beats the file' in shown.stdout
    # Absent default file: still a listing, and it says the file does not exist.
    shown = _holodesk(_env(tmp_path / "empty"), "config", "path")
    assert shown.returncode == 0, shown.stderr
    assert "; it does not exist)" in shown.stdout.splitlines()[0]
