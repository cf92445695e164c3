"""OS facilities behind the client's safety rules (the emergency-stop hotkey)."""
