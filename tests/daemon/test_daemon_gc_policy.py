"""The serving daemon's garbage-collector policy (gc_policy), in a process of its own:
freezing is process-wide, and the test process must keep its collector as it is."""

from __future__ import annotations

import json
import subprocess
import sys

from holodesk.daemon import gc_policy

_PROBE = """
import gc, json
from holodesk.daemon import gc_policy
before = gc.get_freeze_count()
gc_policy.settle_for_serving()
print(json.dumps({"before": before, "frozen": gc.get_freeze_count(),
                  "thresholds": gc.get_threshold()}))
"""


def test_settling_for_serving_freezes_start_up_and_spaces_collections_out() -> None:
    done = subprocess.run(
        [sys.executable, "-c", _PROBE], capture_output=True, text=True, timeout=60, check=True
    )
    seen = json.loads(done.stdout)
    assert seen["before"] == 0
    assert seen["frozen"] > 1000  # the modules imported: at least holodesk's own
    assert tuple(seen["thresholds"]) == gc_policy.SERVING_THRESHOLDS
    assert gc_policy.SERVING_THRESHOLDS[0] > 700  # CPython's default young threshold
