"""The layout of an ext4 image as metadata classes of its 4 KiB blocks, parsed from ``dumpe2fs``
(superblocks, group descriptors, bitmaps, inode tables) and ``debugfs stat`` (the journal's
extents, directory blocks, extent-tree blocks): the ``meta`` column of a real block trace.

Classes (the block trace's ``meta`` column, docs/FORMATS.md): data 0, journal 1, inode table 2,
directory 3, bitmap / group descriptor 4, other metadata (superblock, extent tree) 5.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

DATA, JOURNAL, INODE, DIRECTORY, BITMAP, OTHER = range(6)
META_NAMES = ("data", "journal", "inode", "directory", "bitmap", "other")


@dataclass
class Layout:
    """Where the metadata of the captured file system lies, in 4 KiB blocks."""

    blocks: int = 0
    ranges: list[tuple[int, int, int]] = field(default_factory=list)  # (start, count, class)
    journal: list[tuple[int, int]] = field(default_factory=list)
    groups: int = 0
    inodes_per_group: int = 0
    directories: int = 0
    files: int = 0

    def meta_map(self) -> list[tuple[int, int, int]]:
        """Sorted, disjoint ranges (first page, pages, class); overlaps keep the earlier range."""
        out: list[tuple[int, int, int]] = []
        for start, count, cls in sorted(self.ranges):
            if out:
                ps, pc, pcls = out[-1]
                if start < ps + pc:  # overlap: trim
                    cut = ps + pc - start
                    if cut >= count:
                        continue
                    start, count = start + cut, count - cut
                if start == ps + pc and cls == pcls:
                    out[-1] = (ps, pc + count, cls)
                    continue
            out.append((start, count, cls))
        return out

    def pages_by_class(self) -> dict[str, int]:
        sums = dict.fromkeys(META_NAMES[1:], 0)
        for _, count, cls in self.meta_map():
            sums[META_NAMES[cls]] += count
        return sums


_RANGE = re.compile(r"(\d+)(?:-(\d+))?")


def _span(text: str) -> tuple[int, int]:
    m = _RANGE.match(text)
    if m is None:
        raise ValueError(text)
    a = int(m.group(1))
    b = int(m.group(2)) if m.group(2) else a
    return a, b - a + 1


def parse_dumpe2fs(text: str, layout: Layout) -> None:
    """Superblocks, descriptors, reserved descriptors, bitmaps and inode tables of every group."""
    patterns = (
        (re.compile(r"superblock at (\d+)"), OTHER),
        (re.compile(r"Group descriptors at ([\d-]+)"), BITMAP),
        (re.compile(r"Reserved GDT blocks at ([\d-]+)"), BITMAP),
        (re.compile(r"Block bitmap at (\d+)"), BITMAP),
        (re.compile(r"Inode bitmap at (\d+)"), BITMAP),
        (re.compile(r"Inode table at ([\d-]+)"), INODE),
    )
    for line in text.splitlines():
        if line.startswith("Block count:"):
            layout.blocks = int(line.split(":")[1])
        elif line.startswith("Inodes per group:"):
            layout.inodes_per_group = int(line.split(":")[1])
        elif line.startswith("Group "):
            layout.groups += 1
        for pat, cls in patterns:
            for m in pat.finditer(line):
                start, count = _span(m.group(1))
                layout.ranges.append((start, count, cls))


_EXTENT = re.compile(r"\((ETB\d+|[\d-]+)\):([\d-]+)")


def parse_debugfs_stats(text: str, layout: Layout, journal: bool = False) -> None:
    """Blocks of the inodes in ``debugfs stat`` output: directory data → 3, extent-tree blocks
    → 5, the journal inode's blocks → 1 (``journal``: the text is the journal inode's)."""
    kind = ""
    in_extents = False
    for line in text.splitlines():
        m = re.search(r"Type: (\w+)", line)
        if line.startswith("Inode:") and m:
            kind = m.group(1)
            in_extents = False
            if kind == "directory":
                layout.directories += 1
            elif kind == "regular" and not journal:
                layout.files += 1
            continue
        if line.startswith("EXTENTS:") or line.startswith("BLOCKS:"):
            in_extents = True
            continue
        if not in_extents:
            continue
        if not line.strip() or line.startswith("debugfs"):
            in_extents = False
            continue
        for ext in _EXTENT.finditer(line):
            logical, phys = ext.group(1), ext.group(2)
            start, count = _span(phys)
            if logical.startswith("ETB"):
                layout.ranges.append((start, count, OTHER))
            elif journal:
                layout.ranges.append((start, count, JOURNAL))
                layout.journal.append((start, count))
            elif kind == "directory":
                layout.ranges.append((start, count, DIRECTORY))
