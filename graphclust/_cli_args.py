"""argparse types shared by the subcommands of the ``graphclust`` command line.

Each raises ``argparse.ArgumentTypeError``, so a bad value is a usage error (exit 2) whose
message argparse prefixes with the option as the user typed it.
"""

from __future__ import annotations

import argparse

__all__ = ["float_or_auto", "floats", "int_or_auto"]


def int_or_auto(text):
    """An integer >= 1, or the string 'auto'."""
    if text == "auto":
        return "auto"
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an integer or 'auto'; got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected an integer >= 1 or 'auto'; got {value}")
    return value


def float_or_auto(text):
    """A number, or the string 'auto'."""
    if text == "auto":
        return "auto"
    try:
        return float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number or 'auto'; got {text!r}") from None


def floats(text):
    """Comma-separated numbers, as a tuple of floats."""
    try:
        values = tuple(float(v) for v in text.split(","))
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected comma-separated numbers, e.g. 0.5,1,2; got {text!r}") from None
    return values
