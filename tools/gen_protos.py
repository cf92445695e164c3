"""Generate holodesk.proto.v1 (Python code and .pyi stubs) from protos/holodesk/v1/*.proto.

    uv run python tools/gen_protos.py          # regenerate in place
    uv run python tools/gen_protos.py --check  # exit 1 when the committed code is stale

The .proto files keep their canonical path (holodesk/v1/...), which is what other
languages and server reflection see. Only the Python import path differs: the code
lives in the holodesk.proto.v1 package, so generated imports are rewritten here.
"""

from __future__ import annotations

import argparse
import filecmp
import re
import shutil
import sys
import tempfile
from pathlib import Path

from grpc_tools import protoc  # type: ignore[import-untyped]

ROOT = Path(__file__).resolve().parent.parent
PROTO_ROOT = ROOT / "protos"
PROTO_DIR = PROTO_ROOT / "holodesk" / "v1"
OUT_DIR = ROOT / "protos" / "src" / "holodesk" / "proto" / "v1"

_IMPORT_REWRITES = (
    (re.compile(r"^from holodesk\.v1 import ", re.M), "from holodesk.proto.v1 import "),
    (re.compile(r"^import holodesk\.v1\.", re.M), "import holodesk.proto.v1."),
    (re.compile(r"\bholodesk\.v1\.(\w+_pb2)\b"), r"holodesk.proto.v1.\1"),
)
_INIT = '"""Generated from protos/holodesk/v1; do not edit. See tools/gen_protos.py."""\n'


def generate(out_dir: Path) -> None:
    """Run protoc (from grpcio-tools, pinned in uv.lock) into out_dir."""
    protos = sorted(str(p.relative_to(PROTO_ROOT)) for p in PROTO_DIR.glob("*.proto"))
    with tempfile.TemporaryDirectory() as raw:
        well_known = Path(protoc.__file__).parent / "_proto"
        args = [
            "protoc",
            f"-I{PROTO_ROOT}",
            f"-I{well_known}",
            f"--python_out={raw}",
            f"--grpc_python_out={raw}",
            f"--mypy_out={raw}",
            f"--mypy_grpc_out={raw}",
            *protos,
        ]
        if protoc.main(args) != 0:
            raise SystemExit("protoc failed; see the messages above")
        out_dir.mkdir(parents=True, exist_ok=True)
        for source in sorted((Path(raw) / "holodesk" / "v1").iterdir()):
            text = source.read_text()
            for pattern, replacement in _IMPORT_REWRITES:
                text = pattern.sub(replacement, text)
            (out_dir / source.name).write_text(text)
        (out_dir / "__init__.py").write_text(_INIT)
        (out_dir / "py.typed").write_text("")


def is_current() -> bool:
    with tempfile.TemporaryDirectory() as fresh:
        generate(Path(fresh))
        fresh_names = sorted(p.name for p in Path(fresh).iterdir())
        current_names = sorted(p.name for p in OUT_DIR.iterdir() if p.name != "__pycache__")
        if fresh_names != current_names:
            return False
        _, mismatch, errors = filecmp.cmpfiles(fresh, OUT_DIR, fresh_names, shallow=False)
        return not mismatch and not errors


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="only check that the code is current")
    args = parser.parse_args()
    if args.check:
        if is_current():
            print("holodesk.proto.v1 is current")
            return 0
        print(
            "holodesk.proto.v1 is stale: run `uv run python tools/gen_protos.py`", file=sys.stderr
        )
        return 1
    if OUT_DIR.exists():
        shutil.rmtree(OUT_DIR)
    generate(OUT_DIR)
    print(f"wrote {OUT_DIR.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
