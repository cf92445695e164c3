"""Getters: what an evaluator reads of the application's real state after the
session (files, command output, the browser's tabs); one module per kind, each a
GETTERS mapping the registry takes in (registry.py)."""
