"""holodesk tests."""
