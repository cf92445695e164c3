"""`holodesk service`: the client as a per-user service (install, uninstall, status)."""
