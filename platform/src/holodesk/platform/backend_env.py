"""The environment variable that names the platform backend, pynput-style.

Read by `select` (the one place that opens backends) and named in the advice of
the Linux session's choice (`wayland.choice`), which `select` itself consults: a
leaf of its own, so neither has to import the other for it.
"""

BACKEND_ENV = "HOLODESK_PLATFORM_BACKEND"
