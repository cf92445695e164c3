"""The fake backend, for tests: `fake.create(**options) -> Backend` (see `select`).

Every real backend lives in its own folder beside its machinery (`x11/`, `vnc/`,
`web/`, `windows/`, `macos/`, `wayland/`, `wlroots/`, each with `backend.py`); the
fake one has no machinery to live with, so it stays here."""
