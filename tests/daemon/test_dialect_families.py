"""The dialects are families: each a package with its vocabulary said once (Words), the
registry a line per family, and families from outside the tree through
HOLODESK_DIALECT_FAMILIES (read once, in a fresh process here)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from holodesk.daemon.actions import ActionKind, Done, TypeText
from holodesk.daemon.dialects import (
    Dialect,
    DialectParseError,
    dialect_names,
    get_dialect,
    registry,
)
from holodesk.daemon.dialects.action_space import (
    ActionForm,
    Word,
    alias_table,
    names,
    published_forms,
    readers,
)
from holodesk.daemon.engines.base import ToolCall
from holodesk.daemon.engines.tool_reply import reply_text
from holodesk.daemon.geometry import Size

ROOT = Path(__file__).resolve().parents[2]


def _done(*_: object) -> tuple[ActionKind, ...]:
    return (Done("ok"),)


def _form(name: str, spec: object) -> ActionForm:
    return ActionForm(name, f"{name}, as published")


def test_the_words_give_the_table_the_aliases_and_the_forms() -> None:
    words = (
        Word("finish", _done, (("finish_task", _form), _form), ("done",)),
        Word("say", _done, (), ("talk",)),  # read, never offered
    )
    assert names(words) == ("finish", "say")
    assert set(readers(words)) == {"finish", "say"}
    assert alias_table(words) == {"finish_task": "finish", "done": "finish", "talk": "say"}
    spec = get_dialect("holo").spec
    assert [f.name for f in published_forms(words, spec)] == ["finish_task", "finish"]


@pytest.mark.parametrize(
    "words",
    [
        (Word("a", _done, (), ("b",)), Word("b", _done)),
        (Word("a", _done, (("b", _form),)), Word("c", _done, (), ("b",))),
        (Word("a", _done, (), ("a",)),),
    ],
    ids=["alias-and-word", "published-and-alias", "alias-of-itself"],
)
def test_a_name_said_twice_is_refused(words: tuple[Word[object], ...]) -> None:
    with pytest.raises(ValueError, match="said twice"):
        readers(words)


def test_the_registry_is_the_families() -> None:
    specs = [spec for family in registry.FAMILIES for spec in family.specs]
    assert sorted(spec.name for spec in specs) == list(dialect_names())
    for family in registry.FAMILIES:
        for spec in family.specs:
            dialect = get_dialect(spec.name)
            assert dialect.parser is registry.PARSERS[spec.parser]
            assert type(dialect) is family.dialect_types.get(spec.parser, Dialect), spec.name
    assert {f.name for f in registry.FAMILIES} == {"holo", "uitars", "hdesktop", "nemotron"}


def _import_with(plugins: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, registry.PLUGINS_VARIABLE: plugins}
    return subprocess.run(
        [sys.executable, "-c", "import holodesk.daemon.dialects"],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip


@pytest.mark.parametrize(
    ("plugins", "said"),
    [
        ("json", "'json', which defines no FAMILY = Family(...)"),
        ("no_such_family_module", "'no_such_family_module', which does not import"),
        ("holodesk.daemon.dialects.holo", "two families give the dialect 'holotron'"),
    ],
    ids=["no-family", "no-module", "a-name-twice"],
)
def test_a_plugin_that_is_no_new_family_is_refused_by_name(plugins: str, said: str) -> None:
    run = _import_with(plugins)
    assert run.returncode != 0
    assert said in run.stderr, run.stderr[-2000:]
    assert "DialectConfigError" in run.stderr


def _computer(actions: list[object]) -> str:
    call = ToolCall("computer", json.dumps({"actions": actions}), "call_1")
    return reply_text("", [call])


@pytest.mark.parametrize(
    "action",
    [
        {"action": []},
        {"action": {"name": "type"}},
        {"action": "scroll", "coordinate": [0.5, 0.5], "scroll_parameters": {
            "scroll_direction": ["down"], "scroll_amount": 3}},
    ],
    ids=["action-list", "action-object", "direction-list"],
)  # fmt: skip
def test_a_nemotron_value_that_is_not_a_name_is_a_parse_error(action: object) -> None:
    # Before: a TypeError (unhashable) escaped the parser, which may raise nothing else.
    dialect = get_dialect("nemotron-tools")
    with pytest.raises(DialectParseError) as caught:
        dialect.parse_step(_computer([action]), dialect.geometry(Size(1920, 1080)))
    assert caught.value.hint


def test_a_nemotron_action_that_is_a_name_still_reads() -> None:
    dialect = get_dialect("nemotron-tools")
    step = dialect.parse_step(
        _computer([{"action": "type", "text": "hi"}]), dialect.geometry(Size(1920, 1080))
    )
    assert step.actions == (TypeText("hi"),)
