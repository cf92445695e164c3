"""`holodesk doctor`: checks that this machine can run agents, each finding with its fix.

- `findings`: what a check reports (status, what was found, how to fix it);
- `route`: on a Wayland session, the route the backend takes, why, what to approve;
- `machine`: display, capture, input, permissions and the emergency-stop hotkey,
  all through the platform layer's public API;
- `daemon`: reachability (health and server info, timed), each policy's pinning,
  authentication, clock;
- `tls`: the daemon's certificate (verification, hostname, expiry).

The command itself (flags, table, exit status) is `holodesk.client.doctor.command`.
"""
