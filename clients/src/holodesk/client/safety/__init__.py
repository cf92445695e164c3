"""The client's safety rules: what may run, how fast, with whose consent, what may be seen.

Safety lives on the client because the client is what touches the desktop: a
daemon (or a model) that misbehaves can only ever ask.
"""

from holodesk.client.safety.guard import SafetyGuard
from holodesk.client.safety.settings import SafetySettings

__all__ = ["SafetyGuard", "SafetySettings"]
