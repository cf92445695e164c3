"""Test helpers shared across test folders."""
