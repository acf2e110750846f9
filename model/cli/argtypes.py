"""Argument types shared by the commands: whole numbers with a least value.

argparse calls the type on the text of a flag and turns an
``argparse.ArgumentTypeError`` into one line naming the flag and exit status 2,
so a value such as ``--chunk-rows 0`` stops before any work starts.
"""
from __future__ import annotations

import argparse


def int_at_least(least: int):
    """An argparse type: a whole number >= ``least``."""
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"'{text}' is not a whole number") from None
        if value < least:
            raise argparse.ArgumentTypeError(f"{value} is less than {least}, the least allowed")
        return value
    parse.__name__ = f"integer >= {least}"
    return parse
