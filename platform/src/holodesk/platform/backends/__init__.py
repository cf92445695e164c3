"""The fake backend (for tests) and the backends not yet in a folder of their own
(wayland, wlroots); each module has `create(**options) -> Backend`; see `select`."""
