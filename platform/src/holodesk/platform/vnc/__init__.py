"""VNC (RFB) internals of the `vnc` backend; see `holodesk.platform.backends.vnc`."""
