"""argparse types of the `edgec` command: numbers checked where they are typed (one-line errors)."""
from __future__ import annotations

import argparse
import math


def count(minimum: int):
    """argparse type: an integer >= minimum."""
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"'{text}' is not a whole number") from None
        if value < minimum:
            raise argparse.ArgumentTypeError(f"{value} is less than {minimum}")
        return value
    return parse


def finite(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"'{text}' is not a number") from None
    if not math.isfinite(value):
        raise argparse.ArgumentTypeError(f"{text} is not a finite number")
    return value


def seconds(text: str) -> float:
    """argparse type: a finite number of seconds >= 0."""
    value = finite(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"{text} is not a number of seconds >= 0")
    return value


def positive_seconds(text: str) -> float:
    """argparse type: a finite number of seconds > 0."""
    value = finite(text)
    if value <= 0:
        raise argparse.ArgumentTypeError(f"{text} is not a number of seconds > 0")
    return value


def percent(text: str) -> float:
    value = finite(text)
    if not 0 < value <= 100:
        raise argparse.ArgumentTypeError(f"{text} is not a percentile in (0, 100]")
    return value
