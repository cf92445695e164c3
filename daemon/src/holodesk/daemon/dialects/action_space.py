"""A dialect's action space as data: the one description its prompt's action list,
its JSON schema (where it has one), its parser's hints and its published docs
(docs/dialects/) are all drawn from.

Why data: three hand-kept copies drift. Before this, the Holo schema allowed a
fraction of what its parser read (no button, count or modifiers on clicks, no
mouse down/up, no scroll amount or point, typing that always clicked first), so
a model held to the schema by structured decoding could not ask for most of the
contract. Now each verb a model may write is one `ActionForm`: its fields, what
it means, and worked examples giving the model's output and the contract
actions it becomes. Tests parse every example and check that the examples
together reach every kind and option of protos/holodesk/v1/action.proto, except
those a `Gap` names (a model family with no word for them, and what to do
instead).

A parser publishes its space by having an `action_space(spec)` method (see
`action_space_of`); the description is format-neutral, each dialect module
supplies how one of its answers is written (`ActionSpace.write`) and how a form
is listed in its prompt (`ActionSpace.signature`).

A family says its vocabulary once, as a tuple of `Word`s: each name its parser
reads, the reader it runs, the forms published for it and the other names models
write for it. The parser's table (`readers`), the dialect's alias table
(`alias_table`) and the published forms (`published_forms`), hence the prompt's
action list, the schema and the docs, are all drawn from that one tuple.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Generic, Literal, Protocol, TypeVar, runtime_checkable

from holodesk.daemon.actions import ActionKind, KeyDown, KeyUp

if TYPE_CHECKING:
    from holodesk.daemon.dialects.spec import DialectSpec

# What a field holds, format-neutral:
#   point: a position in the model's coordinate convention (Holo: flat x and y);
#   path: a list of such points; text: a string; integer / number: bounded numbers;
#   choice: one of `choices`; key: one key name; keys: a list of key names;
#   modifiers: a list of modifier keys held during the action.
FieldKind = Literal[
    "point", "path", "text", "integer", "number", "choice", "key", "keys", "modifiers"
]


@dataclass(frozen=True)
class ActionField:
    """One argument of an action form."""

    name: str
    kind: FieldKind
    description: str
    required: bool = True
    choices: tuple[str, ...] = ()
    minimum: float | None = None
    maximum: float | None = None
    # Lists: fewest and most entries; text: fewest characters.
    min_items: int = 0
    max_items: int | None = None
    # Text: a regular expression the whole value matches (schema "pattern").
    pattern: str = ""
    # What an absent optional field means, in words (docs).
    default: str = ""
    # How the prompt's action list shows the value (free-text formats).
    placeholder: str = ""


@dataclass(frozen=True)
class Example:
    """One output of a form and what it becomes.

    `args`: the form's fields as the model writes them, coordinates in the model's
    convention. `produces`: the contract actions, their points in the same model
    coordinates (tests and docs map them to frame pixels with the step's geometry).
    """

    args: Mapping[str, Any]
    produces: tuple[ActionKind, ...]
    thought: str = ""


@dataclass(frozen=True)
class ActionForm:
    """One verb a model may write: its name in the model's vocabulary, its fields, and
    examples (the first is the docs' worked example; more reach further options)."""

    name: str
    summary: str
    fields: tuple[ActionField, ...] = ()
    examples: tuple[Example, ...] = ()

    def get(self, name: str) -> ActionField | None:
        return next((f for f in self.fields if f.name == name), None)


@dataclass(frozen=True)
class Gap:
    """Contract options (as tests name them: "click.modifiers=MODIFIER_CTRL") this
    family has no word for, and how a model reaches the same effect instead."""

    options: tuple[str, ...]
    instead: str


# (form, args, thought) -> a complete model answer in the dialect's own syntax.
Writer = Callable[["ActionForm", Mapping[str, Any], str], str]
# form -> its line in the prompt's action list.
Signature = Callable[["ActionForm"], str]


def json_answer(note: str | None, call: str, name_key: str) -> Writer:
    """How the JSON families (holo, hdesktop) write a whole answer: one object
    {"note": note, "thought": ..., call: {name_key: the form's name, **its fields}}."""

    def write(form: ActionForm, args: Mapping[str, Any], thought: str) -> str:
        step = {
            "note": note,
            "thought": thought or f"Next: {form.name}.",
            call: {name_key: form.name, **args},
        }
        return json.dumps(step, ensure_ascii=False)

    return write


def call_signature(form: ActionForm, optional: Callable[[str, ActionField], str]) -> str:
    """A form's line as the JSON families list it: `- name(field, ...): summary`, a
    point as its x and y, an optional field as `optional(its name, it)` writes it."""
    shown: list[str] = []
    for f in form.fields:
        names = ["x", "y"] if f.kind == "point" else [f.name]
        shown.extend(n if f.required else optional(n, f) for n in names)
    return f"- {form.name}({', '.join(shown)}): {form.summary}"


@dataclass(frozen=True)
class ActionSpace:
    forms: tuple[ActionForm, ...]
    write: Writer
    signature: Signature
    gaps: tuple[Gap, ...] = ()
    # The answer's shape around the action, in words (docs).
    answer_format: str = ""
    notes: tuple[str, ...] = ()

    def form(self, name: str) -> ActionForm:
        for form in self.forms:
            if form.name == name:
                return form
        raise KeyError(name)

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(form.name for form in self.forms)

    def action_list(self) -> str:
        """The prompt's action list: one line per form, in the dialect's syntax."""
        return "\n".join(self.signature(form) for form in self.forms)

    def examples(self) -> list[tuple[ActionForm, Example]]:
        return [(form, example) for form in self.forms for example in form.examples]


@runtime_checkable
class DescribesActions(Protocol):
    """A parser that publishes its action space (every built-in one does)."""

    def action_space(self, spec: DialectSpec) -> ActionSpace: ...


def action_space_of(parser: object, spec: DialectSpec) -> ActionSpace | None:
    """The parser's published action space; None for one that publishes none (a
    third-party parser: its dialect's docs then say so)."""
    if isinstance(parser, DescribesActions):
        return parser.action_space(spec)
    return None


# (the name the model writes, the dialect's spec) -> the form published under that name;
# the spec gives the bounds some forms show (wait's longest wait, scroll's notches).
FormMaker = Callable[[str, "DialectSpec"], ActionForm]
Reader = TypeVar("Reader")


# A published form: its maker, under the word's own name, or (another name, its maker).
Published = FormMaker | tuple[str, FormMaker]


@dataclass(frozen=True)
class Word(Generic[Reader]):
    """One word of a family's vocabulary, said once.

    `name`: the key of the parser's table, what aliases resolve to (a dialect file's
    `action_aliases` may name it). `read`: what the parser runs for it, in the family's
    own signature. `forms`: the forms the prompt, schema and docs publish for it, in
    order: a maker alone is published under `name`, a (name, maker) pair under another
    name the model writes, which reads as this word. `aliases`: other names models
    write for it, read leniently and never offered."""

    name: str
    read: Reader
    forms: tuple[Published, ...] = ()
    aliases: tuple[str, ...] = ()

    def published(self) -> tuple[tuple[str, FormMaker], ...]:
        """(the name the model writes, the form's maker), in order."""
        return tuple(f if isinstance(f, tuple) else (self.name, f) for f in self.forms)


def readers(words: Sequence[Word[Reader]]) -> Mapping[str, Reader]:
    """The parser's table: each word's name -> its reader."""
    _check_once(words)
    return MappingProxyType({w.name: w.read for w in words})


def names(words: Sequence[Word[Reader]]) -> tuple[str, ...]:
    """The words' names, in order."""
    return tuple(w.name for w in words)


def alias_table(words: Sequence[Word[Reader]]) -> dict[str, str]:
    """Every other name a model may write -> the word it reads as (DialectSpec's
    `action_aliases`): the published names that differ from their word's, and the
    aliases."""
    _check_once(words)
    return {
        other: w.name
        for w in words
        for other in (*(n for n, _ in w.published()), *w.aliases)
        if other != w.name
    }


def published_forms(words: Sequence[Word[Reader]], spec: DialectSpec) -> tuple[ActionForm, ...]:
    """The forms, in the words' order: the prompt's action list, the schema, the docs."""
    return tuple(make(name, spec) for w in words for name, make in w.published())


def _check_once(words: Sequence[Word[Reader]]) -> None:
    """Each name means one word: a name said twice would read as whichever came last."""
    seen: set[str] = set()
    for w in words:
        others = (n for n, _ in w.published() if n != w.name)
        for name in (w.name, *others, *w.aliases):
            if name in seen:
                raise ValueError(f"the name {name!r} is said twice (word {w.name!r})")
            seen.add(name)


def key_form(kind: type[KeyDown] | type[KeyUp], summary: str, key: ActionField) -> FormMaker:
    """A form that presses and holds (KeyDown) or releases (KeyUp) one key: every
    family has the pair, under its own names and words, with the same example."""

    def make(name: str, spec: DialectSpec) -> ActionForm:
        return ActionForm(name, summary, (key,), (Example({key.name: "shift"}, (kind("shift"),)),))

    return make
