"""ComputerService: external agents drive desktops that holodesk clients attached.

The rules (who may drive what, exactly-once ids, statuses) are the contract's,
written in protos/holodesk/v1/computer.proto; the queues and the id store live
in attached_desktops.py, the relay into the desktop's session in computer_policy.py.
"""

from __future__ import annotations

import asyncio
from typing import Any

from holodesk.daemon import actions as act
from holodesk.daemon import convert, frame_pixels
from holodesk.daemon.errors import (
    FailedPrecondition,
    InvalidArgument,
    PermissionDenied,
    Unavailable,
)
from holodesk.daemon.rpc import computer_convert
from holodesk.daemon.rpc.auth import current_principal
from holodesk.daemon.session.attached_desktops import (
    AttachedDesktops,
    Batch,
    Desktop,
    Entry,
    FrameGeometry,
)
from holodesk.daemon.session.registry import SessionRegistry
from holodesk.proto.v1 import computer_pb2, computer_pb2_grpc, frame_pb2


class ComputerService(computer_pb2_grpc.ComputerServiceServicer):
    def __init__(self, desktops: AttachedDesktops, registry: SessionRegistry) -> None:
        self._desktops = desktops
        self._registry = registry

    async def ListDesktops(  # noqa: N802
        self, request: computer_pb2.ListDesktopsRequest, context: Any
    ) -> computer_pb2.ListDesktopsResponse:
        caller = current_principal()
        listed = []
        for desktop in self._desktops.all():
            session = self._desktops.session(desktop)
            if session is None or not caller.may_drive(desktop.owner):
                continue
            listed.append(
                computer_convert.desktop_info_to_pb(desktop.name, session, desktop.latest)
            )
        return computer_pb2.ListDesktopsResponse(desktops=listed)

    async def GetFrame(  # noqa: N802
        self, request: computer_pb2.GetFrameRequest, context: Any
    ) -> computer_pb2.GetFrameResponse:
        desktop = self._desktop(request)
        if request.refresh:
            batch = Batch((), (), (), asyncio.get_running_loop().create_future())
            await self._run(desktop, batch, ())
        return computer_pb2.GetFrameResponse(frame=await self._frame(desktop))

    async def Act(  # noqa: N802
        self, request: computer_pb2.ActRequest, context: Any
    ) -> computer_pb2.ActResponse:
        desktop = self._desktop(request)
        if not request.actions:
            raise InvalidArgument("actions", "give at least one action")
        entries: list[Entry] = []
        fresh: list[tuple[Entry, act.ActionKind, FrameGeometry | None]] = []
        seen_ids: set[str] = set()
        loop = asyncio.get_running_loop()
        for index, action in enumerate(request.actions):
            where = f"actions[{index}]"
            action_id = action.action_id
            if not action_id:
                raise InvalidArgument(f"{where}.action_id", "required (an id you choose, unique)")
            if action_id in seen_ids:
                raise InvalidArgument(f"{where}.action_id", f"{action_id!r} appears twice")
            seen_ids.add(action_id)
            kind = computer_convert.action_kind_from_pb(action, where)
            fingerprint = action.SerializeToString(deterministic=True)
            known = desktop.store.get(action_id)
            if known is not None:
                if known.fingerprint != fingerprint:
                    raise InvalidArgument(
                        f"{where}.action_id",
                        f"{action_id!r} was already used on this desktop for another action",
                    )
                entries.append(known)
                continue
            geometry: FrameGeometry | None = None
            if act.has_coordinates(kind):
                if not action.frame_id:
                    raise InvalidArgument(
                        f"{where}.frame_id", "required: the frame whose pixels the point is in"
                    )
                geometry = desktop.geometry(action.frame_id, f"{where}.frame_id")
            entry = Entry(action_id, fingerprint, loop.create_future())
            entries.append(entry)
            fresh.append((entry, kind, geometry))
        if fresh:
            batch = Batch(
                tuple(e for e, _, _ in fresh),
                tuple(k for _, k, _ in fresh),
                tuple(g for _, _, g in fresh),
                loop.create_future(),
            )
            await self._run(desktop, batch, tuple(entries))
        else:
            await self._results(desktop, tuple(entries))
        results = [convert.result_to_pb(e.result.result()) for e in entries]
        response = computer_pb2.ActResponse(results=results)
        if desktop.latest is not None:
            response.frame_id = desktop.latest.frame_id
            if request.include_frame:
                response.frame.CopyFrom(await self._frame(desktop))
        return response

    # Helpers -------------------------------------------------------------------------

    def _desktop(self, request: computer_pb2.GetFrameRequest | computer_pb2.ActRequest) -> Desktop:
        convert.check_limits(request)
        if not request.desktop_id:
            raise InvalidArgument("desktop_id", "required (ListDesktops names them)")
        desktop = self._desktops.get(request.desktop_id)
        caller = current_principal()
        if not caller.may_drive(desktop.owner):
            raise PermissionDenied(
                f"{caller.name} may not drive desktop {desktop.name!r}: an operator drives "
                "the desktops it attached and those its credentials entry lists in drives; "
                "an admin drives any",
                principal=caller.name,
            )
        if self._registry.shutting_down.is_set():
            raise Unavailable("the daemon is shutting down", retry_after_s=5.0)
        if desktop.lost.done():
            raise Unavailable(
                f"desktop {desktop.name!r} is detached: its stream dropped; retry once its "
                "client resumes",
                retry_after_s=1.0,
            )
        return desktop

    async def _run(self, desktop: Desktop, batch: Batch, entries: tuple[Entry, ...]) -> None:
        """Queue the batch and wait for it, then for every entry's result."""
        desktop.submit(batch)
        try:
            await self._wait(desktop, batch.done)
        except asyncio.CancelledError:
            desktop.withdraw(batch)  # the caller left: what never went out never runs
            raise
        # Raises what the batch failed with (detached mid-call, a point off the screen).
        batch.done.result()
        await self._results(desktop, entries)

    async def _results(self, desktop: Desktop, entries: tuple[Entry, ...]) -> None:
        for entry in entries:
            await self._wait(desktop, entry.result)

    async def _wait(self, desktop: Desktop, future: asyncio.Future[Any]) -> None:
        """Until `future` is done, or the desktop's stream drops (UNAVAILABLE)."""
        if future.done():
            return
        lost = desktop.lost
        await asyncio.wait([future, lost], return_when=asyncio.FIRST_COMPLETED)
        if not future.done():
            raise Unavailable(
                f"desktop {desktop.name!r} detached while actions were on it: their results "
                "are known once its client resumes (send the same ids again then)",
                retry_after_s=1.0,
            )

    async def _frame(self, desktop: Desktop) -> frame_pb2.Frame:
        frame = desktop.latest
        if frame is None:
            raise FailedPrecondition(f"desktop {desktop.name}", "has sent no frame yet")
        whole = desktop.latest_standalone
        if whole is None or whole.frame_id != frame.frame_id:
            # A delta frame: paint it into one image (off the loop), once per frame.
            whole = await asyncio.to_thread(frame_pixels.standalone, frame)
            if desktop.latest is frame:
                desktop.latest_standalone = whole
        return convert.frame_to_pb(whole)
