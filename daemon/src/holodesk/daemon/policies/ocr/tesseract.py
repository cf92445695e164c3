"""Run the Tesseract command line on one image and parse its TSV word boxes.

The CLI (not a binding) because it is what every OS packages, it reads the image
from stdin and writes TSV to stdout (no temporary files), and a subprocess can be
killed on timeout, which an in-process OCR call cannot.
"""

from __future__ import annotations

import io
import os
import shutil
import subprocess
from dataclasses import dataclass

from PIL import Image

INSTALL_HINT = (
    "install Tesseract OCR: `apt-get install tesseract-ocr` (Debian/Ubuntu), "
    "`brew install tesseract` (macOS) or `winget install UB-Mannheim.TesseractOCR` (Windows)"
)
_MIN_SIDE = 16


class OcrError(RuntimeError):
    """OCR could not run; the message says how to fix it."""


class TesseractNotFoundError(OcrError):
    pass


class OcrTimeoutError(OcrError):
    pass


@dataclass(frozen=True)
class TesseractConfig:
    command: str = "tesseract"
    # "eng", or several joined with "+", each needing its traineddata installed.
    languages: str = "eng"
    # 11 = sparse text: find as much text as possible in no particular order, which
    # is what a screen is (not a page of paragraphs).
    page_segmentation_mode: int = 11
    timeout_s: float = 30.0
    # 2 = Sauvola, a local threshold (Tesseract >= 5; older ones ignore it). The
    # default global Otsu threshold turns a mid-grey button with its text into one
    # dark blob once the page around it is light.
    thresholding_method: int = 2
    # Tesseract's OpenMP threads; 1 is as fast on a screenshot and lets many sessions
    # OCR in parallel without oversubscribing the cores.
    threads: int = 1


@dataclass(frozen=True)
class RawWord:
    """One word exactly as Tesseract reports it, in the pixels of the image it read."""

    text: str
    confidence: float
    left: int
    top: int
    width: int
    height: int
    block: int
    paragraph: int
    line: int


def run_tesseract(image: Image.Image, config: TesseractConfig = TesseractConfig()) -> list[RawWord]:
    command = _resolve(config.command)
    image = _padded(image)
    buffer = io.BytesIO()
    image.save(buffer, format="PNG", compress_level=1)  # speed over size: it is a pipe
    env = {**os.environ, "OMP_THREAD_LIMIT": str(config.threads)}
    args = [command, "stdin", "stdout", "-l", config.languages]
    args += ["--psm", str(config.page_segmentation_mode)]
    args += ["-c", f"thresholding_method={config.thresholding_method}", "tsv"]
    try:
        result = subprocess.run(
            args,
            input=buffer.getvalue(),
            capture_output=True,
            timeout=config.timeout_s,
            env=env,
            check=False,
        )
    except subprocess.TimeoutExpired as exc:
        raise OcrTimeoutError(
            f"tesseract took longer than {config.timeout_s:g}s on a "
            f"{image.width}x{image.height} image and was stopped"
        ) from exc
    except OSError as exc:
        raise TesseractNotFoundError(f"cannot run {command!r} ({exc}); {INSTALL_HINT}") from exc
    stderr = result.stderr.decode("utf-8", "replace").strip()
    if result.returncode != 0:
        hint = ""
        if "Failed loading language" in stderr:
            hint = (
                f"; the language data for {config.languages!r} is missing: install e.g. "
                "`apt-get install tesseract-ocr-<lang>` or set its TESSDATA_PREFIX"
            )
        raise OcrError(f"tesseract exited with status {result.returncode}: {stderr}{hint}")
    return parse_tsv(result.stdout.decode("utf-8", "replace"))


def parse_tsv(tsv: str) -> list[RawWord]:
    """Word rows (level 5) of Tesseract's TSV output that carry text."""
    words: list[RawWord] = []
    for row in tsv.splitlines()[1:]:
        # Split on tabs ourselves: a recognised word may contain quote characters,
        # which the csv module would treat as quoting.
        cells = row.split("\t", 11)
        if len(cells) != 12 or cells[0] != "5" or not cells[11].strip():
            continue
        _, _, block, par, line, _, left, top, width, height, conf, text = cells
        words.append(
            RawWord(
                text=text.strip(),
                confidence=float(conf),
                left=int(left),
                top=int(top),
                width=int(width),
                height=int(height),
                block=int(block),
                paragraph=int(par),
                line=int(line),
            )
        )
    return words


def _padded(image: Image.Image) -> Image.Image:
    """At least _MIN_SIDE pixels each way (Sauvola's window fails on less), padded
    right and below so word boxes keep their coordinates."""
    if image.width >= _MIN_SIDE and image.height >= _MIN_SIDE:
        return image
    size = (max(image.width, _MIN_SIDE), max(image.height, _MIN_SIDE))
    canvas = Image.new(image.mode, size, "white")
    canvas.paste(image, (0, 0))
    return canvas


def _resolve(command: str) -> str:
    found = shutil.which(command)
    if found is None:
        raise TesseractNotFoundError(f"{command!r} was not found on PATH; {INSTALL_HINT}")
    return found
