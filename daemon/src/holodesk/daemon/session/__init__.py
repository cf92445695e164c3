"""A session's life: the registry, the runner of a RunSession stream, its events and
their observers (the recorder, the live view), and the frames it keeps (deltas,
the frame budget, the decoded screens).

Imports the floor (frames, actions, geometry, errors, steps) and policies; never
the gRPC server or services.
"""
