"""VNC (RFB) internals of the `vnc` backend; see `holodesk.platform.vnc.backend`."""
