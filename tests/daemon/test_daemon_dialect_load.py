"""Dialects are data: load_dialect overrides fields of a built-in from JSON or TOML."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from holodesk.daemon.actions import Click
from holodesk.daemon.dialects import DialectConfigError, get_dialect, load_dialect
from holodesk.daemon.dialects.coords import CoordinateConvention, MaxBox
from holodesk.daemon.geometry import Point, Size

TOML = """
base = "holo"
name = "holotron-guess"
coordinates = "resized_pixels"
history_images = 2

[resize]
kind = "max_box"
max_width = 960
max_height = 960

[prompts]
task = "TASK: {task}\\n"

[action_aliases]
poke = "click"
"""


def test_toml_overrides_a_builtin(tmp_path: Path) -> None:
    path = tmp_path / "holotron.toml"
    path.write_text(TOML)
    dialect = load_dialect(path)
    spec = dialect.spec
    assert spec.name == "holotron-guess"
    assert spec.coordinates is CoordinateConvention.RESIZED_PIXELS
    assert spec.resize.rule() == MaxBox(960, 960)
    assert spec.history_images == 2
    assert spec.prompts.task == "TASK: {task}\n"
    # Tables merge key by key: the built-in templates and aliases are still there.
    assert spec.prompts.system == get_dialect("holo").spec.prompts.system
    assert spec.action_aliases["click_element"] == "click"
    assert spec.action_aliases["poke"] == "click"

    # The overrides change behaviour: pixels of a 960x540 model image of a 1920x1080 frame.
    geometry = dialect.geometry(Size(1920, 1080))
    assert geometry.model_image == Size(960, 540)
    parsed = dialect.parse_step('{"action": {"action": "poke", "x": 480, "y": 270}}', geometry)
    assert parsed.actions == (Click(Point(960, 540)),)


def test_json_works_too(tmp_path: Path) -> None:
    path = tmp_path / "d.json"
    path.write_text(json.dumps({"base": "holo1.5", "name": "j", "max_tokens": 64}))
    dialect = load_dialect(path)
    assert dialect.name == "j"
    assert dialect.spec.coordinates is CoordinateConvention.RESIZED_PIXELS
    assert dialect.sampling().max_tokens == 64


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ('{"colour": "blue"}', "colour"),
        ('{"base": "nope"}', "unknown dialect 'nope'"),
        ('{"parser": "ui_tars"}', "unknown output parser 'ui_tars'"),
        ('{"coordinates": "polar"}', "coordinates"),
        ('{"prompts": {"task": "{goal}"}}', "unknown placeholder(s) ['goal']"),
        ('{"history_images": 0}', "history_images"),
        ("[1, 2]", "top level"),
        ("{not json", "not valid"),
    ],
)
def test_bad_dialect_files_are_explained(tmp_path: Path, content: str, message: str) -> None:
    path = tmp_path / "bad.json"
    path.write_text(content)
    with pytest.raises(DialectConfigError) as caught:
        load_dialect(path)
    assert message in str(caught.value)


def test_missing_file(tmp_path: Path) -> None:
    with pytest.raises(DialectConfigError, match="cannot read"):
        load_dialect(tmp_path / "absent.toml")
