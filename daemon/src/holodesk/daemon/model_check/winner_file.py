"""The file `--dialect auto` writes: the winning dialect, in the daemon's own format.

It is a dialect file (registry.load_dialect): `base = "<winner>"` and nothing
else, so the daemon runs the built-in exactly, structured decoding included
(the check decoded freely only to measure the model). The check's figures go in
as TOML comments, so the file says why it holds what it holds. Start the daemon
with `--policy-opt dialect_file=PATH`. The file is written atomically and read
back through load_dialect before the check reports success, so a file that
exists is one the daemon loads.
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path

from holodesk.daemon.dialects import Dialect, load_dialect
from holodesk.daemon.model_check.scoring import Ranking

DEFAULT_PATH = "holodesk-dialect.toml"


def render(ranking: Ranking, model: str, engine: str) -> str:
    if ranking.winner is None:
        raise ValueError("no winner to write")
    lines = [
        f"# Written by `holodesk model check --dialect auto` for {model} ({engine} engine).",
        "# Load it with: holodeskd --policy-opt dialect_file=THIS_FILE",
        "# Each dialect decoded freely on the bundled screenshots:",
        "#   dialect      parsed  landed  mean miss px",
    ]
    for score in ranking.scores:
        mean = score.mean_distance_px
        miss = "-" if mean is None else f"{mean:.0f}"
        total = len(score.trials)
        lines.append(
            f"#   {score.dialect:<12} {score.parsed}/{total:<5} {score.landed}/{total:<5} {miss}"
        )
    if len(ranking.tied) > 1:
        lines.append(
            f"# Tied on answers: {', '.join(ranking.tied)}; decided by {ranking.tie_rule}."
        )
    lines.append(f"base = {json.dumps(ranking.winner.dialect)}")
    return "\n".join(lines) + "\n"


def write(ranking: Ranking, path: Path, model: str, engine: str) -> Dialect:
    """Write the winner file and return the dialect the daemon will load from it."""
    text = render(ranking, model, engine)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, temporary = tempfile.mkstemp(prefix=".dialect-", suffix=".toml", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
        loaded = load_dialect(temporary)
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
    return loaded
