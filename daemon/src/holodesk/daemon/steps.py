"""What a policy and a dialect are handed to decide one step: the StepContext.

It sits on the daemon's floor (beside frames, actions, geometry) so that dialects,
which build prompts from it, import nothing above them: not policies/, not the
session machinery. The screens the session keeps decoded reach it through the
narrow DecodedLookup protocol (holodesk.daemon.session.decoded_screens satisfies it).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol

from PIL import Image

from holodesk.daemon.actions import HistoryStep
from holodesk.daemon.frames import EncodedFrame
from holodesk.daemon.generation import Sampling


class DecodedLookup(Protocol):
    """Where the daemon may hold a frame's pixels decoded already, by content key."""

    def peek(self, content_key: str) -> Image.Image | None:
        """The screen's pixels, to read (never to paint), or None if not held."""
        ...


@dataclass(frozen=True)
class StepContext:
    session_id: str
    task: str
    # 1-based number of the step being decided.
    step: int
    # The history window, oldest first; the last one is the screen now.
    frames: tuple[EncodedFrame, ...]
    # Earlier steps, oldest first, with the results the client reported.
    history: tuple[HistoryStep, ...] = ()
    # The human's answer to the previous step's ask_user, if any.
    user_reply: str = ""
    # An operator's note from handing the desktop back after a take-over (the live
    # view, ControlService.ResumeSession): dialects put it into this step's prompt.
    operator_note: str = ""
    # Sampling asked for in SessionStart; None takes the policy's defaults.
    sampling: Sampling | None = None
    # The client's ClientInfo.os ("linux", "darwin", "windows", "web", "vnc"; "" when
    # it did not say): a policy that presses keys picks the platform's (the OCR
    # baseline's select-all, policies/ocr/replace.py).
    client_os: str = ""
    # Screens the daemon decoded lately (rebuilding deltas), by content key: a policy
    # reads its model images from there rather than decoding the frames again.
    decoded: DecodedLookup | None = field(default=None, repr=False, compare=False)

    @property
    def frame(self) -> EncodedFrame:
        return self.frames[-1]

    def frame_steps(self) -> tuple[int, ...]:
        """The observation step each frame of the window was sent with."""
        first = self.step - len(self.frames) + 1
        return tuple(range(first, self.step + 1))
