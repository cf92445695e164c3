"""Tests of holodesk.values: the contract's plain values and rules."""
