"""Coverage-guided fuzzing (atheris, libFuzzer) of the daemon's decoders and validators.

    uv run python -m tests.daemon.atheris_fuzz [CORPUS_DIR] -runs=20000 -seed=1

Runs the targets of fuzz_targets.py; any exception other than InvalidArgument is a
crash: libFuzzer prints it with the input and exits non-zero. The daemon's own
modules and Pillow's image parsers are instrumented for coverage feedback.
"""

from __future__ import annotations

import sys

import atheris

with atheris.instrument_imports(include=["holodesk.daemon", "PIL", "tests.daemon.fuzz_targets"]):
    from tests.daemon import fuzz_targets


def main() -> None:
    atheris.Setup(sys.argv, fuzz_targets.all_targets)
    atheris.Fuzz()


if __name__ == "__main__":
    main()
