"""A small rendered application that reacts to actions, for driving the OCR policy
through whole sessions: File menu -> Open dialog (slow to appear) -> type a file
name -> Enter. It renders with Pillow and a real font; OCR sees only pixels."""

from __future__ import annotations

import io
from dataclasses import dataclass, field

from PIL import Image, ImageDraw, ImageFont

from holodesk.daemon.actions import (
    ActionKind,
    ActionStatus,
    Click,
    KeyChord,
    TypeText,
    Wait,
)

from .screens import SANS, Box

WIDTH, HEIGHT = 1280, 800


@dataclass
class Desktop:
    # Looks at the screen during which the Open dialog is still missing after
    # "Open" was clicked.
    dialog_delay: int = 1
    # A field that takes typing but does not show it (as a broken app's would).
    hides_typing: bool = False
    menu_open: bool = False
    dialog_countdown: int | None = None
    focused_field: bool = False
    file_name: str = ""
    opened: str = ""
    log: list[str] = field(default_factory=list)
    # The keys of every chord pressed, in order.
    chords: list[tuple[str, ...]] = field(default_factory=list)
    _boxes: dict[str, Box] = field(default_factory=dict)

    @property
    def dialog_open(self) -> bool:
        return self.dialog_countdown == 0

    def png(self) -> bytes:
        """The screen now; each look brings a slow dialog closer."""
        if self.dialog_countdown is not None and self.dialog_countdown > 0:
            self.dialog_countdown -= 1
        buffer = io.BytesIO()
        self._render().save(buffer, format="PNG")
        return buffer.getvalue()

    def apply(self, action: ActionKind) -> tuple[ActionStatus, str]:
        """Carry out one action: its status and error, as a client reports them."""
        self.log.append(type(action).__name__)
        if isinstance(action, Click):
            self._click(action.point.x, action.point.y)
        elif isinstance(action, TypeText):
            if not self.focused_field:
                return ActionStatus.FAILED, "no field has the focus"
            self.file_name += action.text
        elif isinstance(action, KeyChord):
            self.chords.append(action.keys)
            if action.keys == ("enter",) and self.dialog_open:
                self.opened, self.dialog_countdown = self.file_name, None
        elif not isinstance(action, Wait):
            return ActionStatus.REJECTED, "not supported here"
        return ActionStatus.OK, ""

    def _click(self, x: float, y: float) -> None:
        hit = next((name for name, b in self._boxes.items() if _inside(x, y, b)), None)
        self.focused_field = hit == "field"
        if hit == "File":
            self.menu_open = not self.menu_open
        elif hit == "Open" and self.menu_open:
            # Counted down by each look: shown on the (delay + 1)th look after this.
            self.menu_open, self.dialog_countdown = False, self.dialog_delay + 1
        else:
            self.menu_open = False

    def _render(self) -> Image.Image:
        image = Image.new("RGB", (WIDTH, HEIGHT), (236, 236, 236))
        draw = ImageDraw.Draw(image)
        font = ImageFont.truetype(str(SANS), 14)
        self._boxes = {}
        draw.rectangle((0, 0, WIDTH - 1, 27), fill=(250, 250, 250))
        self._boxes["File"] = _padded(draw.textbbox((12, 6), "File", font=font), 6)
        draw.text((12, 6), "File", font=font, fill=(20, 20, 20))
        draw.text((76, 6), "Edit", font=font, fill=(20, 20, 20))
        status = f"Opened {self.opened}" if self.opened else "No document"
        draw.text((40, 760), status, font=font, fill=(20, 20, 20))
        if self.menu_open:
            draw.rectangle((4, 28, 180, 130), fill=(255, 255, 255), outline=(150, 150, 150))
            for i, item in enumerate(("New", "Open", "Quit")):
                xy = (20, 38 + 30 * i)
                draw.text(xy, item, font=font, fill=(20, 20, 20))
                self._boxes[item] = _padded(draw.textbbox(xy, item, font=font), 8)
        if self.dialog_open:
            draw.rectangle((340, 220, 940, 480), fill=(245, 245, 245), outline=(90, 90, 90))
            draw.text((370, 240), "Open document", font=font, fill=(20, 20, 20))
            draw.text((370, 310), "File name:", font=font, fill=(20, 20, 20))
            field_box = (480, 300, 900, 332)
            draw.rectangle(field_box, fill=(255, 255, 255), outline=(130, 130, 130))
            shown = "" if self.hides_typing else self.file_name
            draw.text((488, 308), shown, font=font, fill=(20, 20, 20))
            self._boxes["field"] = field_box
        return image


def _padded(box: tuple[float, float, float, float], pad: int) -> Box:
    return (int(box[0]) - pad, int(box[1]) - pad, int(box[2]) + pad, int(box[3]) + pad)


def _inside(x: float, y: float, box: Box) -> bool:
    return box[0] <= x <= box[2] and box[1] <= y <= box[3]
