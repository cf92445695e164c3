"""Running the client as a per-user service in the graphical session, on every OS.

The client must run inside the user's desktop session (it needs the screen and the
input devices), never as a system service: a systemd --user unit on Linux, a
launchd LaunchAgent on macOS, a logon scheduled task on Windows. Each has a renderer
(pure, tested everywhere) and a manager that installs, removes and inspects it by
running the OS's own tool (systemctl, launchctl, schtasks) through a runner that
tests replace. `service_manager()` picks the one for this OS.
"""
