"""argparse types shared by the subcommands of the ``graphclust`` command line.

Each raises ``argparse.ArgumentTypeError``, so a bad value is a usage error (exit 2) whose
message argparse prefixes with the option as the user typed it. `check_output_folders` is the
subcommands' one check of where they will write.
"""

from __future__ import annotations

import argparse
from pathlib import Path

__all__ = ["at_least", "check_output_folders", "float_or_auto", "floats", "int_or_auto",
           "int_or_words"]


def check_output_folders(*outputs):
    """Each ``(flag, path)`` given (path not None) is in a folder that exists: fail before the
    work, not after it. Raises ValueError naming the option.

    >>> check_output_folders(("--output", None), ("--labels", "labels.npy"))
    >>> check_output_folders(("--output", "/no/such/folder/x.tsv"))
    Traceback (most recent call last):
    ...
    ValueError: --output /no/such/folder/x.tsv: directory /no/such/folder does not exist.
    """
    for flag, value in outputs:
        if value is not None:
            folder = Path(value).parent
            if str(folder) and not folder.is_dir():
                raise ValueError(f"{flag} {value}: directory {folder} does not exist.")


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


def at_least(low, kind=int):
    """An argparse type: a number of `kind` (int or float) >= `low`.

    Examples
    --------
    >>> at_least(1)("3")
    3
    """
    word = "an integer" if kind is int else "a number"

    def parse(text):
        try:
            value = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected {word} >= {low}; got {text!r}") from None
        if value < low:
            raise argparse.ArgumentTypeError(f"expected {word} >= {low}; got {text}")
        return value

    parse.__name__ = f"{word.split()[-1]} >= {low}"
    return parse


def int_or_words(*words, low=1):
    """An argparse type: an integer >= `low`, or one of the given words."""

    def parse(text):
        if text in words:
            return text
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(
                f"expected an integer >= {low} or one of {', '.join(words)}; got {text!r}"
            ) from None
        if value < low:
            raise argparse.ArgumentTypeError(f"expected an integer >= {low} or one of "
                                             f"{', '.join(words)}; got {value}")
        return value

    return parse
