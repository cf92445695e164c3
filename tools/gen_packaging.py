"""Write the client's example service definitions in packaging/ from the renderers
`holodesk service install` uses, so the two can never disagree.

    uv run python tools/gen_packaging.py          # regenerate in place
    uv run python tools/gen_packaging.py --check  # exit 1 when packaging/ is stale
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from holodesk.platform.services.launchd import render_plist
from holodesk.platform.services.schtasks import render_task_xml
from holodesk.platform.services.spec import ServiceSpec
from holodesk.platform.services.systemd import render_user_unit

ROOT = Path(__file__).resolve().parent.parent
PACKAGING = ROOT / "packaging"


def _spec(python: str) -> ServiceSpec:
    return ServiceSpec(
        name="holodesk-client",
        description="holodesk client (tray) for the daemon at gpu-host:50051",
        argv=(python, "-m", "holodesk.client", "tray", "--server", "gpu-host:50051"),
    )


def expected_files() -> dict[Path, bytes]:
    unix = _spec("/opt/holodesk/bin/python")
    windows = _spec(r"C:\Program Files\holodesk\python.exe")
    return {
        PACKAGING / "systemd" / "holodesk-client.service": render_user_unit(unix).encode(),
        PACKAGING / "launchd" / f"{unix.launchd_label}.plist": render_plist(
            unix, Path("/Users/USER/Library/Logs/holodesk")
        ),
        PACKAGING / "windows" / "holodesk-client.task.xml": render_task_xml(
            windows, r"DOMAIN\USER"
        ).encode("utf-16"),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--check", action="store_true", help="only report stale files")
    args = parser.parse_args()
    stale = []
    for path, content in expected_files().items():
        if path.exists() and path.read_bytes() == content:
            continue
        stale.append(path)
        if not args.check:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(content)
    if args.check and stale:
        names = ", ".join(str(p.relative_to(ROOT)) for p in stale)
        print(f"stale: {names}; run `uv run python tools/gen_packaging.py`", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
