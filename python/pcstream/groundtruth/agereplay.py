"""Aging a real ext4 like the model (``record --block --age``, ``validate --run --age``): the
engine's aging plan (:func:`pcstream.api.aging_plan`, the operations ``map --age`` applies to the
model) replayed on the mounted image before the program runs, and the state it leaves on the
device, in the form the model's aged trace starts with.

The plan is a list of ``{"op": "create", "path", "bytes"}``, ``{"op": "delete", "path"}`` and
``{"op": "sync"}``, paths relative to the mount point; a create makes the missing directories,
writes the file's bytes (1 MiB at a time, no fsync) and closes it, a delete unlinks, a sync is
``sync(2)``. After the replay the caller syncs and unmounts, so the journal is checkpointed and
the image's bitmaps are final, and reads the state with :func:`aged_state`: every block the file
system uses (``dumpe2fs``'s free-block lists, complemented) plus every block the device still
holds (the image's allocated extents: a discard on a loop device punches a hole in its image), as
the model counts it — blocks in use, and with ``nodiscard`` the deleted blocks nothing reused.
"""

from __future__ import annotations

import errno
import os
import re
import time
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from pcstream.errors import Failure
from pcstream.units import PAGE_BYTES

CHUNK = 1 << 20
_FREE = re.compile(r"^\s*Free blocks:\s*(.*)$")
_RANGE = re.compile(r"(\d+)(?:-(\d+))?")


def replay(plan: Sequence[dict[str, Any]], mount: Path) -> dict[str, Any]:
    """Apply ``plan`` under ``mount``; counts {creates, deletes, syncs, bytes_written, seconds}. A full
    file system or a plan that names a path outside the mount point is a one-line error."""
    t0 = time.monotonic()
    counts = {"creates": 0, "deletes": 0, "syncs": 0, "bytes_written": 0}
    root = mount.resolve()
    block = b"\xa5" * CHUNK
    made: set[Path] = set()
    for i, op in enumerate(plan):
        kind = op.get("op")
        if kind == "sync":
            os.sync()
            counts["syncs"] += 1
            continue
        rel = str(op.get("path", ""))
        path = (root / rel).resolve()
        if not rel or rel.startswith("/") or root not in path.parents:
            raise Failure(
                f"aging plan operation {i}: path {rel!r} is not inside the file system",
            )
        try:
            if kind == "create":
                size = int(op["bytes"])
                if path.parent not in made:
                    path.parent.mkdir(parents=True, exist_ok=True)
                    made.add(path.parent)
                fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
                try:
                    left = size
                    while left > 0:
                        n = os.write(fd, block[: min(left, CHUNK)])
                        left -= n
                finally:
                    os.close(fd)
                counts["creates"] += 1
                counts["bytes_written"] += size
            elif kind == "delete":
                path.unlink()
                counts["deletes"] += 1
            else:
                raise Failure(f"aging plan operation {i}: unknown op {kind!r}")
        except OSError as exc:
            why = "the file system is full" if exc.errno == errno.ENOSPC else exc.strerror
            raise Failure(
                f"aging the real file system failed at operation {i} ({kind} {rel}): {why}",
            ) from None
    os.sync()
    counts["seconds"] = round(time.monotonic() - t0, 3)
    return counts


def free_extents(dumpe2fs: str) -> list[tuple[int, int]]:
    """(first block, blocks) of every free extent in ``dumpe2fs`` output (its "Free blocks:"
    lines, one per group)."""
    out = []
    for line in dumpe2fs.splitlines():
        m = _FREE.match(line)
        if not m:
            continue
        for part in m.group(1).split(","):
            r = _RANGE.search(part)
            if r:
                a = int(r.group(1))
                b = int(r.group(2)) if r.group(2) else a
                out.append((a, b - a + 1))
    return out


def data_extents(image: Path) -> list[tuple[int, int]] | None:
    """(first page, pages) of the image's allocated ranges (SEEK_DATA / SEEK_HOLE), or None when
    the file system holding it cannot say."""
    fd = os.open(image, os.O_RDONLY)
    try:
        os.fsync(fd)
        size = os.fstat(fd).st_size
        out = []
        pos = 0
        while pos < size:
            try:
                start = os.lseek(fd, pos, os.SEEK_DATA)
            except OSError as exc:
                if exc.errno == errno.ENXIO:
                    break
                return None
            stop = os.lseek(fd, start, os.SEEK_HOLE)
            first, last = start // PAGE_BYTES, (stop + PAGE_BYTES - 1) // PAGE_BYTES
            out.append((first, last - first))
            pos = stop
        return out
    finally:
        os.close(fd)


def runs(mask: np.ndarray) -> list[tuple[int, int]]:
    """(start, length) of the runs of True in ``mask``."""
    edges = np.flatnonzero(np.diff(np.r_[0, mask.astype(np.int8), 0]))
    return [(int(a), int(b - a)) for a, b in zip(edges[::2], edges[1::2])]


def _mark(mask: np.ndarray, extents: Iterable[tuple[int, int]], value: bool) -> None:
    for start, count in extents:
        mask[start : start + count] = value


def aged_state(dumpe2fs: str, image: Path, blocks: int) -> dict[str, Any]:
    """What the device holds after aging: ``extents`` (first page, pages) in LBA order, and
    ``pages``, ``used_blocks``, ``used_share``, ``stale_blocks`` (not in use, still on the
    device), as the model's ``aged`` summary; ``image_extents`` False when the image's allocated
    ranges could not be read (then only the blocks in use count)."""
    used = np.ones(blocks, dtype=bool)
    _mark(used, free_extents(dumpe2fs), False)
    held = used.copy()
    image_ranges = data_extents(image)
    if image_ranges is not None:
        _mark(held, image_ranges, True)
    held = held[:blocks]
    extents = runs(held)
    used_blocks = int(used.sum())
    return {
        "extents": extents,
        "pages": int(held.sum()),
        "used_blocks": used_blocks,
        "used_share": used_blocks / blocks if blocks else 0.0,
        "stale_blocks": int((held & ~used).sum()),
        "image_extents": image_ranges is not None,
    }
