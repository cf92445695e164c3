"""Tests of the win32 backend's pure logic, against a fake of the Windows calls."""
