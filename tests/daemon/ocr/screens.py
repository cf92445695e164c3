"""Screenshots rendered with Pillow and a real TrueType font, with every element's
position known, so OCR results can be checked against ground truth."""

from __future__ import annotations

import io
from dataclasses import dataclass, field
from pathlib import Path

from PIL import Image, ImageDraw, ImageFont

FONT_DIR = Path("/usr/share/fonts/truetype/dejavu")
SANS = FONT_DIR / "DejaVuSans.ttf"
SANS_BOLD = FONT_DIR / "DejaVuSans-Bold.ttf"

Box = tuple[int, int, int, int]  # left, top, right, bottom


@dataclass
class Screen:
    image: Image.Image
    # Ink box of each text, by the text.
    texts: dict[str, Box] = field(default_factory=dict)
    # Input fields, by the label they belong to.
    fields: dict[str, Box] = field(default_factory=dict)
    # Buttons' outer boxes, by their text.
    buttons: dict[str, Box] = field(default_factory=dict)

    def resized(self, width: int, height: int) -> Screen:
        """What a client sends after downsizing: the image and every box scaled."""
        sx, sy = width / self.image.width, height / self.image.height

        def scale(box: Box) -> Box:
            left, top, right, bottom = box
            return (round(left * sx), round(top * sy), round(right * sx), round(bottom * sy))

        return Screen(
            self.image.resize((width, height), Image.Resampling.LANCZOS),
            {k: scale(v) for k, v in self.texts.items()},
            {k: scale(v) for k, v in self.fields.items()},
            {k: scale(v) for k, v in self.buttons.items()},
        )

    def png(self) -> bytes:
        buffer = io.BytesIO()
        self.image.save(buffer, format="PNG")
        return buffer.getvalue()


class _Painter:
    def __init__(self, screen: Screen, size: int = 14) -> None:
        self.screen = screen
        self.draw = ImageDraw.Draw(screen.image)
        self.font = ImageFont.truetype(str(SANS), size)

    def text(
        self,
        xy: tuple[int, int],
        text: str,
        fill: tuple[int, int, int] = (20, 20, 20),
        font: ImageFont.FreeTypeFont | None = None,
    ) -> Box:
        font = font or self.font
        self.draw.text(xy, text, font=font, fill=fill)
        left, top, right, bottom = self.draw.textbbox(xy, text, font=font)
        box = (int(left), int(top), int(right), int(bottom))
        self.screen.texts[text] = box
        return box

    def button(
        self,
        box: Box,
        text: str,
        fill: tuple[int, int, int] = (225, 225, 225),
        ink: tuple[int, int, int] = (20, 20, 20),
    ) -> None:
        self.draw.rounded_rectangle(box, radius=4, fill=fill, outline=(110, 110, 110))
        left, top, right, bottom = self.draw.textbbox((0, 0), text, font=self.font)
        x = (box[0] + box[2] - (right - left)) // 2 - left
        y = (box[1] + box[3] - (bottom - top)) // 2 - top
        self.text((x, y), text, fill=ink)
        self.screen.buttons[text] = box

    def field(
        self, label: str, box: Box, background: tuple[int, int, int] = (255, 255, 255)
    ) -> None:
        self.draw.rectangle(box, fill=background, outline=(130, 130, 130))
        self.screen.fields[label] = box


def form_screen() -> Screen:
    """A 1280x800 desktop app: menu bar, a form, buttons (one dark), a list."""
    screen = Screen(Image.new("RGB", (1280, 800), (236, 236, 236)))
    paint = _Painter(screen)
    paint.draw.rectangle((0, 0, 1279, 27), fill=(250, 250, 250))
    for i, menu in enumerate(("File", "Edit", "View", "Help")):
        paint.text((12 + 64 * i, 6), menu)
    paint.text((40, 80), "Customer details", font=ImageFont.truetype(str(SANS_BOLD), 20))
    # Labels left of their fields, vertically centred on them.
    paint.text((40, 136), "Name:")
    paint.field("Name:", (170, 128, 520, 156))
    paint.text((40, 186), "Email address:")
    paint.field("Email address:", (170, 178, 520, 206))
    # A label above its (taller) field.
    paint.text((40, 240), "Comments")
    paint.field("Comments", (40, 262, 520, 360))
    paint.button((1040, 740, 1140, 772), "OK")
    paint.button((1152, 740, 1252, 772), "Cancel")
    paint.button((40, 400, 220, 436), "Save changes", fill=(45, 55, 75), ink=(255, 255, 255))
    paint.text((700, 136), "Déjà vu au café")
    paint.draw.rectangle((700, 240, 980, 460), fill=(255, 255, 255), outline=(130, 130, 130))
    for i, fruit in enumerate(("Apple", "Banana", "Cherry", "Dragon fruit")):
        paint.text((712, 252 + 30 * i), fruit)
    return screen


def tk_like_screen() -> Screen:
    """The demo app's look: white window, a white entry with a sunken 2 px border."""
    screen = Screen(Image.new("RGB", (900, 520), (255, 255, 255)))
    paint = _Painter(screen, size=20)
    paint.text((40, 40), "Sign up", font=ImageFont.truetype(str(SANS_BOLD), 28))
    paint.text((40, 120), "Name")
    box = (130, 112, 470, 148)
    paint.draw.rectangle(box, fill=(255, 255, 255))
    # Sunken relief: dark top/left, light bottom/right.
    paint.draw.line((box[0], box[1], box[2], box[1]), fill=(130, 130, 130), width=2)
    paint.draw.line((box[0], box[1], box[0], box[3]), fill=(130, 130, 130), width=2)
    paint.draw.line((box[0], box[3], box[2], box[3]), fill=(220, 220, 220), width=2)
    paint.draw.line((box[2], box[1], box[2], box[3]), fill=(220, 220, 220), width=2)
    screen.fields["Name"] = box
    paint.button((130, 190, 250, 232), "Submit")
    return screen
