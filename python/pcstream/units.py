"""Units: the 4 KiB page (:data:`PAGE_BYTES`, the one Python definition) and SIZE arguments (a
page count, bytes with a unit, or an SSD preset's logical size) in pages.

Logical time is the number of host pages written; latencies are microseconds (docs/FORMATS.md).
"""

from __future__ import annotations

import math
import re
from fractions import Fraction

# How a SIZE is written: help text, declared once with the options that take a SIZE.
from pcstream.options import MAX_SIZE_PAGES, SIZE_HELP

# Bytes of a page: the unit of every address, length and capacity in a block trace.
PAGE_BYTES = 4096

# Suffixes that make a SIZE a page count (none, or p / pages).
PAGE_UNITS = frozenset({"", "p", "pages"})
# Suffixes that make a SIZE a byte count, and bytes per unit (binary K/M/G/T, decimal KB/MB/...).
BYTE_UNITS: dict[str, int] = {
    "b": 1,
    "k": 1 << 10,
    "kb": 1000,
    "kib": 1 << 10,
    "m": 1 << 20,
    "mb": 1000**2,
    "mib": 1 << 20,
    "g": 1 << 30,
    "gb": 1000**3,
    "gib": 1 << 30,
    "t": 1 << 40,
    "tb": 1000**4,
    "tib": 1 << 40,
}
_SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([a-zA-Z]*)\s*$")


def pages_for_bytes(size_bytes: int) -> int:
    """Whole pages holding ``size_bytes`` (a partial page counts as a page)."""
    return -(-size_bytes // PAGE_BYTES)


def parse_size(text: str) -> int:
    """SIZE → 4 KiB pages: a plain number (or one with ``p``/``pages``) is pages; a byte unit
    (B, K/KiB, KB, M/MiB, MB, G/GiB, GB, T/TiB, TB) means bytes, rounded up to whole pages; an SSD
    preset name is its logical pages. A bad SIZE is a ValueError saying what a SIZE is."""
    m = _SIZE.match(text)
    if m is None:
        from pcstream import api

        if text in api.presets():
            return int(api.ssd_summary(text)["logical_pages"])
        raise ValueError(f"'{text}' is not a size: use {SIZE_HELP}")
    number, unit = m.group(1), m.group(2).lower()
    if unit in PAGE_UNITS:
        if "." in number:
            raise ValueError(f"'{text}': a page count must be a whole number")
        pages = int(number)
    elif unit in BYTE_UNITS:
        # Exact (a float overflows to inf, or rounds, on long numbers).
        pages = pages_for_bytes(math.floor(Fraction(number) * BYTE_UNITS[unit]))
    else:
        raise ValueError(f"'{text}': unknown unit '{m.group(2)}'; use B, KiB, MiB, GiB, TiB (or KB, MB, ...)")
    if pages <= 0:
        raise ValueError(f"'{text}' is not a positive size")
    if pages > MAX_SIZE_PAGES:
        raise ValueError(f"'{text}' is too large: over 2^64 pages; give a size in the device's range")
    return pages
