"""OpenAIEngine: any OpenAI-compatible chat-completions server as an Engine.

This is the scale-out path: many holodesk daemons, one serving cluster (`vllm
serve`, SGLang, a fleet behind a router). Each session step is one POST to
`{base_url}/chat/completions`; the server batches steps of all sessions of all
daemons together.

- One `httpx.AsyncClient` for the engine's lifetime: a pool of keep-alive
  HTTP/1.1 connections (HTTP/2 on request, when h2 is installed) shared by every
  session, at most `max_connections` of them; more concurrent steps queue for a
  free connection in the client.
- Images go as `data:` URLs; the JSON schema goes as `response_format`
  json_schema (or vLLM's older `guided_json`), so the server constrains decoding.
  A dialect's function tools go as `tools` and `tool_choice`, and the answer's
  `tool_calls` come back as the step's tool reply (engines/tool_reply.py).
- 408/429/5xx, dropped connections and timeouts are retried with exponential
  backoff and jitter, honouring Retry-After; other 4xx fail at once with the
  server's message.
- abort() cancels the request's HTTP call, which closes its connection; vLLM
  and SGLang abort a request whose client went away, so no GPU time is wasted.
- No streaming: the daemon needs the whole answer before it can act, so one
  non-streamed answer per step costs less (one response, no per-token events).
- Each sample is stamped with the policy version the server reports
  (engines/remote_version.py: vLLM's /weight_info, else the served model name):
  the trainer updates the server itself, so the server is the one that knows.
"""

from __future__ import annotations

import asyncio
import importlib.util
import json
import logging
import os
import time
from collections.abc import Awaitable, Callable, Mapping
from typing import Any
from urllib.parse import urlsplit

import httpx

from holodesk.daemon.engines.base import EngineError, GenerationRequest, GenerationResult
from holodesk.daemon.engines.http_retry import RetryPolicy, is_retryable_status, parse_retry_after
from holodesk.daemon.engines.openai_wire import (
    StructuredOutput,
    encode_chat_body,
    error_message,
    listed_models,
    parse_completion,
    snippet,
)
from holodesk.daemon.engines.remote_version import (
    FRESH_S,
    RETRY_S,
    RemoteVersions,
    VersionSource,
    weight_info_url,
)

log = logging.getLogger(__name__)

Sleep = Callable[[float], Awaitable[None]]

# Below uvicorn's 5 s keep-alive (vLLM's and SGLang's server): a connection the
# client still thinks is open must not be one the server is closing right now.
_KEEPALIVE_EXPIRY_S = 4.0
_USER_AGENT = "holodesk-daemon"
# How long a daemon started from the CLI waits for its server to come up (a
# `vllm serve` started alongside takes a minute or more to load weights).
START_TIMEOUT_S = 120.0
# Failures worth another try: the server may be restarting, overloaded, or the
# connection went stale. LocalProtocolError/UnsupportedProtocol are our bugs.
_TRANSIENT = (httpx.TimeoutException, httpx.NetworkError, httpx.RemoteProtocolError)


class OpenAIEngine:
    name = "openai"
    # The server decodes and processes the bytes it is sent; they are made at the
    # model's size.
    processes_images = False

    def __init__(
        self,
        base_url: str,
        model: str | None = None,
        *,
        api_key: str | None = None,
        api_key_env: str | None = None,
        timeout_s: float = 120.0,
        connect_timeout_s: float = 10.0,
        max_retries: int = 3,
        backoff_s: float = 0.5,
        backoff_max_s: float = 20.0,
        max_connections: int = 256,
        structured_output: StructuredOutput | str = StructuredOutput.RESPONSE_FORMAT,
        extra_body: Mapping[str, Any] | None = None,
        start_timeout_s: float = 0.0,
        http2: bool = False,
        version_source: VersionSource | str = VersionSource.AUTO,
        version_url: str | None = None,
        version_pattern: str | None = None,
        version_fresh_s: float = FRESH_S,
        version_retry_s: float = RETRY_S,
        sleep: Sleep = asyncio.sleep,
    ) -> None:
        """`base_url` is the API root, as for the openai SDK: http://host:8000/v1.

        `model` may be left out when the server serves exactly one model.
        `api_key_env` names an environment variable holding the key (keeps it
        out of command lines). `timeout_s` bounds the wait for an answer,
        `start_timeout_s` how long start() keeps trying a server that is not up
        yet (0: once). `sleep` is how retries wait (tests record the pauses).
        `version_source` says where each step's policy version comes from
        (engines/remote_version.py), `version_url` where vLLM's /weight_info is
        when not beside `base_url`'s /v1, `version_pattern` how to read a number
        out of a label that is not one; `version_fresh_s` how old a read may be
        to stand for "before this request", `version_retry_s` how long a failed
        /weight_info is left alone.
        """
        self.base_url = _check_base_url(base_url)
        self.model = model or None
        if timeout_s <= 0 or connect_timeout_s <= 0:
            raise ValueError("timeouts must be positive")
        if max_connections < 1:
            raise ValueError(f"max_connections must be >= 1, not {max_connections}")
        if start_timeout_s < 0:
            raise ValueError("start_timeout_s cannot be negative")
        self.retry = RetryPolicy(max_retries, backoff_s, backoff_max_s)
        self.structured_output = _structured(structured_output)
        self.extra_body = dict(extra_body or {})
        self.start_timeout_s = start_timeout_s
        self._sleep = sleep
        key = api_key if api_key is not None else _key_from_env(api_key_env)
        headers = {"User-Agent": _USER_AGENT}
        if key:
            headers["Authorization"] = f"Bearer {key}"
        if http2:
            _require_h2()
        self._client = httpx.AsyncClient(
            headers=headers,
            # pool=None: waiting for a free connection is queueing, not a failure.
            timeout=httpx.Timeout(timeout_s, connect=connect_timeout_s, pool=None),
            limits=httpx.Limits(
                max_connections=max_connections,
                max_keepalive_connections=max_connections,
                keepalive_expiry=_KEEPALIVE_EXPIRY_S,
            ),
            http2=http2,
            # Proxies from the environment would silently reroute cluster traffic.
            trust_env=False,
        )
        self.versions = RemoteVersions(
            self._client,
            version_source,
            (
                _check_base_url(version_url, "version_url", "http://host:8000/weight_info")
                if version_url
                else weight_info_url(self.base_url)
            ),
            pattern=version_pattern,
            fresh_s=version_fresh_s,
            retry_s=version_retry_s,
        )
        self._inflight: dict[str, asyncio.Task[GenerationResult]] = {}
        self._closed = False

    @property
    def chat_url(self) -> str:
        return f"{self.base_url}/chat/completions"

    @property
    def models_url(self) -> str:
        return f"{self.base_url}/models"

    async def start(self) -> None:
        """Check that the server answers and serves `model` (or pick its only model)."""
        deadline = time.monotonic() + self.start_timeout_s
        retry = 0
        while True:
            try:
                served = await self._served_models()
                break
            except _NotUpYetError as exc:
                if time.monotonic() >= deadline:
                    raise EngineError(str(exc)) from exc
                log.warning("%s; trying again", exc)
                await self._sleep(self.retry.backoff(min(retry, 6)))
                retry += 1
        if self.model is None:
            if len(served) != 1:
                raise EngineError(
                    f"{self.models_url} serves {served or 'no models'}; "
                    "name one with the model option"
                )
            self.model = served[0]
        elif self.model not in served:
            raise EngineError(f"{self.models_url} does not serve {self.model!r}; it has {served}")
        await self.versions.start()
        log.info(
            "openai engine: %s serves %s (policy version from: %s)",
            self.base_url,
            self.model,
            self.versions.source,
        )

    async def generate(self, request: GenerationRequest) -> GenerationResult:
        if self._closed:
            raise EngineError("the openai engine is closed")
        if not request.messages:
            raise EngineError("a generation request needs at least one message")
        if request.request_id in self._inflight:
            raise EngineError(f"request {request.request_id!r} is already running")
        # Its own task, so abort() can cancel the HTTP call without cancelling
        # the caller (a session step that should end with an error, not vanish).
        task = asyncio.create_task(self._complete(request), name=f"openai {request.request_id}")
        self._inflight[request.request_id] = task
        try:
            return await task
        except asyncio.CancelledError:
            current = asyncio.current_task()
            if task.cancelled() and (current is None or current.cancelling() == 0):
                raise EngineError(f"request {request.request_id} was aborted") from None
            raise
        finally:
            if self._inflight.get(request.request_id) is task:
                del self._inflight[request.request_id]

    async def abort(self, request_id: str) -> None:
        task = self._inflight.get(request_id)
        if task is None:
            return
        task.cancel()
        # Returns once the connection is closed, i.e. the server has been told.
        await asyncio.wait({task})

    async def close(self) -> None:
        self._closed = True
        tasks = list(self._inflight.values())
        for task in tasks:
            task.cancel()
        if tasks:
            await asyncio.wait(tasks)
        self.versions.close()
        await self._client.aclose()

    async def _complete(self, request: GenerationRequest) -> GenerationResult:
        model = self.model
        if model is None:
            raise EngineError("no model chosen: call start() first or pass model")
        body = await asyncio.to_thread(
            encode_chat_body,
            request,
            model=model,
            structured=self.structured_output,
            extra_body=self.extra_body,
        )
        attempts = self.retry.max_retries + 1
        for attempt in range(attempts):
            # A distinct id per attempt: the server may still hold the previous one.
            headers = {
                "Content-Type": "application/json",
                "X-Request-Id": f"{request.request_id}#{attempt}",
            }
            retry_after: float | None = None
            before = await self.versions.before()
            try:
                response = await self._client.post(self.chat_url, content=body, headers=headers)
            except _TRANSIENT as exc:
                failure = f"POST {self.chat_url} failed: {_describe(exc)}"
            else:
                if response.status_code == 200:
                    answered_at = time.monotonic()
                    result, served = _result(response, request.logprobs, request.tools is not None)
                    return await self.versions.stamp(result, before, answered_at, served or model)
                message = error_message(response.text)
                failure = f"{self.chat_url} answered {response.status_code}: {message}"
                if not is_retryable_status(response.status_code):
                    raise EngineError(failure)
                retry_after = parse_retry_after(response.headers.get("Retry-After"))
            if attempt + 1 == attempts:
                break
            delay = self.retry.delay(attempt, retry_after)
            if delay is None:
                raise EngineError(f"{failure} (and asks to retry after {retry_after:.0f} s)")
            log.warning(
                "%s: %s; retry %d/%d in %.2f s",
                request.request_id,
                failure,
                attempt + 1,
                attempts - 1,
                delay,
            )
            await self._sleep(delay)
        raise EngineError(f"{failure} (gave up after {attempts} attempt(s))")

    async def _served_models(self) -> list[str]:
        url = self.models_url
        try:
            response = await self._client.get(url)
        except _TRANSIENT as exc:
            raise _NotUpYetError(f"cannot reach {url}: {_describe(exc)}") from exc
        except httpx.HTTPError as exc:
            raise EngineError(f"cannot query {url}: {_describe(exc)}") from exc
        if response.status_code != 200:
            message = f"GET {url} answered {response.status_code}: {error_message(response.text)}"
            if is_retryable_status(response.status_code):
                raise _NotUpYetError(message)
            if response.status_code == 404:
                message += " (is base_url the API root, such as http://host:8000/v1?)"
            raise EngineError(message)
        try:
            return listed_models(response.json())
        except ValueError as exc:
            raise EngineError(f"GET {url} answered non-JSON: {snippet(response.text)}") from exc


class _NotUpYetError(Exception):
    """start() found the server not (yet) up: worth another look until the deadline."""


def _result(response: httpx.Response, logprobs: bool, tools: bool) -> tuple[GenerationResult, str]:
    """The answer, and the model it says served it ("" when it does not say)."""
    try:
        payload = response.json()
    except ValueError as exc:
        raise EngineError(f"the server answered non-JSON: {snippet(response.text)}") from exc
    result = parse_completion(payload, logprobs=logprobs, tools=tools)
    served = payload.get("model") if isinstance(payload, dict) else None
    return result, served if isinstance(served, str) else ""


def _describe(exc: httpx.HTTPError) -> str:
    detail = str(exc)
    return f"{type(exc).__name__}: {detail}" if detail else type(exc).__name__


def _check_base_url(
    base_url: str, what: str = "base_url", like: str = "http://host:8000/v1"
) -> str:
    url = base_url.strip().rstrip("/")
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise ValueError(f"{what} {base_url!r} is not an http(s) URL like {like}")
    return url


def _structured(value: StructuredOutput | str) -> StructuredOutput:
    try:
        return StructuredOutput(value)
    except ValueError:
        choices = ", ".join(s.value for s in StructuredOutput)
        raise ValueError(f"structured_output {value!r} is not one of {choices}") from None


def _key_from_env(variable: str | None) -> str | None:
    if not variable:
        return None
    key = os.environ.get(variable)
    if not key:
        raise ValueError(f"api_key_env names {variable}, but that environment variable is unset")
    return key


def _require_h2() -> None:
    if importlib.util.find_spec("h2") is None:
        raise ValueError("http2 needs the h2 package: pip install 'httpx[http2]'")


def engine_from_options(options: Mapping[str, str]) -> OpenAIEngine:
    """An engine from string options (the CLI's --policy-opt KEY=VALUE)."""
    base_url = options.get("base_url")
    if not base_url:
        raise ValueError("the openai policy needs base_url (e.g. http://host:8000/v1)")
    extra: dict[str, Any] = {}
    if options.get("extra_body"):
        try:
            parsed = json.loads(options["extra_body"])
        except ValueError as exc:
            raise ValueError(f"extra_body is not JSON: {exc}") from None
        if not isinstance(parsed, dict):
            raise ValueError("extra_body must be a JSON object")
        extra = parsed
    return OpenAIEngine(
        base_url,
        options.get("model") or None,
        api_key_env=options.get("api_key_env") or None,
        timeout_s=_number(options, "timeout_s", 120.0),
        max_retries=_integer(options, "max_retries", 3),
        max_connections=_integer(options, "max_connections", 256),
        structured_output=options.get("structured_output") or StructuredOutput.RESPONSE_FORMAT,
        extra_body=extra,
        start_timeout_s=_number(options, "start_timeout_s", START_TIMEOUT_S),
        version_source=options.get("version_source") or VersionSource.AUTO,
        version_url=options.get("version_url") or None,
        version_pattern=options.get("version_pattern") or None,
    )


def _number(options: Mapping[str, str], key: str, default: float) -> float:
    text = options.get(key)
    if not text:
        return default
    try:
        return float(text)
    except ValueError:
        raise ValueError(f"{key} must be a number, not {text!r}") from None


def _integer(options: Mapping[str, str], key: str, default: int) -> int:
    text = options.get(key)
    if not text:
        return default
    try:
        return int(text)
    except ValueError:
        raise ValueError(f"{key} must be a whole number, not {text!r}") from None
