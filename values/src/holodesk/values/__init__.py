"""The contract's plain values and rules, in one home (issue 19).

Client, daemon, platform and data each import from here instead of keeping copies
that a test must hold equal. Nothing here imports protobuf, gRPC, the OS or any
other part of holodesk, so every distribution may depend on it.
"""
