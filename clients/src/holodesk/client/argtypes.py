"""Number parsers for argparse, shared by every subcommand: a bad value is a usage
error naming the value, never a traceback."""

from __future__ import annotations

import argparse


def _int(text: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None


def number(text: str) -> float:
    try:
        return float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None


def non_negative_int(text: str) -> int:
    value = _int(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be 0 or more, got {value}")
    return value


def positive_int(text: str) -> int:
    value = _int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be 1 or more, got {value}")
    return value


def non_negative_float(text: str) -> float:
    value = number(text)
    if not value >= 0:  # also refuses nan
        raise argparse.ArgumentTypeError(f"must be 0 or more, got {text}")
    return value


def positive_float(text: str) -> float:
    value = number(text)
    if not value > 0:  # also refuses nan
        raise argparse.ArgumentTypeError(f"must be above 0, got {text}")
    return value


def fraction(text: str) -> float:
    value = number(text)
    if not 0 <= value <= 1:
        raise argparse.ArgumentTypeError(f"must be between 0 and 1, got {text}")
    return value


def byte_value(text: str) -> int:
    value = _int(text)
    if not 0 <= value <= 255:
        raise argparse.ArgumentTypeError(f"must be 0-255, got {value}")
    return value
