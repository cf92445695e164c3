"""The dialects `--dialect auto` tries, each made unconstrained.

Candidates are every dialect the registry knows (`dialect_names()`), so a dialect
registered later is tried without a change here. "Unconstrained" means the model
decodes freely: the dialect's `structured_output` is switched off, so no engine
receives its JSON schema and the check measures what the model writes on its own.
Everything else (prompt, tools the dialect declares through the engine API,
parser, coordinates) is the dialect's own: the prompt still shows the format.
"""

from __future__ import annotations

from holodesk.daemon.dialects import DEFAULT_DIALECT, Dialect, dialect_names, get_dialect


def unconstrained(dialect: Dialect) -> Dialect:
    """The same dialect, of the same class, with structured decoding off."""
    if not dialect.spec.structured_output:
        return dialect
    spec = dialect.spec.model_copy(update={"structured_output": False})
    return type(dialect)(spec, dialect.parser)


def candidate_dialects(names: tuple[str, ...] | None = None) -> tuple[Dialect, ...]:
    """The registry's dialects (or `names`), the daemon's default first, then by name.

    The order is the last tie rule (see scoring.py), so it is fixed here."""
    chosen = dialect_names() if names is None else names
    ordered = sorted(chosen, key=lambda name: (name != DEFAULT_DIALECT, name))
    return tuple(unconstrained(get_dialect(name)) for name in ordered)
