"""Values both sides of the contract assume when nobody says otherwise.

One home for them, so the daemon's default address and the clients' default server
can never drift apart.
"""

from __future__ import annotations

# Where holodeskd listens (--listen) and where clients look for it (--server).
DEFAULT_ADDRESS = "127.0.0.1:50051"
