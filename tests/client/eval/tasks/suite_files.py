"""Task suites written on the spot in OSWorld's exact layout: `test_all.json` and
`examples/<domain>/<id>.json`, with tasks shaped as OSWorld's own are."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any


def write_suite(root: Path, domains: Mapping[str, Sequence[Mapping[str, Any]]]) -> Path:
    """The suite folder (OSWorld's evaluation_examples/) holding these tasks."""
    index: dict[str, list[str]] = {}
    for domain, tasks in domains.items():
        folder = root / "examples" / domain
        folder.mkdir(parents=True, exist_ok=True)
        for task in tasks:
            (folder / f"{task['id']}.json").write_text(json.dumps(task, indent=2))
            index.setdefault(domain, []).append(str(task["id"]))
    (root / "test_all.json").write_text(json.dumps(index, indent=2))
    return root


def os_task(task_id: str, **changes: Any) -> dict[str, Any]:
    """An `os` task as OSWorld writes them: set-up by execute, scored on a command's
    output (vm_command_line + exact_match against a rule)."""
    task: dict[str, Any] = {
        "id": task_id,
        "snapshot": "os",
        "instruction": "Create a file named out.txt in the home folder holding 'done'.",
        "source": "https://example.org/forum/123",
        "trajectory": "trajectories/",
        "config": [
            {
                "type": "execute",
                "parameters": {"command": ["mkdir", "-p", "/home/user/Desktop"], "shell": False},
            },
            {"type": "sleep", "parameters": {"seconds": 0.1}},
        ],
        "related_apps": ["os"],
        "evaluator": {
            "func": "exact_match",
            "result": {"type": "vm_command_line", "command": "cat ~/out.txt", "shell": True},
            "expected": {"type": "rule", "rules": {"expected": "done\n"}},
        },
        "possibility_of_env_change": "low",
    }
    task.update(changes)
    return task


def chrome_task(task_id: str, **changes: Any) -> dict[str, Any]:
    """A `chrome` task as OSWorld writes them: Chrome with a DevTools port and the socat
    that forwards it, tabs opened, scored on the active tab."""
    task: dict[str, Any] = {
        "id": task_id,
        "snapshot": "chrome",
        "instruction": "Go to the second page.",
        "source": "test",
        "config": [
            {
                "type": "launch",
                "parameters": {"command": ["google-chrome", "--remote-debugging-port=1337"]},
            },
            {
                "type": "launch",
                "parameters": {"command": ["socat", "tcp-listen:9222,fork", "tcp:localhost:1337"]},
            },
            {"type": "chrome_open_tabs", "parameters": {"urls_to_open": ["file:///tmp/x.html"]}},
            {
                "type": "activate_window",
                "parameters": {"window_name": "Chromium", "by_class": True},
            },
        ],
        "related_apps": ["chrome"],
        "evaluator": {
            "func": "is_expected_active_tab",
            "result": {"type": "active_url_from_accessTree", "goto_prefix": "https://"},
            "expected": {"type": "rule", "rules": {"type": "url", "url": "file:///tmp/y.html"}},
        },
    }
    task.update(changes)
    return task
