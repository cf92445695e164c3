"""Writes one recording, step by step, so that a crash loses at most the event in flight.

Public API::

    writer = RecordingWriter.create(root, manifest)   # makes root/<recording_id>/
    writer.write_frame(step, frame_id, data, encoding=..., width=..., height=..., ...)
    writer.write_actions(step, message, frame_id=..., prompt=..., policy_seconds=...)
    writer.write_observation(step, results, user_reply="")
    writer.finish("succeeded", answer=..., reason=..., steps=...)   # end event + manifest
    writer.add_reward(reward=1.0, success=True, note="...")           # also after finish
    writer.close()

Recordings hold what was on someone's screen: every directory is created 0700 and
every file 0600, whatever the umask of the process (a daemon started by hand has
0022; its systemd unit's UMask=0077 is not there to rely on).

Every event is one JSON line, flushed and fsync'd before the call returns; frame files
are written to a temporary name, fsync'd and renamed before their event is written, so
an event never names a missing file. The manifest is rewritten atomically (temporary
file + fsync + ``os.replace``). Methods are thread-safe (one lock per writer) and
blocking: asyncio callers run them off the event loop (``asyncio.to_thread``), keeping
their order, as the daemon's recorder does. The cost is the fsyncs: on an ext4 virtual
disk, ~4 ms per event line and ~12 ms per frame (file, directory and event line).
"""

from __future__ import annotations

import json
import os
import threading
import time
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, Any

from holodesk.data.format import (
    EVENTS_FILE,
    FRAMES_DIR,
    MANIFEST_FILE,
    OUTCOMES,
    ActionsEvent,
    EndEvent,
    Event,
    FrameEvent,
    Manifest,
    ObservationEvent,
    PromptMessage,
    RecordingError,
    Rect,
    RewardEvent,
    frame_file_name,
)

PRIVATE_DIR_MODE = 0o700
PRIVATE_FILE_MODE = 0o600


def _private(path: str, flags: int) -> int:
    """An `open()` opener: a file it creates is readable and writable by its owner only."""
    return os.open(path, flags, PRIVATE_FILE_MODE)


def prepare_root(root: str | os.PathLike[str]) -> Path:
    """The folder recordings go in, created (0700, its missing parents as usual) when
    it does not exist; an existing one is left as its owner set it."""
    path = Path(root)
    path.mkdir(parents=True, exist_ok=True, mode=PRIVATE_DIR_MODE)
    return path


def _fsync_directory(path: Path) -> None:
    # Makes a new or renamed entry durable. A directory opens only where the OS has
    # O_DIRECTORY (POSIX; not Windows, whose entries need no such sync).
    directory_flag = getattr(os, "O_DIRECTORY", None)
    if directory_flag is None:
        return
    fd = os.open(path, os.O_RDONLY | directory_flag)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _write_durably(path: Path, data: bytes) -> None:
    """Writes ``path`` atomically: a reader sees the old content or the new, never a part."""
    temporary = path.with_name(f".{path.name}.tmp")
    with open(temporary, "wb", opener=_private) as file:
        file.write(data)
        file.flush()
        os.fsync(file.fileno())
    os.replace(temporary, path)
    _fsync_directory(path.parent)


class RecordingWriter:
    """Appends the events of one recording; see the module docstring."""

    def __init__(
        self, path: Path, manifest: Manifest, events: IO[bytes], started: float, frames: int
    ) -> None:
        # Use create(); this takes an already prepared directory.
        self.path = path
        self._manifest = manifest
        self._events: IO[bytes] | None = events
        self._started = started
        self._frames = frames
        self._lock = threading.Lock()

    @classmethod
    def create(cls, root: str | os.PathLike[str], manifest: Manifest) -> RecordingWriter:
        """Makes ``root/<manifest.recording_id>/`` (which must not exist) and writes the manifest.

        Event times (``t``) count from now on a monotonic clock; ``manifest.started_at``
        is the wall-clock time of the same instant.
        """
        # The manifest model has checked that recording_id is one plain name.
        path = Path(root) / manifest.recording_id
        try:
            prepare_root(root)
            path.mkdir(mode=PRIVATE_DIR_MODE)
            (path / FRAMES_DIR).mkdir(mode=PRIVATE_DIR_MODE)
            _write_durably(path / MANIFEST_FILE, _dump_manifest(manifest))
            # Kept open until finish().
            events = open(path / EVENTS_FILE, "ab", opener=_private)  # noqa: SIM115
            _fsync_directory(path)
            _fsync_directory(path.parent)
        except FileExistsError as error:
            raise RecordingError(f"recording directory {path} already exists") from error
        except OSError as error:
            raise RecordingError(f"cannot create recording {path}: {error}") from error
        return cls(path, manifest, events, time.monotonic(), 0)

    @property
    def manifest(self) -> Manifest:
        """A copy of the manifest as last written."""
        with self._lock:
            return self._manifest.model_copy(deep=True)

    @property
    def recording_id(self) -> str:
        return self._manifest.recording_id

    @property
    def finished(self) -> bool:
        return self._manifest.outcome is not None

    def elapsed(self) -> float:
        return max(0.0, time.monotonic() - self._started)

    def write_frame(
        self,
        step: int,
        frame_id: str,
        data: bytes,
        *,
        encoding: str,
        width: int,
        height: int,
        display_id: str = "",
        source: Mapping[str, int] | None = None,
        scale_factor: float = 1.0,
    ) -> FrameEvent:
        """Writes the image file, then its frame event."""
        with self._lock:
            self._frames += 1
            file = frame_file_name(self._frames, frame_id, encoding)
            event = FrameEvent(
                t=self.elapsed(),
                step=step,
                frame_id=frame_id,
                file=file,
                encoding=encoding,  # type: ignore[arg-type]  # validated by pydantic
                width=width,
                height=height,
                display_id=display_id,
                source=Rect.model_validate(dict(source or {})),
                scale_factor=scale_factor,
            )
            target = self.path / file
            temporary = target.with_name(f".{target.name}.tmp")
            try:
                with open(temporary, "wb", opener=_private) as handle:
                    handle.write(data)
                    handle.flush()
                    os.fsync(handle.fileno())
                os.replace(temporary, target)
                _fsync_directory(target.parent)
            except OSError as error:
                raise RecordingError(f"cannot write frame {target}: {error}") from error
            self._append(event)
            return event

    def write_actions(
        self,
        step: int,
        message: Mapping[str, Any],
        *,
        frame_id: str = "",
        prompt: Sequence[PromptMessage | Mapping[str, Any]] | None = None,
        policy_seconds: float = 0.0,
    ) -> ActionsEvent:
        """``message`` is the contract's Actions message as a JSON object."""
        parts = None if prompt is None else [PromptMessage.model_validate(item) for item in prompt]
        with self._lock:
            event = ActionsEvent(
                t=self.elapsed(),
                step=step,
                frame_id=frame_id,
                message=dict(message),
                prompt=parts,
                policy_seconds=policy_seconds,
            )
            self._append(event)
        return event

    def write_observation(
        self, step: int, results: Sequence[Mapping[str, Any]], user_reply: str = ""
    ) -> ObservationEvent:
        """``results``: the contract's ActionResult messages of step ``step``, as JSON objects."""
        with self._lock:
            event = ObservationEvent(
                t=self.elapsed(),
                step=step,
                results=[dict(item) for item in results],
                user_reply=user_reply,
            )
            self._append(event)
        return event

    def finish(
        self, outcome: str, *, answer: str = "", reason: str = "", steps: int = 0
    ) -> EndEvent | None:
        """Writes the end event and the final manifest, then closes the events file.

        Returns ``None`` (and writes nothing) when the recording was already finished.
        """
        if outcome not in OUTCOMES:
            raise RecordingError(
                f"unknown outcome {outcome!r}; expected one of {', '.join(OUTCOMES)}"
            )
        with self._lock:
            if self._manifest.outcome is not None:
                return None
            event = EndEvent(
                t=self.elapsed(),
                step=steps,
                outcome=outcome,  # type: ignore[arg-type]  # checked above
                answer=answer,
                reason=reason,
                steps=steps,
            )
            self._append(event)
            self._manifest = self._manifest.model_copy(
                update={
                    "ended_at": datetime.now(UTC),
                    "outcome": outcome,
                    "answer": answer,
                    "reason": reason,
                    "steps": steps,
                }
            )
            self._rewrite_manifest()
            self._close_events()
            return event

    def add_reward(
        self, reward: float | None = None, success: bool | None = None, note: str = ""
    ) -> RewardEvent:
        """Appends a reward event and records it in the manifest; allowed after finish()."""
        with self._lock:
            step = self._manifest.steps
            event = RewardEvent(
                t=self.elapsed(), step=step, reward=reward, success=success, note=note
            )
            if self._events is None:
                # Finished: append through a short-lived handle.
                try:
                    with open(self.path / EVENTS_FILE, "ab", opener=_private) as handle:
                        self._write_line(handle, event)
                except OSError as error:
                    raise RecordingError(
                        f"cannot append to {self.path / EVENTS_FILE}: {error}"
                    ) from error
            else:
                self._append(event)
            update: dict[str, Any] = {"reward_note": note}
            if reward is not None:
                update["reward"] = reward
            if success is not None:
                update["success"] = success
            self._manifest = self._manifest.model_copy(update=update)
            self._rewrite_manifest()
            return event

    def close(self) -> None:
        """Closes the events file without an end event (a recording that never ended)."""
        with self._lock:
            self._close_events()

    def _append(self, event: Event) -> None:
        if self._events is None:
            raise RecordingError(f"recording {self.path} is finished or closed")
        try:
            self._write_line(self._events, event)
        except OSError as error:
            raise RecordingError(f"cannot append to {self.path / EVENTS_FILE}: {error}") from error

    @staticmethod
    def _write_line(handle: IO[bytes], event: Event) -> None:
        # One write() per line: a crash leaves at most one truncated last line.
        handle.write(event.model_dump_json().encode() + b"\n")
        handle.flush()
        os.fsync(handle.fileno())

    def _rewrite_manifest(self) -> None:
        try:
            _write_durably(self.path / MANIFEST_FILE, _dump_manifest(self._manifest))
        except OSError as error:
            raise RecordingError(f"cannot write {self.path / MANIFEST_FILE}: {error}") from error

    def _close_events(self) -> None:
        if self._events is not None:
            self._events.close()
            self._events = None


def _dump_manifest(manifest: Manifest) -> bytes:
    return (
        json.dumps(manifest.model_dump(mode="json"), indent=2, ensure_ascii=False).encode() + b"\n"
    )
