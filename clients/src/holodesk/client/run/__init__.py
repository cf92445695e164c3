"""`holodesk run`: one agent session on this desktop."""
