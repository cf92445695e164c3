"""Results in OSWorld's layout, written as each run finishes, and read back to resume.

    <out>/<action_space>/<observation>/<model>/<domain>/<id>/
        traj.jsonl                 one line per step
        step_<n>_<timestamp>.png   the screen step n was decided on
        result.txt                 the score (written last: its presence means done)
        run.json                   holodesk's record of the run (outcome, reason,
                                   steps, seconds, tokens, the evaluator's note)

With k > 1 repeats, each repeat has that content in `<id>/run_<r>/` (r = 0..k-1),
and `<id>/result.txt` holds the mean score over the k repeats once all are done,
so OSWorld's show_result.py reads the mean success of every task.

Resuming: a folder with result.txt is done and skipped; any other folder of a run
is removed and the run starts again from nothing."""

from __future__ import annotations

import io
import json
import os
import shutil
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from PIL import Image

from holodesk.client.eval.tasks.model import Task
from holodesk.client.render import describe
from holodesk.client.rollouts.trajectory import Trajectory
from holodesk.values.encoding import ImageEncoding

RESULT = "result.txt"
TRAJECTORY = "traj.jsonl"
RUN = "run.json"


@dataclass(frozen=True)
class Layout:
    """Where a suite's results go: OSWorld's `<out>/<action_space>/<observation>/<model>`."""

    out: Path
    model: str
    action_space: str = "holodesk"
    observation: str = "screenshot"
    k: int = 1

    @property
    def base(self) -> Path:
        return self.out / self.action_space / self.observation / _safe(self.model)

    def task_dir(self, task: Task) -> Path:
        return self.base / _safe(task.domain) / _safe(task.id)

    def run_dir(self, task: Task, repeat: int) -> Path:
        folder = self.task_dir(task)
        return folder if self.k == 1 else folder / f"run_{repeat}"

    def done(self, task: Task, repeat: int) -> bool:
        return (self.run_dir(task, repeat) / RESULT).is_file()

    def todo(self, task: Task) -> list[int]:
        """The repeats of `task` still to run (their unfinished folders removed)."""
        if (self.task_dir(task) / RESULT).is_file() and self.k > 1:
            return []
        left = [r for r in range(self.k) if not self.done(task, r)]
        for repeat in left:
            folder = self.run_dir(task, repeat)
            if folder.exists():
                shutil.rmtree(folder)
        return left

    def finish_task(self, task: Task) -> float | None:
        """With k > 1, once every repeat has its result: the task's mean, written."""
        if self.k == 1:
            return read_score(self.task_dir(task) / RESULT)
        scores = [read_score(self.run_dir(task, r) / RESULT) for r in range(self.k)]
        if any(s is None for s in scores):
            return None
        mean = sum(s for s in scores if s is not None) / self.k
        _write_atomic(self.task_dir(task) / RESULT, f"{mean}\n")
        return mean


def read_score(path: Path) -> float | None:
    try:
        return float(path.read_text().strip())
    except (OSError, ValueError):
        return None


def write_run(
    folder: Path,
    trajectory: Trajectory,
    score: float,
    note: str,
    extra: Mapping[str, Any],
) -> None:
    """One finished run: screenshots, traj.jsonl, run.json, then result.txt."""
    folder.mkdir(parents=True, exist_ok=True)
    lines: list[str] = []
    prompt_tokens = completion_tokens = 0
    for step in trajectory.steps:
        stamp = step.frame.captured_at.strftime("%Y%m%d@%H%M%S%f") if step.frame else ""
        shot = f"step_{step.step}_{stamp}.png" if step.frame is not None else ""
        if step.frame is not None and step.frame.data:
            (folder / shot).write_bytes(_png(step.frame.data, step.frame.encoding))
        else:
            shot = ""
        generation = step.generation
        if generation is not None:
            prompt_tokens += generation.prompt_tokens
            chosen = generation.chosen_completion
            completion_tokens += len(chosen.token_ids) if chosen is not None else 0
        described = [describe(a) for a in step.actions]
        last = step is trajectory.steps[-1]
        lines.append(
            json.dumps(
                {
                    "step_num": step.step,
                    "action_timestamp": stamp,
                    "action": "; ".join(described) if described else _ending(trajectory, last),
                    "actions": described,
                    "results": [r.status.value for r in step.results],
                    "response": step.thought,
                    "reward": 0,
                    "done": last,
                    "info": {},
                    "screenshot_file": shot,
                    "time": step.frame.captured_at.isoformat() if step.frame else "",
                },
                ensure_ascii=False,
            )
        )
    (folder / TRAJECTORY).write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    run = {
        "outcome": trajectory.outcome.value,
        "reason": trajectory.reason,
        "answer": trajectory.answer,
        "steps": len(trajectory.steps),
        "seconds": round(trajectory.seconds, 3),
        "prompt_tokens": prompt_tokens,
        "completion_tokens": completion_tokens,
        "score": score,
        "note": note,
        "session_id": trajectory.session_id,
        **extra,
    }
    (folder / RUN).write_text(json.dumps(run, indent=2, ensure_ascii=False) + "\n")
    _write_atomic(folder / RESULT, f"{score}\n")


def read_run(folder: Path) -> dict[str, Any]:
    """run.json of a finished run ({} when it has none: a folder of OSWorld's own)."""
    try:
        loaded = json.loads((folder / RUN).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return loaded if isinstance(loaded, dict) else {}


def _ending(trajectory: Trajectory, last: bool) -> str:
    """OSWorld's special actions for a step that ran nothing: DONE or FAIL."""
    if not last:
        return ""
    return {"succeeded": "DONE", "failed": "FAIL"}.get(trajectory.outcome.value, "")


def _png(data: bytes, encoding: ImageEncoding) -> bytes:
    if encoding is ImageEncoding.PNG:
        return data
    out = io.BytesIO()
    with Image.open(io.BytesIO(data)) as image:
        image.save(out, "PNG")
    return out.getvalue()


def _write_atomic(path: Path, text: str) -> None:
    temporary = path.with_name(f".{path.name}.tmp")
    temporary.write_text(text)
    os.replace(temporary, path)


def _safe(name: str) -> str:
    """A path component: no separators, no leading dots."""
    cleaned = name.replace("/", "_").replace("\\", "_").strip()
    return cleaned.lstrip(".") or "_"
