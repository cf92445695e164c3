"""Everything the tray does, without a tray: start a task, pause, resume, emergency
stop, switch server, open the live view and the last report. Menu callbacks (any thread) call these;
sessions run on the controller's own event-loop thread, one at a time."""

from __future__ import annotations

import asyncio
import concurrent.futures
import threading
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path

from holodesk.client.events import Outcome, Started
from holodesk.client.outcome import SessionOutcome, StepRecord
from holodesk.client.pause import PauseGate
from holodesk.client.session import SessionOptions, run_session
from holodesk.client.tray.state import ServerProfile, TrayState, TrayStatus
from holodesk.platform.base import Backend
from holodesk.platform.errors import PlatformError

# Writes a report of a finished session and returns its path (None: no report).
ReportWriter = Callable[[str, SessionOutcome], Path | None]

# The live view `holodeskd --web HOST:PORT` serves by default.
DEFAULT_LIVE_VIEW = "http://127.0.0.1:50080/"


class TrayController:
    def __init__(
        self,
        servers: Sequence[ServerProfile],
        open_backend: Callable[[], Backend],
        *,
        ask_task: Callable[[], str | None],
        open_path: Callable[[Path], object],
        open_url: Callable[[str], object] | None = None,
        live_view_url: str = DEFAULT_LIVE_VIEW,
        write_report: ReportWriter | None = None,
        session_options: SessionOptions | None = None,
        on_change: Callable[[TrayStatus], None] | None = None,
    ) -> None:
        if not servers:
            raise ValueError("the tray needs at least one server")
        names = [s.name for s in servers]
        if len(set(names)) != len(names):
            raise ValueError(f"server names must be unique: {names}")
        self._servers = {s.name: s for s in servers}
        self._server = servers[0]
        self._open_backend = open_backend
        self._ask_task = ask_task
        self._open_path = open_path
        self._open_url = open_url
        self._live_view_url = live_view_url
        self._write_report = write_report
        self._options = session_options or SessionOptions()
        self._on_change = on_change
        self._lock = threading.Lock()
        self._status = TrayStatus(TrayState.IDLE, self._server.name)
        self._gate = PauseGate()
        self._running: concurrent.futures.Future[None] | None = None
        self._session: asyncio.Future[SessionOutcome] | None = None
        self._stopped_by_user = False
        self._idle = threading.Condition()
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(
            target=self._loop.run_forever, name="holodesk-tray-sessions", daemon=True
        )
        self._thread.start()

    # -- what the menu shows ----------------------------------------------------------

    @property
    def status(self) -> TrayStatus:
        return self._status

    @property
    def servers(self) -> tuple[str, ...]:
        return tuple(self._servers)

    @property
    def address(self) -> str:
        """HOST:PORT of the daemon sessions start against."""
        return self._server.address

    @property
    def live_view_url(self) -> str:
        return self._live_view_url

    @property
    def busy(self) -> bool:
        return self._status.state in (TrayState.RUNNING, TrayState.PAUSED)

    # -- what the menu does -----------------------------------------------------------

    def start_task(self, task: str | None = None) -> bool:
        """Starts a session (asking for the task when none is given); False when
        one is already running or the user gave no task."""
        if self.busy:
            return False
        task = task if task is not None else self._ask_task()
        if not task or not task.strip():
            return False
        with self._lock:
            if self.busy:
                return False
            self._gate.resume()
            self._stopped_by_user = False
            self._set(TrayStatus(TrayState.RUNNING, self._server.name, task=task.strip()))
            self._running = asyncio.run_coroutine_threadsafe(
                self._run(self._server, task.strip()), self._loop
            )
        return True

    def pause(self) -> bool:
        if self._status.state is not TrayState.RUNNING:
            return False
        self._gate.pause()
        self._set(replace(self._status, state=TrayState.PAUSED))
        return True

    def resume(self) -> bool:
        if self._status.state is not TrayState.PAUSED:
            return False
        self._gate.resume()
        self._set(replace(self._status, state=TrayState.RUNNING))
        return True

    def emergency_stop(self) -> bool:
        """Stops the session now: the action in progress is its last, held keys and
        buttons are released, the daemon is told."""
        if not self.busy:
            return False
        self._stopped_by_user = True
        self._loop.call_soon_threadsafe(self._cancel_session)
        return True

    def select_server(self, name: str) -> bool:
        if name not in self._servers:
            raise ValueError(f"unknown server {name!r}: one of {', '.join(self._servers)}")
        if self.busy:
            return False
        self._server = self._servers[name]
        self._set(TrayStatus(TrayState.IDLE, name))
        return True

    def open_last_report(self) -> bool:
        report = self._status.report
        if report is None or not report.exists():
            return False
        self._open_path(report)
        return True

    def open_live_view(self) -> bool:
        """Opens the daemon's live view in the browser; False when no opener is set."""
        if self._open_url is None:
            return False
        self._open_url(self._live_view_url)
        return True

    def wait_idle(self, timeout: float | None = None) -> TrayStatus:
        """Blocks until no session runs (for the Quit entry and tests)."""
        with self._idle:
            self._idle.wait_for(lambda: not self.busy, timeout)
        return self._status

    def close(self, timeout: float = 10.0) -> None:
        self.emergency_stop()
        self.wait_idle(timeout)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout)

    # -- the session ------------------------------------------------------------------

    async def _run(self, server: ServerProfile, task: str) -> None:
        try:
            backend = await asyncio.to_thread(self._open_backend)
        except PlatformError as error:
            self._finish(TrayStatus(TrayState.ERROR, server.name, task, detail=str(error)))
            return
        options = replace(
            self._options,
            channel=server.channel,
            pause=self._gate,
            on_started=self._started,
            on_step=self._stepped,
        )
        self._session = asyncio.ensure_future(run_session(server.address, task, backend, options))
        if self._stopped_by_user:  # stopped before the session even started
            self._session.cancel()
        try:
            outcome = await self._session
        except asyncio.CancelledError:
            if not self._session.cancelled():
                raise  # the controller itself is shutting down
            # Cancelled before run_session could turn it into a CANCELLED outcome.
            outcome = SessionOutcome(Outcome.CANCELLED)
        except ValueError as error:  # settings the session refused before connecting
            outcome = SessionOutcome(Outcome.ERROR, reason=str(error))
        finally:
            self._session = None
            backend.close()
        if self._stopped_by_user:
            outcome = replace(outcome, reason="emergency stop from the tray")
        self._finish(self._ended_status(server, task, outcome))

    def _cancel_session(self) -> None:
        # On the loop thread: run_session's own stop path handles the cancellation.
        if self._session is not None and not self._session.done():
            self._session.cancel()

    def _ended_status(
        self, server: ServerProfile, task: str, outcome: SessionOutcome
    ) -> TrayStatus:
        report = None
        if self._write_report is not None:
            report = self._write_report(task, outcome)
        detail = outcome.outcome.value
        if outcome.answer:
            detail += f": {outcome.answer}"
        elif outcome.reason:
            detail += f": {outcome.reason}"
        state = TrayState.ERROR if outcome.outcome is Outcome.ERROR else TrayState.IDLE
        return TrayStatus(
            state,
            server.name,
            task,
            session_id=outcome.session_id,
            step=outcome.steps,
            detail=detail,
            has_report=report is not None,
            report=report,
        )

    def _started(self, started: Started) -> None:
        self._set(replace(self._status, session_id=started.session_id))

    def _stepped(self, record: StepRecord) -> None:
        self._set(replace(self._status, step=record.step))

    # -- state ------------------------------------------------------------------------

    def _finish(self, status: TrayStatus) -> None:
        with self._idle:
            self._set(status)
            self._idle.notify_all()

    def _set(self, status: TrayStatus) -> None:
        self._status = status
        if self._on_change is not None:
            self._on_change(status)
