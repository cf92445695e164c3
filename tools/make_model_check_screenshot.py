"""Draw the screenshot `holodesk model check` runs a model on, and record its target.

The picture is the demo's form (clients/src/holodesk/client/demo/form_app.py) in a
window on a plain desktop, 1280x800, drawn with Pillow and the DejaVu fonts: a
"Sign up" heading, a Name field and a Submit button. The Submit button's box is
fixed by the layout below (not measured from rendered text), so it does not
depend on the font version; the JSON beside the PNG records it, with the
localization description and the navigation task that target it.

    uv run python tools/make_model_check_screenshot.py [OUT_DIR]

OUT_DIR defaults to the daemon package's bundled assets. Needs fonts-dejavu-core.
"""

from __future__ import annotations

import json
import sys
from dataclasses import asdict, dataclass
from pathlib import Path

from PIL import Image, ImageDraw, ImageFont

ASSETS = Path(__file__).resolve().parents[1] / "daemon/src/holodesk/daemon/model_check/assets"
NAME = "form-1280x800"
SIZE = (1280, 800)
FONT_DIRS = (Path("/usr/share/fonts/truetype/dejavu"), Path("/usr/share/fonts/dejavu"))

DESKTOP = (58, 110, 165)
WINDOW = (255, 255, 255)
TITLE_BAR = (228, 228, 232)
TEXT = (20, 20, 20)
FIELD_BORDER = (120, 120, 128)
BUTTON = (225, 225, 225)
BUTTON_BORDER = (90, 90, 96)


@dataclass(frozen=True)
class Box:
    x: int
    y: int
    width: int
    height: int

    @property
    def corners(self) -> tuple[int, int, int, int]:
        """(left, top, right, bottom), inclusive, as Pillow draws rectangles."""
        return (self.x, self.y, self.x + self.width - 1, self.y + self.height - 1)


@dataclass(frozen=True)
class Layout:
    window: Box
    title_bar: Box
    heading_at: tuple[int, int]
    label_at: tuple[int, int]
    field: Box
    submit: Box


def layout() -> Layout:
    """Where everything is: the demo's window (900x520) centred on the desktop."""
    window = Box(190, 140, 900, 520)
    inner_x, inner_y = window.x + 40, window.y + 36 + 40
    return Layout(
        window=window,
        title_bar=Box(window.x, window.y, window.width, 36),
        heading_at=(inner_x, inner_y),
        label_at=(inner_x, inner_y + 92),
        field=Box(inner_x + 130, inner_y + 84, 420, 48),
        submit=Box(inner_x + 130, inner_y + 172, 140, 52),
    )


def record(box: Box) -> dict[str, object]:
    """The JSON written beside the PNG."""
    return {
        "image": f"{NAME}.png",
        "width": SIZE[0],
        "height": SIZE[1],
        "target": asdict(box),
        "locate": "the Submit button",
        "task": "Submit the sign-up form: click the Submit button.",
    }


def _font(name: str, size: int) -> ImageFont.FreeTypeFont:
    for folder in FONT_DIRS:
        if (folder / name).exists():
            return ImageFont.truetype(str(folder / name), size)
    raise SystemExit(f"{name} not found in {FONT_DIRS}: install fonts-dejavu-core")


def render(plan: Layout) -> Image.Image:
    regular, bold = _font("DejaVuSans.ttf", 20), _font("DejaVuSans-Bold.ttf", 28)
    image = Image.new("RGB", SIZE, DESKTOP)
    draw = ImageDraw.Draw(image)
    draw.rectangle(plan.window.corners, fill=WINDOW, outline=(40, 40, 40))
    draw.rectangle(plan.title_bar.corners, fill=TITLE_BAR)
    title = plan.title_bar
    draw.text(
        (title.x + 14, title.y + 8), "holodesk demo", font=_font("DejaVuSans.ttf", 15), fill=TEXT
    )
    draw.text(plan.heading_at, "Sign up", font=bold, fill=TEXT)
    draw.text(plan.label_at, "Name", font=regular, fill=TEXT)
    draw.rectangle(plan.field.corners, fill=WINDOW, outline=FIELD_BORDER, width=2)
    button = plan.submit
    draw.rectangle(button.corners, fill=BUTTON, outline=BUTTON_BORDER, width=2)
    centre = (button.x + button.width / 2, button.y + button.height / 2)
    draw.text(centre, "Submit", font=regular, fill=TEXT, anchor="mm")
    return image


def write(folder: Path) -> tuple[Path, Path]:
    plan = layout()
    folder.mkdir(parents=True, exist_ok=True)
    png, meta = folder / f"{NAME}.png", folder / f"{NAME}.json"
    render(plan).save(png, format="PNG", optimize=True)
    meta.write_text(json.dumps(record(plan.submit), indent=2) + "\n", encoding="utf-8")
    return png, meta


def main() -> None:
    folder = Path(sys.argv[1]) if len(sys.argv) > 1 else ASSETS
    for path in write(folder):
        print(path)


if __name__ == "__main__":
    main()
