"""The contract's limits (holodesk.proto.limits) cover every string and repeated
field, and each field's .proto comment states its limit as the table has it."""

from __future__ import annotations

from google.protobuf import descriptor_pb2

from holodesk.daemon import generation
from holodesk.daemon.session import frame_deltas
from holodesk.proto import limits
from tools.gen_proto_docs import descriptor_set

_MESSAGE, _FIELD = 4, 2  # FileDescriptorProto.message_type, DescriptorProto.field
_Field = descriptor_pb2.FieldDescriptorProto


def _fields() -> dict[str, tuple[_Field, str]]:
    """Every field of holodesk.v1 by full name, with its leading comment."""
    found: dict[str, tuple[_Field, str]] = {}
    for file in descriptor_set().file:
        if file.package != "holodesk.v1":
            continue
        comments = {
            tuple(loc.path): loc.leading_comments.strip() for loc in file.source_code_info.location
        }
        for m_index, message in enumerate(file.message_type):
            for f_index, field in enumerate(message.field):
                comment = comments.get((_MESSAGE, m_index, _FIELD, f_index), "")
                found[f"holodesk.v1.{message.name}.{field.name}"] = (field, comment)
    return found


def test_every_string_bytes_and_repeated_field_has_a_limit() -> None:
    fields = _fields()
    bounded_kinds = (_Field.TYPE_STRING, _Field.TYPE_BYTES)
    unbounded = [
        name
        for name, (field, _) in fields.items()
        if (field.label == _Field.LABEL_REPEATED or field.type in bounded_kinds)
        and name not in limits.FIELD_LIMITS
    ]
    assert not unbounded, f"give these fields a limit in holodesk.proto.limits: {unbounded}"
    stale = sorted(set(limits.FIELD_LIMITS) - set(fields))
    assert not stale, f"limits for fields the contract no longer has: {stale}"


def test_each_fields_comment_ends_with_its_limit() -> None:
    wrong = {
        name: limits.FIELD_LIMITS[name].sentence()
        for name, (_, comment) in _fields().items()
        if name in limits.FIELD_LIMITS
        and not comment.endswith(limits.FIELD_LIMITS[name].sentence())
    }
    assert not wrong, f"end these fields' .proto comments with: {wrong}"


def test_the_daemons_own_bounds_are_the_contracts() -> None:
    assert generation.MAX_CANDIDATES == limits.MAX_CANDIDATES
    assert generation.MAX_SAMPLED_TOKENS == limits.MAX_SAMPLED_TOKENS
    # frame_deltas refuses patches past its own count too (issue 15 item 5): the same.
    assert frame_deltas.MAX_PATCHES == limits.MAX_FRAME_PATCHES


def test_a_sentence_per_kind_of_limit() -> None:
    assert limits.FieldLimit(length=5).sentence() == "Limit: 5 characters."
    assert limits.FieldLimit(count=3).sentence() == "Limit: 3 entries."
    both = limits.FieldLimit(count=3, length=5)
    assert both.sentence() == "Limit: 3 entries of 5 characters."
    assert limits.FieldLimit(setting="holodeskd --x").sentence() == "Limit: holodeskd --x."
    assert limits.clip("abcdef", 4) == "abc…"
    assert limits.clip("abc", 4) == "abc"
