"""Prometheus metrics of one daemon, on a registry of its own.

Every `serve()` makes a `DaemonMetrics` around a fresh `CollectorRegistry` (or
takes one it is handed), so two daemons in one process (tests, an embedding
application) never mix their counts, and nothing lands in prometheus_client's
process-wide default registry. `--metrics-address HOST:PORT` exposes it over
HTTP (`MetricsExporter`); without the flag the numbers are kept but not served.

Sessions are counted as one more observer of their event stream
(session/session_events.py, beside the recorder and the live view: `watch`), so the
session code never calls into metrics; calls are counted by rpc/metrics_interceptor.py.

Series (all prefixed ``holodesk_``):

- ``sessions{state}``: sessions now, by state (read from the session registry
  at scrape time, so it can never drift from what ListSessions shows);
- ``sessions_started_total``, ``sessions_resumed_total``,
  ``sessions_ended_total{outcome}``;
- ``steps_total{policy}``: policy decisions;
- ``step_latency_seconds{policy}``: from an observation's arrival to its
  Actions message handed to gRPC (what the client waits for);
- ``policy_seconds{policy}``: the policy's decide() alone; ``engine_seconds``,
  ``prompt_tokens_total`` and ``completion_tokens_total`` where the policy
  reports its generation (model policies; scripted and OCR ones do not);
- ``frame_bytes{rpc}``: encoded frame sizes received;
- ``rpc_errors_total{method,code}``: calls that ended with a status other than
  OK (metrics_interceptor.py), authentication failures included; a method the
  daemon does not serve is counted as ``method="unknown"``;
- ``locate_calls_total{code}`` and ``locate_seconds``;
- ``process_*`` (unprefixed, prometheus_client's own): CPU seconds, resident memory,
  open file descriptors, start time. No ``_created`` series are exported.

No label takes its values from a caller: methods are the ones served (or
"unknown"), codes gRPC's, policies the daemon's own, states and outcomes enums.
Each label still goes through a `BoundedLabel`, so a value set that turns out
larger than meant (a bug, a plugin policy per session) costs at most
`MAX_LABEL_VALUES` series before the rest share ``other`` (issue 15: every new
label value is a series kept for the life of the process).
"""

from __future__ import annotations

import threading
from collections.abc import Iterable
from dataclasses import dataclass
from wsgiref.simple_server import WSGIServer

from prometheus_client import (
    CollectorRegistry,
    Counter,
    Histogram,
    ProcessCollector,
    disable_created_metrics,
    start_http_server,
)
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from holodesk.daemon.config import is_loopback, parse_metrics_address
from holodesk.daemon.policies.base import Decision
from holodesk.daemon.session.decoded_screens import DecodedScreens
from holodesk.daemon.session.registry import SessionRegistry
from holodesk.daemon.session.session_events import (
    ActionsMade,
    FrameTaken,
    SessionEvent,
    StreamOpened,
)
from holodesk.daemon.session.sessions import Session
from holodesk.daemon.session.values import SessionOutcome, SessionState

PREFIX = "holodesk"
# Seconds: from a scripted policy's microseconds to a large model's minutes.
LATENCY_BUCKETS = (
    0.005,
    0.01,
    0.025,
    0.05,
    0.1,
    0.25,
    0.5,
    1.0,
    2.5,
    5.0,
    10.0,
    30.0,
    60.0,
    120.0,
    300.0,
)
# Bytes: 4 KiB (a tiny JPEG) to 32 MiB (the default message limit), doubling.
FRAME_BUCKETS = tuple(float(4096 * 2**i) for i in range(14))
# Distinct values one label may take (all of a label's real values fit many times over).
MAX_LABEL_VALUES = 64
# What values past that limit are counted as.
OTHER_LABEL = "other"


class BoundedLabel:
    """One label's values: the first `limit` distinct ones pass, later ones are
    `OTHER_LABEL`. Remembering them is what bounds the series, so this is the
    only place a label value is chosen."""

    def __init__(self, name: str, limit: int = MAX_LABEL_VALUES) -> None:
        self.name = name
        self.limit = limit
        self._seen: set[str] = set()
        # Counting runs on the event loop; the lock keeps the limit exact should an
        # embedding application count from a thread of its own too.
        self._lock = threading.Lock()

    def value(self, raw: str) -> str:
        if raw in self._seen:
            return raw
        with self._lock:
            if len(self._seen) >= self.limit:
                return OTHER_LABEL
            self._seen.add(raw)
        return raw


class _SessionStates(Collector):
    """``holodesk_sessions{state}``, counted from the registry when scraped."""

    def __init__(self, sessions: SessionRegistry) -> None:
        self._sessions = sessions

    def collect(self) -> Iterable[Metric]:
        family = GaugeMetricFamily(
            f"{PREFIX}_sessions", "Sessions in the daemon now, by state", labels=["state"]
        )
        counts = dict.fromkeys(SessionState, 0)
        # Scraped on the exporter's thread while the event loop's thread changes the
        # registry: list() copies it in one C-level step, under the GIL.
        for session in self._sessions.list():
            counts[session.state] += 1
        for state, count in counts.items():
            family.add_metric([state.value], count)
        yield family

    def describe(self) -> Iterable[Metric]:
        # Described without a registry to read: registering must not scrape.
        yield GaugeMetricFamily(
            f"{PREFIX}_sessions", "Sessions in the daemon now, by state", labels=["state"]
        )


class _ScreensFigures(Collector):
    """The decoded screens' tiers and work (session/decoded_screens.py), read when
    scraped: an unpack count that climbs with the step count says an engine's
    processor cache no longer holds the sessions' windows (size vLLM's
    mm_processor_cache_gb for them), a miss count that the budget is too small."""

    def __init__(self, screens: DecodedScreens) -> None:
        self._screens = screens

    def collect(self) -> Iterable[Metric]:
        figures = self._screens.figures()
        held, weight, unpacks, bases = self._families()
        held.add_metric(["packed"], figures.packed_screens)
        held.add_metric(["raw"], figures.raw_screens)
        weight.add_metric(["packed"], figures.packed_bytes)
        weight.add_metric(["raw"], figures.raw_bytes)
        unpacks.add_metric([], figures.unpacks)
        bases.add_metric(["yes"], figures.hits)
        bases.add_metric(["no"], figures.misses)
        yield from (held, weight, unpacks, bases)

    def describe(self) -> Iterable[Metric]:
        yield from self._families()

    @staticmethod
    def _families() -> tuple[
        GaugeMetricFamily, GaugeMetricFamily, CounterMetricFamily, CounterMetricFamily
    ]:
        return (
            GaugeMetricFamily(
                f"{PREFIX}_decoded_screens", "Decoded screens held, by tier", labels=["tier"]
            ),
            GaugeMetricFamily(
                f"{PREFIX}_decoded_screens_bytes",
                "Bytes the decoded screens hold, by tier (bands shared along a chain once)",
                labels=["tier"],
            ),
            CounterMetricFamily(
                f"{PREFIX}_decoded_screen_unpacks",
                "Screens unpacked for a reader (an engine asking again for a window screen)",
            ),
            CounterMetricFamily(
                f"{PREFIX}_delta_bases",
                "Bases of delta frames, by whether their pixels were still decoded",
                labels=["found"],
            ),
        )


class DaemonMetrics:
    """The daemon's instruments; `registry` is what an exporter serves."""

    def __init__(self, registry: CollectorRegistry | None = None) -> None:
        # Counters' `_created` series only double the scrape (Prometheus ignores
        # them): off, process-wide, before any instrument is made.
        disable_created_metrics()  # type: ignore[no-untyped-call]  # unannotated upstream
        self.registry = registry if registry is not None else CollectorRegistry()
        r = self.registry
        # process_* (CPU seconds, resident memory, open files, start time): what an
        # operator watches on a daemon left running.
        ProcessCollector(registry=r)
        self.sessions_started = Counter(
            f"{PREFIX}_sessions_started", "Sessions started (resumes not included)", registry=r
        )
        self.sessions_resumed = Counter(
            f"{PREFIX}_sessions_resumed", "Detached sessions resumed by a new stream", registry=r
        )
        self.sessions_ended = Counter(
            f"{PREFIX}_sessions_ended", "Sessions ended, by outcome", ["outcome"], registry=r
        )
        for outcome in SessionOutcome:
            self.sessions_ended.labels(outcome.value)  # every outcome exported from 0
        self.steps = Counter(f"{PREFIX}_steps", "Steps decided, by policy", ["policy"], registry=r)
        self.step_latency = Histogram(
            f"{PREFIX}_step_latency_seconds",
            "From an observation's arrival to its actions handed to gRPC",
            ["policy"],
            buckets=LATENCY_BUCKETS,
            registry=r,
        )
        self.policy_seconds = Histogram(
            f"{PREFIX}_policy_seconds",
            "Time the policy took to decide one step",
            ["policy"],
            buckets=LATENCY_BUCKETS,
            registry=r,
        )
        self.engine_seconds = Histogram(
            f"{PREFIX}_engine_seconds",
            "Engine (model) time of one step, where the policy reports it",
            ["policy"],
            buckets=LATENCY_BUCKETS,
            registry=r,
        )
        self.prompt_tokens = Counter(
            f"{PREFIX}_prompt_tokens",
            "Prompt tokens, where the policy reports them",
            ["policy"],
            registry=r,
        )
        self.completion_tokens = Counter(
            f"{PREFIX}_completion_tokens",
            "Completion tokens, where the policy reports them",
            ["policy"],
            registry=r,
        )
        self.frame_bytes = Histogram(
            f"{PREFIX}_frame_bytes",
            "Encoded size of the frames received",
            ["rpc"],
            buckets=FRAME_BUCKETS,
            registry=r,
        )
        self.rpc_errors = Counter(
            f"{PREFIX}_rpc_errors",
            "Calls that ended with a status other than OK",
            ["method", "code"],
            registry=r,
        )
        self.locate_calls = Counter(
            f"{PREFIX}_locate_calls", "Locate calls, by status code", ["code"], registry=r
        )
        self.locate_seconds = Histogram(
            f"{PREFIX}_locate_seconds",
            "Time to answer a Locate call",
            buckets=LATENCY_BUCKETS,
            registry=r,
        )
        self._watched: set[int] = set()
        self._policy = BoundedLabel("policy")
        self._method = BoundedLabel("method")

    def watch_screens(self, screens: DecodedScreens) -> None:
        """Export the decoded screens' figures, read when scraped."""
        self.registry.register(_ScreensFigures(screens))

    def watch(self, sessions: SessionRegistry) -> None:
        """Count `sessions`' states at scrape time, their events as they happen (one
        observer of the session event stream, beside the recorder and the live view)
        and their endings as they leave."""
        if id(sessions) in self._watched:
            return
        self._watched.add(id(sessions))
        self.registry.register(_SessionStates(sessions))
        sessions.observers.append(self.observe)
        sessions.listeners.append(self._session_left)

    def observe(self, session: Session, event: SessionEvent) -> None:
        """SessionRegistry observer: what the counts take from a session's events."""
        if isinstance(event, StreamOpened):
            self.session_opened(resumed=event.resumed)
        elif isinstance(event, FrameTaken):
            self.frame_received("RunSession", event.wire_bytes)
        elif isinstance(event, ActionsMade):
            self.step_decided(session.policy_name, event.policy_seconds, event.decision)
            if event.sent:
                self.step_sent(session.policy_name, event.step_seconds)

    def _session_left(self, session: Session) -> None:
        if session.ended is not None:
            self.sessions_ended.labels(session.ended.outcome.value).inc()

    # Counted from the session events ------------------------------------------------

    def session_opened(self, *, resumed: bool) -> None:
        (self.sessions_resumed if resumed else self.sessions_started).inc()

    def frame_received(self, rpc: str, size: int) -> None:
        self.frame_bytes.labels(rpc).observe(size)

    def step_decided(self, policy: str, seconds: float, decision: Decision) -> None:
        policy = self._policy.value(policy)
        self.steps.labels(policy).inc()
        self.policy_seconds.labels(policy).observe(seconds)
        generation = decision.generation
        if generation is None:
            return
        if generation.engine_seconds > 0:
            self.engine_seconds.labels(policy).observe(generation.engine_seconds)
        if generation.prompt_tokens > 0:
            self.prompt_tokens.labels(policy).inc(generation.prompt_tokens)
        completion = generation.completion_tokens
        if completion > 0:
            self.completion_tokens.labels(policy).inc(completion)

    def step_sent(self, policy: str, seconds: float) -> None:
        self.step_latency.labels(self._policy.value(policy)).observe(seconds)

    # Called by the metrics interceptor --------------------------------------------------

    def rpc_ended(self, method: str, code: str) -> None:
        if code != "OK":
            # Codes are gRPC's own (a closed set); methods are bounded here.
            self.rpc_errors.labels(self._method.value(method), code).inc()

    def locate_ended(self, code: str, seconds: float) -> None:
        self.locate_calls.labels(code).inc()
        self.locate_seconds.observe(seconds)


@dataclass
class MetricsExporter:
    """prometheus_client's HTTP server on its own thread, serving one registry."""

    host: str
    port: int
    _server: WSGIServer
    _thread: threading.Thread

    @classmethod
    def start(cls, address: str, registry: CollectorRegistry) -> MetricsExporter:
        host, port = parse_metrics_address(address)
        try:
            server, thread = start_http_server(port, addr=host, registry=registry)
        except OSError as exc:
            raise OSError(f"cannot serve metrics on {address}: {exc.strerror or exc}") from exc
        return cls(host, int(server.server_port), server, thread)

    @property
    def address(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{host}:{self.port}"

    @property
    def url(self) -> str:
        return f"http://{self.address}/metrics"

    @property
    def exposed(self) -> bool:
        """True when the endpoint is reachable from other machines."""
        return not is_loopback(self.host)

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join()
