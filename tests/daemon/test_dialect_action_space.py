"""Every built-in dialect's prompt, schema and parser describe one action space, and
that space covers the contract's (protos/holodesk/v1/action.proto) whole action space.

- property: every output its JSON schema allows (schema_strategy.py, checked
  against the jsonschema validator) parses;
- table: for every action kind and option of action.proto (read from the proto
  descriptor, so a new kind or field is a new row), a schema-valid example output
  of the dialect produces it, or the dialect names it as a gap (its docs say so);
- the prompt lists exactly the space's forms, and the daemon's key vocabulary is
  the platform's.

Parametrised over every registered dialect, so a new one is held to the same.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from google.protobuf.descriptor import FieldDescriptor
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from holodesk.daemon import convert
from holodesk.daemon.actions import Action, ActionKind, map_points
from holodesk.daemon.dialects import Dialect, DialectParseError, dialect_names, get_dialect
from holodesk.daemon.dialects.action_space import ActionSpace
from holodesk.daemon.dialects.coords import ImageGeometry
from holodesk.daemon.dialects.values import KEY_VOCABULARY, MODIFIER_NAMES
from holodesk.daemon.geometry import Size
from holodesk.proto.v1 import action_pb2
from holodesk.values import keys as value_keys
from tests.daemon import test_daemon_prompt_layout as prompt_layout
from tests.daemon.schema_strategy import from_schema, validator

FRAME = Size(1920, 1080)
DIALECTS = dialect_names()
WITH_SCHEMA = [n for n in DIALECTS if get_dialect(n).step_schema() is not None]


def space_of(dialect: Dialect) -> ActionSpace:
    space = dialect.action_space
    if space is None:
        # Not a pass: the row shows as xfailed, naming what the dialect lacks.
        pytest.xfail(
            f"dialect {dialect.name} publishes no action space yet: give its parser an "
            "action_space(spec) method (dialects/action_space.py)"
        )
    return space


# --- the contract's options, from the proto descriptor --------------------------------

# Options beyond "the field is set": click counts, a path through more than two points.
_EXTRA = {"click.count": ("click.count=2", "click.count=3")}


def contract_options() -> set[str]:
    """Every kind and option of Action: each oneof kind, each field of its message set,
    each enum value of an enum field, both signs of a signed number."""
    options: set[str] = set()
    for kind in action_pb2.Action.DESCRIPTOR.oneofs_by_name["kind"].fields:
        options.add(kind.name)
        assert kind.message_type is not None
        for f in kind.message_type.fields:
            name = f"{kind.name}.{f.name}"
            if name in _EXTRA:
                options.update(_EXTRA[name])
            elif f.type == FieldDescriptor.TYPE_ENUM:
                assert f.enum_type is not None
                options.update(f"{name}={v.name}" for v in f.enum_type.values if v.number != 0)
            elif f.type in (FieldDescriptor.TYPE_INT32, FieldDescriptor.TYPE_SINT32):
                options.update({f"{name}>0", f"{name}<0"})
            else:
                options.add(name)
    options.add("drag.path>2")
    return options


def options_of(kind: ActionKind) -> set[str]:
    """The options one contract action uses, named as contract_options names them."""
    wire = convert.action_to_pb(Action("a1", "f1", kind))
    which = wire.WhichOneof("kind")
    assert which is not None
    message = getattr(wire, which)
    options: set[str] = {which}
    for f, value in message.ListFields():
        name = f"{which}.{f.name}"
        if name in _EXTRA:
            options.add(f"{name}={value}")
        elif f.type == FieldDescriptor.TYPE_ENUM:
            values = value if f.is_repeated else [value]
            options.update(f"{name}={f.enum_type.values_by_number[v].name}" for v in values)
        elif f.type in (FieldDescriptor.TYPE_INT32, FieldDescriptor.TYPE_SINT32):
            options.add(f"{name}>0" if value > 0 else f"{name}<0")
        else:
            options.add(name)
        if name == "drag.path" and len(value) > 2:
            options.add("drag.path>2")
    return options


def geometry(dialect: Dialect) -> ImageGeometry:
    return dialect.geometry(FRAME)


def in_frame(kinds: tuple[ActionKind, ...], geo: ImageGeometry) -> tuple[ActionKind, ...]:
    return tuple(map_points(k, geo.to_frame) for k in kinds)


def examples(name: str) -> Iterator[tuple[str, str, tuple[ActionKind, ...]]]:
    """(form, the model's whole output, the contract actions it must become)."""
    dialect = get_dialect(name)
    space = space_of(dialect)
    geo = geometry(dialect)
    for form, example in space.examples():
        yield (
            form.name,
            space.write(form, example.args, example.thought),
            in_frame(example.produces, geo),
        )


# --- the table --------------------------------------------------------------------------


@pytest.mark.parametrize("name", DIALECTS)
def test_every_example_parses_to_what_it_says(name: str) -> None:
    dialect = get_dialect(name)
    schema = dialect.step_schema(geometry(dialect))
    count = 0
    valid = validator(schema) if schema is not None else None
    for form, output, expected in examples(name):
        if valid is not None:
            valid(json.loads(output))
        parsed = dialect.parse_step(output, geometry(dialect))
        assert parsed.actions == expected, (form, output)
        count += 1
    assert count >= len(space_of(dialect).forms)  # every form has a worked example


@pytest.mark.parametrize("name", DIALECTS)
def test_the_examples_reach_every_contract_option_but_the_named_gaps(name: str) -> None:
    """A middle, triple or side-button click, a press-and-hold, a precise scroll, text
    typed where the caret is...: each is one example output producing that one action."""
    space = space_of(get_dialect(name))
    universe = contract_options()
    reached: set[str] = set()
    for _, _, produced in examples(name):
        if len(produced) == 1:  # the option alone, not as part of a click-then-type
            reached |= options_of(produced[0])
    gaps = {option for gap in space.gaps for option in gap.options}
    assert gaps <= universe, f"gaps name no contract option: {sorted(gaps - universe)}"
    assert not gaps & reached, f"named as gaps yet reached: {sorted(gaps & reached)}"
    missing = universe - reached - gaps
    assert not missing, f"{name} cannot express {sorted(missing)} and does not say so"


@pytest.mark.parametrize("name", [n for n in DIALECTS if get_dialect(n).spec.parser == "holo_json"])
def test_the_holo_family_has_no_gaps(name: str) -> None:
    # Our own JSON format: nothing of the contract is out of reach.
    assert space_of(get_dialect(name)).gaps == ()


def test_the_options_read_the_contract() -> None:
    options = contract_options()
    assert {
        "click.button=MOUSE_BUTTON_MIDDLE",
        "click.button=MOUSE_BUTTON_BACK",
        "click.count=3",
        "click.modifiers=MODIFIER_META",
        "mouse_down.point",
        "mouse_up.button=MOUSE_BUTTON_FORWARD",
        "drag.duration_ms",
        "drag.path>2",
        "scroll.dy<0",
        "scroll.dx>0",
        "type_text",
        "navigate.url",
        "ask_user.question",
    } <= options


# --- the property -----------------------------------------------------------------------


def _parses(dialect: Dialect, value: dict[str, Any]) -> None:
    text = json.dumps(value)
    try:
        dialect.parse_step(text, geometry(dialect))
    except DialectParseError as exc:
        pytest.fail(f"schema-valid output refused: {exc.message} ({exc.hint})\n{text}")


@pytest.mark.parametrize("name", WITH_SCHEMA)
def test_every_schema_valid_output_parses(name: str) -> None:
    dialect = get_dialect(name)
    schema = dialect.step_schema(geometry(dialect))
    assert schema is not None
    valid = validator(schema)

    @settings(max_examples=300, deadline=None, suppress_health_check=list(HealthCheck))
    @given(from_schema(schema))
    def check(value: dict[str, Any]) -> None:
        valid(value)  # the generator stays inside the schema
        _parses(dialect, value)

    check()


@pytest.mark.parametrize("name", WITH_SCHEMA)
def test_every_form_of_the_schema_parses(name: str) -> None:
    """The same, one form at a time: rare forms get as many tries as common ones."""
    dialect = get_dialect(name)
    forms = space_of(dialect).forms
    schema = dialect.step_schema(geometry(dialect))
    assert schema is not None
    unions = [k for k, v in schema["properties"].items() if len(v.get("anyOf", ())) >= len(forms)]
    union = unions[0] if unions else None
    if union is None:
        pytest.skip("the schema has no top-level union of forms to try one by one")
    variants = schema["properties"][union]["anyOf"]
    assert len(variants) >= len(forms)

    def one(variant: dict[str, Any]) -> dict[str, Any]:
        return {**schema, "properties": {**schema["properties"], union: variant}}

    @settings(max_examples=400, deadline=None, suppress_health_check=list(HealthCheck))
    @given(st.sampled_from(variants).flatmap(lambda v: from_schema(one(v))))
    def check(value: dict[str, Any]) -> None:
        _parses(dialect, value)

    check()


# --- one description ------------------------------------------------------------------


@pytest.mark.parametrize("name", DIALECTS)
def test_the_prompt_lists_exactly_the_space(name: str) -> None:
    dialect = get_dialect(name)
    space = space_of(dialect)
    assert dialect.action_list().splitlines() == [space.signature(f) for f in space.forms]
    # What the model is actually shown, whatever builds its prompt.
    (first, *_) = prompt_layout.run(dialect, steps=1)
    shown = prompt_layout.flat(first)
    for form in space.forms:
        assert space.signature(form) in shown, form.name


def _consts(node: Any) -> set[str]:
    """Every string a schema pins with const (or a one-value enum), anywhere in it."""
    if isinstance(node, list):
        return {c for item in node for c in _consts(item)}
    if not isinstance(node, dict):
        return set()
    found = {c for value in node.values() for c in _consts(value)}
    if isinstance(node.get("const"), str):
        found.add(node["const"])
    if isinstance(node.get("enum"), list) and len(node["enum"]) == 1:
        found.add(str(node["enum"][0]))
    return found


@pytest.mark.parametrize("name", WITH_SCHEMA)
def test_the_schema_offers_exactly_the_space(name: str) -> None:
    dialect = get_dialect(name)
    space = space_of(dialect)
    schema = dialect.step_schema()
    assert schema is not None
    assert set(space.names) <= _consts(schema), "a listed form the schema does not allow"
    if dialect.spec.parser == "holo_json":  # and nothing else: one form per action name
        variants = schema["properties"]["action"]["anyOf"]
        assert {v["properties"]["action"]["const"] for v in variants} == set(space.names)


def test_the_daemon_knows_the_platforms_key_vocabulary() -> None:
    # The daemon may not import the platform layer; its one copy must agree with it.
    assert MODIFIER_NAMES == value_keys.MODIFIERS
    assert KEY_VOCABULARY == value_keys.VOCABULARY


@pytest.mark.parametrize("name", WITH_SCHEMA)
def test_structured_decoding_accepts_every_example(name: str) -> None:
    """vLLM's default guided-decoding backend compiles the schema and lets every worked
    example through (and nothing outside the key vocabulary)."""
    xgrammar = pytest.importorskip("xgrammar")
    accepts = getattr(getattr(xgrammar, "testing", None), "_is_grammar_accept_string", None)
    if accepts is None:
        pytest.skip("this xgrammar has no testing._is_grammar_accept_string")
    dialect = get_dialect(name)
    space = space_of(dialect)
    schema = dialect.step_schema(geometry(dialect))
    grammar = xgrammar.Grammar.from_json_schema(json.dumps(schema), strict_mode=True)
    for form, output, _ in examples(name):
        assert accepts(grammar, output), (form, output)
    bad_key = {"thought": "", "action": {"action": space.forms[0].name, "keys": ["nokey"]}}
    assert not accepts(grammar, json.dumps(bad_key))
