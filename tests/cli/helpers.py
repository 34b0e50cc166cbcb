"""Assertions on rendered tables."""

from __future__ import annotations

import re


def row(out: str, *cells: str) -> bool:
    """Whether ``out`` has a table line made of exactly these cells, in order."""
    return re.search("^" + r"\s+".join(re.escape(c) for c in cells) + "$", out, re.M) is not None


def flat(text: str) -> str:
    """Text of a rich error box on one line: borders dropped, whitespace collapsed."""
    return " ".join(text.replace("│", " ").split())
