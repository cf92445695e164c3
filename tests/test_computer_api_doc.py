"""docs/computer-api.md against the contract: its table of calls names each call's
request fields and what comes back by the names the proto gives them.

The doc once listed a desktop's "name" where DesktopInfo says `desktop_id`, and an
agent author copying it wrote code that does not compile; the generated
descriptors are the truth, read here rather than the .proto text.
"""

from __future__ import annotations

import re
from pathlib import Path

from google.protobuf.descriptor import Descriptor, FieldDescriptor

from holodesk.proto.v1 import computer_pb2

DOC = Path(__file__).resolve().parents[1] / "docs" / "computer-api.md"
SERVICE = computer_pb2.DESCRIPTOR.services_by_name["ComputerService"]
# A table row: | `Call(arg, arg)` | what it does |
ROW = re.compile(r"^\| `(\w+)(?:\(([^)]*)\))?` \| (.*) \|$")
IDENTIFIER = re.compile(r"`([a-z][a-z0-9_]*)`")


def _fields(message: Descriptor, depth: int = 3) -> set[str]:
    """Every field name of `message` and of the messages inside it (a few levels)."""
    names: set[str] = set()
    for field in message.fields:
        names.add(field.name)
        inner = field.message_type
        if depth and field.type == FieldDescriptor.TYPE_MESSAGE and inner is not None:
            names |= _fields(inner, depth - 1)
    return names


def _rows() -> dict[str, tuple[list[str], str]]:
    rows: dict[str, tuple[list[str], str]] = {}
    for line in DOC.read_text(encoding="utf-8").splitlines():
        match = ROW.match(line)
        if match and match.group(1) in SERVICE.methods_by_name:
            args = [a.strip() for a in (match.group(2) or "").split(",") if a.strip()]
            rows[match.group(1)] = (args, match.group(3))
    return rows


def test_every_call_is_in_the_table() -> None:
    assert set(_rows()) == {method.name for method in SERVICE.methods}


def test_each_call_names_its_request_and_response_fields_as_the_proto_does() -> None:
    for name, (args, described) in _rows().items():
        method = SERVICE.methods_by_name[name]
        request = {field.name for field in method.input_type.fields}
        assert set(args) <= request, (name, set(args) - request)
        known = request | _fields(method.output_type)
        named = set(IDENTIFIER.findall(described))
        assert named <= known, (name, named - known)


def test_list_desktops_names_every_field_of_a_desktop() -> None:
    _, described = _rows()["ListDesktops"]
    desktop = {field.name for field in computer_pb2.DesktopInfo.DESCRIPTOR.fields}
    named = set(IDENTIFIER.findall(described))
    assert desktop <= named, f"docs/computer-api.md's ListDesktops row lacks {desktop - named}"
