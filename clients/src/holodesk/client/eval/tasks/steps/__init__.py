"""Set-up steps (`config` and `postconfig`), one module per kind of thing they touch;
each module's STEPS mapping goes into the registry (registry.py)."""
