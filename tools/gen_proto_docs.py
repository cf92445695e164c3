"""Write docs/proto-reference.md from protos/holodesk/v1/*.proto and their comments.

    uv run python tools/gen_proto_docs.py          # regenerate in place
    uv run python tools/gen_proto_docs.py --check  # exit 1 when the page is stale

protoc (from grpcio-tools) parses the files with source info, so every service,
method, message, field, enum and value appears with the comment written above it.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

from google.protobuf import descriptor_pb2
from grpc_tools import protoc  # type: ignore[import-untyped]

ROOT = Path(__file__).resolve().parent.parent
PROTO_ROOT = ROOT / "protos"
OUT = ROOT / "docs" / "proto-reference.md"

# FileDescriptorProto field numbers that source-info paths use.
_MESSAGE, _ENUM, _SERVICE = 4, 5, 6
_FIELD, _NESTED_MESSAGE, _NESTED_ENUM = 2, 3, 4
_ENUM_VALUE, _METHOD = 2, 2

_SCALARS = {
    descriptor_pb2.FieldDescriptorProto.TYPE_DOUBLE: "double",
    descriptor_pb2.FieldDescriptorProto.TYPE_FLOAT: "float",
    descriptor_pb2.FieldDescriptorProto.TYPE_INT64: "int64",
    descriptor_pb2.FieldDescriptorProto.TYPE_UINT64: "uint64",
    descriptor_pb2.FieldDescriptorProto.TYPE_INT32: "int32",
    descriptor_pb2.FieldDescriptorProto.TYPE_UINT32: "uint32",
    descriptor_pb2.FieldDescriptorProto.TYPE_BOOL: "bool",
    descriptor_pb2.FieldDescriptorProto.TYPE_STRING: "string",
    descriptor_pb2.FieldDescriptorProto.TYPE_BYTES: "bytes",
}


def descriptor_set() -> descriptor_pb2.FileDescriptorSet:
    protos = sorted(
        str(p.relative_to(PROTO_ROOT)) for p in (PROTO_ROOT / "holodesk").rglob("*.proto")
    )
    well_known = Path(protoc.__file__).parent / "_proto"
    with tempfile.TemporaryDirectory() as out:
        target = Path(out) / "set.pb"
        args = [
            "protoc",
            f"-I{PROTO_ROOT}",
            f"-I{well_known}",
            "--include_source_info",
            f"--descriptor_set_out={target}",
            *protos,
        ]
        if protoc.main(args) != 0:
            raise SystemExit("protoc failed; see the messages above")
        return descriptor_pb2.FileDescriptorSet.FromString(target.read_bytes())


class _Comments:
    def __init__(self, file: descriptor_pb2.FileDescriptorProto) -> None:
        self._by_path = {
            tuple(loc.path): loc.leading_comments.strip()
            for loc in file.source_code_info.location
            if loc.leading_comments.strip()
        }

    def __call__(self, *path: int) -> str:
        text = self._by_path.get(path, "")
        return " ".join(line.strip() for line in text.splitlines())


def _type_name(field: descriptor_pb2.FieldDescriptorProto) -> str:
    name = _SCALARS.get(field.type) or field.type_name.removeprefix(".").removeprefix(
        "holodesk.v1."
    )
    if field.label == descriptor_pb2.FieldDescriptorProto.LABEL_REPEATED:
        return f"repeated {name}"
    if field.proto3_optional:
        return f"optional {name}"
    return name


def _cell(text: str) -> str:
    return text.replace("|", "\\|")


def _message(
    out: list[str],
    message: descriptor_pb2.DescriptorProto,
    comments: _Comments,
    path: tuple[int, ...],
    prefix: str,
) -> None:
    name = f"{prefix}{message.name}"
    out += [f"### {name}", ""]
    if comments(*path):
        out += [comments(*path), ""]
    real_oneofs = {
        i: o.name for i, o in enumerate(message.oneof_decl) if not o.name.startswith("_")
    }
    if message.field:
        out += ["| field | number | type | description |", "|---|---|---|---|"]
        for index, field in enumerate(message.field):
            note = comments(*path, _FIELD, index)
            if field.HasField("oneof_index") and field.oneof_index in real_oneofs:
                note = f"(oneof `{real_oneofs[field.oneof_index]}`) {note}".strip()
            out.append(
                f"| `{field.name}` | {field.number} | `{_type_name(field)}` | {_cell(note)} |"
            )
        out.append("")
    for index, nested in enumerate(message.nested_type):
        if not nested.options.map_entry:
            _message(out, nested, comments, (*path, _NESTED_MESSAGE, index), f"{name}.")
    for index, enum in enumerate(message.enum_type):
        _enum(out, enum, comments, (*path, _NESTED_ENUM, index), f"{name}.")


def _enum(
    out: list[str],
    enum: descriptor_pb2.EnumDescriptorProto,
    comments: _Comments,
    path: tuple[int, ...],
    prefix: str,
) -> None:
    out += [f"### {prefix}{enum.name} (enum)", ""]
    if comments(*path):
        out += [comments(*path), ""]
    out += ["| value | number | description |", "|---|---|---|"]
    for index, value in enumerate(enum.value):
        out.append(
            f"| `{value.name}` | {value.number} | {_cell(comments(*path, _ENUM_VALUE, index))} |"
        )
    out.append("")


def render(files: descriptor_pb2.FileDescriptorSet) -> str:
    ours = [f for f in files.file if f.name.startswith("holodesk/")]
    out = [
        "# holodesk.v1 reference",
        "",
        "Generated from `protos/holodesk/v1/*.proto` by `uv run python tools/gen_proto_docs.py`;",
        "do not edit. Any language's gRPC tooling reads the same files; a running daemon also",
        "serves them through server reflection (see [running.md](running.md#other-languages)).",
        "",
    ]
    for file in ours:
        comments = _Comments(file)
        out += [f"## {file.name}", ""]
        for index, service in enumerate(file.service):
            out += [f"### service {service.name}", ""]
            if comments(_SERVICE, index):
                out += [comments(_SERVICE, index), ""]
            out += ["| method | request | response | description |", "|---|---|---|---|"]
            for m_index, method in enumerate(service.method):
                request = ("stream " if method.client_streaming else "") + method.input_type.split(
                    "."
                )[-1]
                response = (
                    "stream " if method.server_streaming else ""
                ) + method.output_type.split(".")[-1]
                note = comments(_SERVICE, index, _METHOD, m_index)
                out.append(f"| `{method.name}` | `{request}` | `{response}` | {_cell(note)} |")
            out.append("")
        for index, message in enumerate(file.message_type):
            _message(out, message, comments, (_MESSAGE, index), "")
        for index, enum in enumerate(file.enum_type):
            _enum(out, enum, comments, (_ENUM, index), "")
    return "\n".join(out).rstrip() + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="only check the page is current")
    args = parser.parse_args()
    text = render(descriptor_set())
    if args.check:
        if OUT.exists() and OUT.read_text() == text:
            return 0
        print(
            f"{OUT.relative_to(ROOT)} is stale: run `uv run python tools/gen_proto_docs.py`",
            file=sys.stderr,
        )
        return 1
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
