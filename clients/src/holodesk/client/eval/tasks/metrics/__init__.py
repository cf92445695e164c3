"""Metrics: compare what the getters read with what was expected, giving a score in
[0, 1]; OSWorld's names and arguments, one module per kind (registry.py takes each
module's METRICS mapping)."""
