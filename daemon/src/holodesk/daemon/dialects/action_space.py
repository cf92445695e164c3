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
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, Protocol, runtime_checkable

from holodesk.daemon.actions import ActionKind

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
