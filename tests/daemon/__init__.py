"""Daemon tests."""
