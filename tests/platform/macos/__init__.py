"""Tests of the quartz backend's pure logic, against a fake of the macOS calls."""
