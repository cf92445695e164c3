"""Tests of holodesk-platform."""
