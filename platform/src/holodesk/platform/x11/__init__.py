"""X11 internals of the `x11` backend (python-xlib); see `holodesk.platform.backends.x11`."""
