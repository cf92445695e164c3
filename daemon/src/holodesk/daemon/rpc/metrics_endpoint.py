"""The Prometheus endpoint of --metrics-address, started beside the gRPC server.

Why its own module: serve() only needs "an exporter or None"; whether one is asked
for, and the warning when it is reachable from other machines (plain HTTP, no
credentials), belong to the endpoint, not to the server's assembly.
"""

from __future__ import annotations

import logging

from holodesk.daemon.config import ServerConfig
from holodesk.daemon.metrics import DaemonMetrics, MetricsExporter

# The server's logger, as before the split: log filters and configs keep working.
log = logging.getLogger("holodesk.daemon.rpc.server")


def start_metrics(config: ServerConfig, metrics: DaemonMetrics) -> MetricsExporter | None:
    if not config.metrics_address:
        return None
    exporter = MetricsExporter.start(config.metrics_address, metrics.registry)
    if exporter.exposed:
        log.warning(
            "metrics on %s are reachable from other machines (plain HTTP, no credentials)",
            exporter.url,
        )
    else:
        log.info("metrics on %s", exporter.url)
    return exporter
