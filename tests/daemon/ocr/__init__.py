"""Tests of the OCR baseline policy."""
