"""How often Python's cyclic garbage collector runs in a serving daemon.

A step allocates thousands of short-lived objects (messages, prompts, parsed
actions), so with CPython's default thresholds (700, 10, 10) the collector runs
every few steps, and every so often a full collection walks every object the daemon
holds: with a thousand sessions those walks were ~7% of its CPU (5 s of GC in a
75 s bench_daemon_overhead run at 1000 model-shaped sessions; 0.4 s with this
policy, changed steps 10.0 -> 9.2 ms and unchanged ones 2.2 -> 1.4 ms).

Once the daemon is ready to serve, what it has built so far (modules, the engine,
the model) lives as long as the process: `gc.freeze()` moves it out of the
collector's sight. The first threshold is raised so a collection runs per tens of
thousands of allocations, not hundreds; the daemon's objects rarely form cycles
(reference counting frees them), so what waits for a collection is a few MiB at most.
"""

from __future__ import annotations

import gc
import logging

log = logging.getLogger(__name__)

# Allocations (less deallocations) between young collections; then how many young
# collections make a middle one, and middle ones a full one.
SERVING_THRESHOLDS = (50_000, 20, 100)


def settle_for_serving() -> None:
    """Freeze what start-up built and space collections out for serving."""
    gc.collect()
    gc.freeze()
    gc.set_threshold(*SERVING_THRESHOLDS)
    log.debug("gc: %d objects frozen, thresholds %s", gc.get_freeze_count(), SERVING_THRESHOLDS)
