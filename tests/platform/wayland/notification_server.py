"""The headless KDE desktop's notification server: what plasmashell is on a real one.

KDE's portal tells the person at the desk about a remote-control session with a
notification (org.freedesktop.Notifications) instead of a dialog. A desktop
without a server leaves the portal waiting: with plasma-workspace installed, the
bus activates its stand-in (plasma_waitforname), which waits 25 s for a
plasmashell that never comes, and the portal's input calls stall meanwhile. This
server owns the name as plasmashell would and writes each notification it gets
to a JSON-lines file, so a test reads what the person was shown
(`tests.support.probe.read_json_lines`).

Run as a script by the desktop (its own process, stopped with the desktop):
``python notification_server.py BUS_ADDRESS LOG_FILE``.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from jeepney import HeaderFields, MessageType, new_error, new_method_return  # type: ignore[import-untyped]
from jeepney.bus_messages import message_bus  # type: ignore[import-untyped]
from jeepney.io.blocking import open_dbus_connection  # type: ignore[import-untyped]

NAME = "org.freedesktop.Notifications"
INTERFACE = NAME
PATH = "/org/freedesktop/Notifications"
NAME_OWNED = 1  # RequestName's "primary owner" reply
CAPABILITIES = ["body", "body-markup", "icon-static", "actions"]


def _reply(message: Any, count: int) -> tuple[Any, int]:
    """The reply to one method call, and the notification count after it."""
    member = message.header.fields.get(HeaderFields.member)
    if member == "Notify":
        count += 1
        return new_method_return(message, "u", (count,)), count
    if member == "GetCapabilities":
        return new_method_return(message, "as", (CAPABILITIES,)), count
    if member == "GetServerInformation":
        return new_method_return(message, "ssss", ("holodesk-tests", "holodesk", "1", "1.2")), count
    if member == "CloseNotification":
        return new_method_return(message), count
    unknown = "org.freedesktop.DBus.Error.UnknownMethod"
    return new_error(message, unknown, "s", (str(member),)), count


def serve(address: str, log: Path) -> None:
    connection = open_dbus_connection(bus=address)
    (owned,) = connection.send_and_get_reply(message_bus.RequestName(NAME, 0x4), timeout=10).body
    if owned != NAME_OWNED:
        raise SystemExit(f"{NAME} is owned already (RequestName answered {owned})")
    print("serving", flush=True)  # the desktop waits for the name, this is for the log
    count = 0
    with log.open("a", encoding="utf-8") as out:
        while True:
            message = connection.receive()
            fields = message.header.fields
            if message.header.message_type != MessageType.method_call:
                continue
            if fields.get(HeaderFields.interface) not in (INTERFACE, None):
                continue
            reply, count = _reply(message, count)
            if fields.get(HeaderFields.member) == "Notify":
                app, _replaces, icon, summary, body, *_rest = message.body
                record = {"app": app, "icon": icon, "summary": summary, "body": body}
                out.write(json.dumps(record) + "\n")
                out.flush()
            connection.send(reply)


if __name__ == "__main__":
    serve(sys.argv[1], Path(sys.argv[2]))
