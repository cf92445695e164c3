"""The web target: a headless Chromium page as a platform backend (see browser.py)."""
