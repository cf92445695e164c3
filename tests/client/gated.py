"""A fake backend whose typing of one text blocks until the test opens a gate.

It lets a test break the stream while an action is provably running, and then
let that action complete: the real interface, with one controllable delay.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence

from holodesk.platform.backends import fake
from holodesk.platform.base import DisplayInfo, Region
from holodesk.platform.errors import InputError


class GatedInput(fake.FakeInput):
    GATE_TEXT = "slow"

    def __init__(self, desktop: Region) -> None:
        super().__init__(desktop)
        self.entered = threading.Event()
        self.gate = threading.Event()

    def type_text(self, text: str) -> None:
        if text == self.GATE_TEXT:
            self.entered.set()
            if not self.gate.wait(60):
                raise InputError("the test never opened the gate")
        super().type_text(text)


class GatedBackend(fake.FakeBackend):
    input: GatedInput


def gated_backend(displays: Sequence[DisplayInfo] = fake.DEFAULT_DISPLAYS) -> GatedBackend:
    screen = fake.FakeScreen(displays)
    return GatedBackend(
        name="fake", os="fake", screen=screen, input=GatedInput(screen.virtual_desktop())
    )
