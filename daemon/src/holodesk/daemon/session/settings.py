"""What every RunSession stream of one daemon runs under (the server's flags).

Apart from the runner so the pieces a stream is made of (session_runner.py, the frame
intake, the client stream) read one frozen value instead of each other.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from holodesk.daemon.frames import FrameLimits
from holodesk.daemon.session.decoded_screens import DecodedScreens
from holodesk.daemon.session.recorder import Recorder


@dataclass(frozen=True)
class SessionSettings:
    frame_limits: FrameLimits
    # Default and ceiling for a session's steps.
    max_steps: int
    # How long the policy may take for one step; 0: no limit.
    step_timeout_s: float = 0.0
    # How long the client may take for its SessionStart, and then for its first
    # observation (after a start or a resume); 0: no limit.
    first_observation_timeout_s: float = 0.0
    # How long the client may take for each later observation; 0: no limit.
    idle_timeout_s: float = 0.0
    # Log each task's text in full at INFO (--log-task); otherwise only its length,
    # since a task may hold what its user would not want in a log.
    log_task: bool = False
    # Session recordings (issue 7): opened here, then fed by the session's events
    # (the recorder is one of the registry's observers); None: nothing is recorded.
    recorder: Recorder | None = field(default=None, compare=False, repr=False)
    # Offer clients delta frames (FrameSpec.accept_deltas; see frame_deltas.py).
    accept_deltas: bool = True
    # Screens rebuilt lately, shared by all sessions (None: every delta decodes its base).
    decoded_screens: DecodedScreens | None = field(default=None, compare=False, repr=False)
