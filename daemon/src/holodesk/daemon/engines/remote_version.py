"""The policy version a remote OpenAI-compatible server reports, stamped on each sample.

Why this exists: with the openai engine the daemon cannot update the weights (a
trainer updates its `vllm serve` or cluster itself: docs/online-rl.md, "A remote
vLLM"), yet every step must still say which policy made it. The server is the only
one that knows, so the engine asks it. Sources (the engine's `version_source`):

- "weight_info": GET <server root>/weight_info, vLLM's dev endpoint
  (VLLM_SERVER_DEV_MODE=1) answering {"weight_version": "<what the trainer passed to
  finish_weight_update or update_weight_version>"}, read before and after each
  request. When the two reads differ, the weights changed while the request ran,
  and the chat API does not say at which token: the sample then carries one span
  per version, each over all its tokens (overlapping spans mean "one of these,
  boundary unknown"), so it counts as mixed and its newest version is the later one.
- "model": the answer's `model` field, the name the server says served it (a
  trainer that registers each step's LoRA under a new name, a router resolving an
  alias). No extra request.
- "auto" (default): "weight_info" when the server answers it at start, else "model".
- "off": nothing.

A label becomes the integer version when it is one ("12"), or through
`version_pattern` ("step-(\\d+)" reads 12 from "step-12"); otherwise the version is
0 (unknown) and only the label is carried.

Cost, at 100 sessions: the read before a request is served from the last read when
that is under `fresh_s` old (under load the reads after other requests keep it
fresh), and the read after a request is shared: at most one GET is in flight per
engine, and every request that finished before it started waits for the next one.
So at most one GET per step, fewer under load, and one GET's latency added to a
step. An unreachable /weight_info fails no step: the step is labelled with the
served model name (version 0), a warning is logged once per outage, and the
endpoint is not asked again for `retry_s`.
"""

from __future__ import annotations

import asyncio
import logging
import re
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from enum import StrEnum
from typing import Any

import httpx

from holodesk.daemon.engines.base import GenerationResult, Sample
from holodesk.values.generation import VersionSpan

log = logging.getLogger(__name__)

# A read of /weight_info is tiny; a server that takes longer is treated as down.
READ_TIMEOUT_S = 5.0
# How old the last read may be to stand for "before this request".
FRESH_S = 0.5
# How long an endpoint that failed is left alone before it is asked again.
RETRY_S = 30.0

Clock = Callable[[], float]


class VersionSource(StrEnum):
    AUTO = "auto"
    WEIGHT_INFO = "weight_info"
    MODEL = "model"
    OFF = "off"


@dataclass(frozen=True)
class ServedVersion:
    """What the server calls the serving weights, and its number (0: not a number)."""

    label: str
    number: int = 0


@dataclass
class VersionStats:
    """What stamping cost and found, for benchmarks and operators."""

    # GETs of /weight_info sent (the start-up probe included), and those that failed.
    reads: int = 0
    failures: int = 0
    # Requests stamped, those whose version changed while they ran, and those
    # labelled with the served model name because /weight_info did not answer.
    stamped: int = 0
    straddled: int = 0
    fallbacks: int = 0


def parse_source(value: VersionSource | str) -> VersionSource:
    try:
        return VersionSource(value)
    except ValueError:
        choices = ", ".join(s.value for s in VersionSource)
        raise ValueError(f"version_source {value!r} is not one of {choices}") from None


def compile_pattern(pattern: str | None) -> re.Pattern[str] | None:
    """`version_pattern` compiled; its first group (else the whole match) is the number."""
    if not pattern:
        return None
    try:
        return re.compile(pattern)
    except re.error as exc:
        raise ValueError(
            f"version_pattern {pattern!r} is not a regular expression: {exc}"
        ) from None


def served_version(label: str, pattern: re.Pattern[str] | None = None) -> ServedVersion:
    """`label` with its number: the whole label when it is a decimal integer, else what
    `pattern` finds in it; 0 when neither gives one."""
    text = label.strip()
    if pattern is not None:
        found = pattern.search(text)
        text = (found.group(1) if found.re.groups else found.group(0)) if found else ""
    number = int(text) if text.isascii() and text.isdigit() else 0
    return ServedVersion(label, number)


def weight_info_url(base_url: str) -> str:
    """<server root>/weight_info: vLLM serves its dev routes beside /v1, not under it."""
    root = base_url.rstrip("/")
    if root.endswith("/v1"):
        root = root[: -len("/v1")]
    return f"{root}/weight_info"


def stamp(
    result: GenerationResult,
    before: ServedVersion,
    after: ServedVersion,
) -> GenerationResult:
    """`result` with every sample's version spans and the label of `after`.

    The spans cover each sample's tokens (its logprobs' count, else its
    completion_tokens; 0 when the server gave neither: an empty span still names
    the version). Different reads give a span per version over the same tokens; a
    version 0 (a label that is no number) is kept then, so the sample still counts
    as mixed."""
    numbers = sorted({before.number, after.number})
    if before.label == after.label or numbers == [0]:
        numbers = [n for n in numbers if n]
    samples = tuple(_spanned(sample, numbers) for sample in result.samples)
    return replace(result, samples=samples, policy_label=after.label)


def _spanned(sample: Sample, numbers: list[int]) -> Sample:
    tokens = len(sample.token_logprobs) or sample.completion_tokens
    return replace(sample, versions=tuple(VersionSpan(n, 0, tokens) for n in numbers))


class WeightInfoReader:
    """GET /weight_info, shared by every request of one engine: one read in flight at
    a time, each read's answer handed to everyone waiting for it."""

    def __init__(
        self,
        client: httpx.AsyncClient,
        url: str,
        stats: VersionStats,
        *,
        pattern: re.Pattern[str] | None = None,
        fresh_s: float = FRESH_S,
        retry_s: float = RETRY_S,
        clock: Clock = time.monotonic,
    ) -> None:
        self.url = url
        self._client = client
        self._stats = stats
        self._pattern = pattern
        self._fresh_s = fresh_s
        self._retry_s = retry_s
        self._clock = clock
        self._task: asyncio.Task[ServedVersion | None] | None = None
        self._task_started = 0.0
        # The last read that ended: when it started, when it ended, what it said.
        self._last: tuple[float, float, ServedVersion | None] | None = None
        self._warned = False

    async def probe(self, *, absent_ok: bool = False) -> int:
        """Read once, now; the HTTP status (0: no answer). 404: no such endpoint,
        which is no failure with `absent_ok` (a server that is not vLLM's dev one)."""
        self._task_started = self._clock()
        status, _ = await self._get(absent_ok=absent_ok)
        return status

    async def before(self) -> ServedVersion | None:
        """A version read before now: the read in flight, else the last one if fresh."""
        if self._task is not None:
            return await asyncio.shield(self._task)
        last = self._last
        if last is not None and self._clock() - last[1] <= self._fresh_s:
            return last[2]
        return await self.after(self._clock())

    async def after(self, since: float) -> ServedVersion | None:
        """A version read by a GET started at `since` or later (None: it failed, or the
        endpoint failed less than retry_s ago and is left alone)."""
        while True:
            last = self._last
            if last is not None and last[2] is None and self._clock() - last[1] < self._retry_s:
                return None
            if last is not None and last[0] >= since:
                return last[2]
            task = self._task
            if task is None:
                self._task_started = self._clock()
                task = self._task = asyncio.create_task(self._read(), name="weight_info")
            if self._task_started >= since:
                return await asyncio.shield(task)
            # A read that started too early: wait for it, then join or start the next.
            await asyncio.wait({task})

    def close(self) -> None:
        if self._task is not None:
            self._task.cancel()

    async def _read(self) -> ServedVersion | None:
        try:
            _, version = await self._get()
        finally:
            self._task = None
        return version

    async def _get(self, *, absent_ok: bool = False) -> tuple[int, ServedVersion | None]:
        """One GET; its status and version, also kept as the last read."""
        started = self._task_started
        self._stats.reads += 1
        status = 0
        version: ServedVersion | None = None
        try:
            response = await self._client.get(self.url, timeout=READ_TIMEOUT_S)
            status = response.status_code
            if status != 200:
                raise _ReadError(f"answered {status}")
            version = served_version(_weight_version(response), self._pattern)
        except (httpx.HTTPError, _ReadError) as exc:
            if not (absent_ok and status == 404):
                self._failed(_describe(exc))
        else:
            if self._warned:
                log.info("%s answers again: steps carry its weight_version", self.url)
                self._warned = False
        self._last = (started, self._clock(), version)
        return status, version

    def _failed(self, why: str) -> None:
        self._stats.failures += 1
        if not self._warned:
            log.warning(
                "GET %s failed (%s): steps are labelled with the served model name, "
                "without a version, until it answers (asked again every %.0f s)",
                self.url,
                why,
                self._retry_s,
            )
            self._warned = True


class _ReadError(Exception):
    """/weight_info answered, but not with a weight version."""


def _describe(exc: Exception) -> str:
    if isinstance(exc, _ReadError):
        return str(exc)
    return f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__


def _weight_version(response: httpx.Response) -> str:
    try:
        payload: Any = response.json()
    except ValueError:
        raise _ReadError("answered non-JSON") from None
    version = payload.get("weight_version") if isinstance(payload, dict) else None
    if isinstance(version, bool) or not isinstance(version, str | int):
        raise _ReadError(f"answered no weight_version: {str(payload)[:200]}")
    return str(version)


class RemoteVersions:
    """The engine's side: which source, a read before each request, a stamp after."""

    def __init__(
        self,
        client: httpx.AsyncClient,
        source: VersionSource | str,
        url: str,
        *,
        pattern: str | None = None,
        fresh_s: float = FRESH_S,
        retry_s: float = RETRY_S,
    ) -> None:
        self.source = parse_source(source)
        self.stats = VersionStats()
        self._pattern = compile_pattern(pattern)
        self._reader = WeightInfoReader(
            client, url, self.stats, pattern=self._pattern, fresh_s=fresh_s, retry_s=retry_s
        )

    @property
    def url(self) -> str:
        return self._reader.url

    async def start(self) -> None:
        """Settle "auto": "weight_info" unless the server has no such endpoint (404)."""
        if self.source is not VersionSource.AUTO:
            return
        status = await self._reader.probe(absent_ok=True)
        self.source = VersionSource.MODEL if status == 404 else VersionSource.WEIGHT_INFO
        if self.source is VersionSource.MODEL:
            log.info(
                "%s is not served (vLLM without VLLM_SERVER_DEV_MODE=1, another server): "
                "steps are labelled with the served model name",
                self.url,
            )

    async def before(self) -> ServedVersion | None:
        """The version serving before a request is sent (weight_info only)."""
        if self.source is not VersionSource.WEIGHT_INFO:
            return None
        return await self._reader.before()

    async def stamp(
        self,
        result: GenerationResult,
        before: ServedVersion | None,
        answered_at: float,
        served_model: str,
    ) -> GenerationResult:
        """`result` stamped; `answered_at` is when its answer arrived (monotonic)."""
        if self.source is VersionSource.OFF:
            return result
        self.stats.stamped += 1
        if self.source is VersionSource.MODEL:
            named = served_version(served_model, self._pattern)
            return stamp(result, named, named)
        after = await self._reader.after(answered_at) if before is not None else None
        if before is None or after is None:
            self.stats.fallbacks += 1
            unknown = ServedVersion(served_model)
            return stamp(result, unknown, unknown)
        if before != after:
            self.stats.straddled += 1
            log.debug("the weights changed from %s to %s under a request", before, after)
        return stamp(result, before, after)

    def close(self) -> None:
        self._reader.close()
