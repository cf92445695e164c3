"""docs/dialects/ is current: a page per registered dialect, generated from its spec and
action space by tools/gen_dialect_docs.py (like docs/proto-reference.md)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from holodesk.daemon.dialects import dialect_names, get_dialect
from tools import gen_dialect_docs

ROOT = Path(__file__).resolve().parents[2]


def test_the_dialect_pages_are_current() -> None:
    result = subprocess.run(
        [sys.executable, "tools/gen_dialect_docs.py", "--check"],
        cwd=ROOT, capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert result.returncode == 0, result.stdout + result.stderr


@pytest.mark.parametrize("name", dialect_names())
def test_a_page_lists_every_action_with_its_worked_example(name: str) -> None:
    dialect = get_dialect(name)
    page = gen_dialect_docs.render(name)
    assert f"convention `{dialect.spec.coordinates.value}`" in page
    assert f"layout `{dialect.spec.history_layout}`" in page
    space = dialect.action_space
    if space is None:
        assert "publishes no action space" in page
        return
    for form in space.forms:
        assert f"### `{form.name}`" in page
        example = form.examples[0]
        assert space.write(form, example.args, example.thought) in page
    for gap in space.gaps:
        assert gap.instead in page
