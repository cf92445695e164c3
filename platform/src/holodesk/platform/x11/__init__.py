"""X11 internals of the `x11` backend (python-xlib); see `holodesk.platform.x11.backend`."""
