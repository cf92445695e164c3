"""Repository-wide checks: the contract is current and lint-clean, the code is typed and tidy."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(args, cwd=ROOT, capture_output=True, text=True, timeout=300, check=False)


def test_generated_protobuf_code_is_current() -> None:
    result = _run(sys.executable, "tools/gen_protos.py", "--check")
    assert result.returncode == 0, result.stdout + result.stderr


def test_proto_reference_page_is_current() -> None:
    result = _run(sys.executable, "tools/gen_proto_docs.py", "--check")
    assert result.returncode == 0, result.stdout + result.stderr


def test_protos_pass_buf_lint() -> None:
    buf = shutil.which("buf", path=str(Path(sys.executable).parent))
    assert buf, "buf-bin is a dev dependency; run `uv sync`"
    result = _run(buf, "lint", "protos")
    assert result.returncode == 0, result.stdout + result.stderr


def test_stdlib_platform_is_not_shadowed_from_repo_root() -> None:
    # platform/ is a folder at the root; `import platform` run there must still be the stdlib's.
    result = _run(sys.executable, "-c", "import platform; print(platform.system())")
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() in {"Linux", "Darwin", "Windows"}


def test_no_namespace_package_init() -> None:
    # holodesk is a namespace shared by four distributions: none may own holodesk/__init__.py.
    inits = sorted(ROOT.glob("*/src/holodesk/__init__.py"))
    assert not inits, f"remove {inits}: holodesk is a namespace package"


def test_daemon_never_imports_platform_and_platform_never_imports_grpc() -> None:
    offenders: list[str] = []
    # Recordings are plain files: the data package knows no gRPC, no OS, no daemon or client.
    for path in (ROOT / "data" / "src").rglob("*.py"):
        text = path.read_text()
        if any(
            name in text
            for name in (
                "import grpc",
                "holodesk.proto",
                "holodesk.platform",
                "holodesk.daemon",
                "holodesk.client",
            )
        ):
            offenders.append(str(path.relative_to(ROOT)))
    for path in (ROOT / "daemon" / "src").rglob("*.py"):
        if "holodesk.platform" in path.read_text():
            offenders.append(str(path.relative_to(ROOT)))
    for path in (ROOT / "platform" / "src").rglob("*.py"):
        text = path.read_text()
        if "import grpc" in text or "holodesk.proto" in text:
            offenders.append(str(path.relative_to(ROOT)))
    assert not offenders, f"import direction broken in {offenders}"


def test_dialects_never_import_policies() -> None:
    # Dialects sit below policies (a policy runs a dialect): what they are handed to
    # decide a step, StepContext, lives on the daemon's floor (holodesk.daemon.steps).
    offenders = [
        str(path.relative_to(ROOT))
        for path in (ROOT / "daemon" / "src" / "holodesk" / "daemon" / "dialects").rglob("*.py")
        if "holodesk.daemon.policies" in path.read_text()
    ]
    assert not offenders, f"dialects must not import holodesk.daemon.policies: {offenders}"


# An import of holodesk that is not of holodesk.values itself.
_OTHER_HOLODESK_IMPORT = re.compile(r"^\s*(from|import)\s+holodesk(?!\.values\b)", re.MULTILINE)


def test_values_import_nothing_of_holodesk() -> None:
    # The contract's plain values (issue 19): every distribution imports them, so they
    # import no other part of holodesk, no protobuf, no gRPC and nothing of the OS.
    offenders: list[str] = []
    for path in (ROOT / "values" / "src").rglob("*.py"):
        text = path.read_text()
        if _OTHER_HOLODESK_IMPORT.search(text) or any(
            name in text for name in ("import grpc", "google.protobuf", "sys.platform")
        ):
            offenders.append(str(path.relative_to(ROOT)))
    assert not offenders, f"holodesk.values must import nothing of holodesk: {offenders}"


# sys.platform, os.name, platform.system(), a comparison of Backend.os with an OS.
_OS_CHECK = re.compile(r"\bsys\.platform\b|\bos\.name\b|\bplatform\.system\(|\.os\s*[!=]=\s*[\"']")


def test_no_os_check_outside_the_platform_layer() -> None:
    # Only platform/ knows which OS it runs on; the rest asks it (Backend properties,
    # holodesk.platform.select, holodesk.platform.app_folders).
    offenders: list[str] = []
    for folder in ("clients", "daemon", "data", "values", "protos"):
        for path in (ROOT / folder / "src").rglob("*.py"):
            if path.name.endswith(("_pb2.py", "_pb2_grpc.py")):
                continue
            for number, line in enumerate(path.read_text().splitlines(), 1):
                if _OS_CHECK.search(line):
                    offenders.append(f"{path.relative_to(ROOT)}:{number}: {line.strip()}")
    assert not offenders, "OS checks outside platform/:\n" + "\n".join(offenders)


@pytest.mark.parametrize(
    "command",
    [
        ("ruff", "check", "."),
        ("ruff", "format", "--check", "."),
        ("mypy",),
    ],
    ids=["ruff-check", "ruff-format", "mypy"],
)
def test_code_quality(command: tuple[str, ...]) -> None:
    tool = shutil.which(command[0], path=str(Path(sys.executable).parent))
    assert tool, f"{command[0]} is a dev dependency; run `uv sync`"
    result = _run(tool, *command[1:])
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-2000:]
