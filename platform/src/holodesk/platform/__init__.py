"""holodesk."""
