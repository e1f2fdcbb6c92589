"""``pcstream import FORMAT FILE --split-volumes DIR``: one block trace per volume of a public trace
set (Alibaba 2020, Tencent CBS, MSR Cambridge), in memory that does not grow with the input or the
number of volumes.

Two passes. The first streams the input (plain or gzip) once and sorts its lines by volume into
one spill file per volume: lines wait in memory buffers up to :data:`BUFFER_BYTES` in all, then
every buffer is appended to its volume's file, one file open at a time, so thousands of volumes
never need thousands of open files. The second imports each spill file with the format's importer
(the same code as ``import FORMAT FILE --device V -o V.parquet``, so each trace is what that
command writes, byte for byte) and removes it. ``DIR/manifest.json`` lists every volume with its
trace, size and request counts. On any error, Ctrl-C or SIGTERM, the traces this run wrote and
the spill files are removed: the output is complete or absent.
"""

from __future__ import annotations

import contextlib
import gzip
import json
import os
import re
import shutil
from collections.abc import Callable, Iterator
from typing import IO, Any

from pcstream import api
from pcstream.errors import InputError, Kind, UsageError, describe
from pcstream.outputs import atomic_write

# Formats whose lines name their volume: the column(s) that do, as the importer names them.
VOLUME_COLUMNS = {"alibaba": "device_id", "tencent": "VolumeID", "msr": "Hostname_DiskNumber"}
# Lines held in memory, in bytes over all volumes (each line counted with its Python object and
# list slot), before they go to the spill files.
BUFFER_BYTES = 32 << 20
# What a buffered line costs beyond its text: a bytes object's header and its list slot.
_LINE_OVERHEAD = 33 + 8
MANIFEST = "manifest.json"
# A volume name as a file name: anything but these characters becomes '_'.
_UNSAFE = re.compile(r"[^A-Za-z0-9._-]")


def _volume_of(fmt: str) -> Callable[[bytes], str | None]:
    """The function giving a line's volume as the importer spells it (a number without leading
    zeros; MSR: host_disk), or None when the line has none."""

    def number(field: bytes) -> str | None:
        text = field.strip()
        return str(int(text)) if text.isdigit() else None

    def alibaba(line: bytes) -> str | None:
        return number(line.split(b",", 1)[0])

    def tencent(line: bytes) -> str | None:
        fields = line.split(b",")
        return number(fields[4]) if len(fields) == 5 else None

    def msr(line: bytes) -> str | None:
        fields = line.split(b",", 3)
        if len(fields) < 4 or not fields[1].strip() or not fields[2].strip():
            return None
        return f"{fields[1].strip().decode(errors='replace')}_{fields[2].strip().decode(errors='replace')}"

    return {"alibaba": alibaba, "tencent": tencent, "msr": msr}[fmt]


@contextlib.contextmanager
def _open_input(path: str) -> Iterator[IO[bytes]]:
    if path.endswith(".zst"):
        raise UsageError(f"{path}: --split-volumes reads plain or .gz input; decompress it first (zstd -d)")
    with open(path, "rb") as raw:
        if raw.read(2) == b"\x1f\x8b":
            raw.seek(0)
            with gzip.open(raw, "rb") as unpacked:
                yield unpacked  # type: ignore[misc]
        else:
            raw.seek(0)
            yield raw


class _Spill:
    """Lines sorted by volume into ``directory/<n>.txt``, through bounded memory buffers."""

    def __init__(self, directory: str) -> None:
        self.directory = directory
        self.files: dict[str, str] = {}  # volume -> spill file, in order of first appearance
        self.lines: dict[str, int] = {}
        self._buffers: dict[str, list[bytes]] = {}
        self._held = 0

    def add(self, volume: str, line: bytes) -> None:
        if volume not in self.files:
            self.files[volume] = os.path.join(self.directory, f"{len(self.files)}.txt")
            self.lines[volume] = 0
        self.lines[volume] += 1
        self._buffers.setdefault(volume, []).append(line)
        self._held += len(line) + _LINE_OVERHEAD
        if self._held >= BUFFER_BYTES:
            self.flush()

    def flush(self) -> None:
        for volume, lines in self._buffers.items():
            with open(self.files[volume], "ab") as spill:
                spill.writelines(lines)
        self._buffers.clear()
        self._held = 0


def _bad_line(path: str, number: int, fmt: str) -> InputError:
    column = VOLUME_COLUMNS[fmt]
    return InputError(
        path,
        f"{path}:{number}: no volume ({column}) in this line; is this a trace in the {fmt} format? "
        "(--skip-bad N tolerates N such lines)",
    )


def _split(
    path: str, fmt: str, spill: _Spill, skip_bad: int, progress: api.Progress | None
) -> dict[str, Any]:
    volume_of = _volume_of(fmt)
    total = os.path.getsize(path)
    lines = bad = blank = 0
    with _open_input(path) as source:
        raw = getattr(source, "fileobj", None) or source
        for number, line in enumerate(source, start=1):
            lines = number
            if not line.strip():
                blank += 1
                continue
            volume = volume_of(line)
            if volume is None:
                bad += 1
                if bad > skip_bad:
                    raise _bad_line(path, number, fmt)
                continue
            spill.add(volume, line if line.endswith(b"\n") else line + b"\n")
            if progress is not None and number % 262144 == 0:
                progress(raw.tell(), total)
    spill.flush()
    return {"lines": lines, "skipped_count": bad, "blank": blank}


def split_volumes(
    fmt: str,
    path: str,
    out_dir: str,
    *,
    capacity_pages: int | None = None,
    skip_bad: int = 0,
    progress: api.Progress | None = None,
) -> dict[str, Any]:
    """Write one trace per volume of ``path`` into ``out_dir`` and ``out_dir/manifest.json``;
    returns the manifest."""
    if fmt not in VOLUME_COLUMNS:
        raise UsageError(f"--split-volumes reads {', '.join(VOLUME_COLUMNS)} traces, not {fmt}")
    created = not os.path.exists(out_dir)
    os.makedirs(out_dir, exist_ok=True)
    scratch = os.path.join(out_dir, f".split-{os.getpid()}")
    os.makedirs(scratch, exist_ok=True)
    written: list[str] = []
    try:
        spill = _Spill(scratch)
        counts = _split(path, fmt, spill, skip_bad, progress)
        volumes = []
        budget = [skip_bad - counts["skipped_count"]]
        for volume, spilled in spill.files.items():
            volumes.append(
                _import_volume(fmt, path, volume, spilled, out_dir, capacity_pages, written, budget)
            )
            os.remove(spilled)
        manifest = {"format": fmt, "source": os.path.basename(path), **counts, "volumes": volumes}
        with atomic_write(os.path.join(out_dir, MANIFEST), encoding="utf-8") as handle:
            json.dump(manifest, handle, indent=1)
            handle.write("\n")
        return manifest
    except BaseException:
        for trace in written:
            with contextlib.suppress(OSError):
                os.remove(trace)
        shutil.rmtree(scratch, ignore_errors=True)
        if created:
            with contextlib.suppress(OSError):
                os.rmdir(out_dir)
        raise
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def trace_name(volume: str) -> str:
    """The file name of a volume's trace."""
    return f"{_UNSAFE.sub('_', volume)}.parquet"


def _import_volume(
    fmt: str,
    path: str,
    volume: str,
    spilled: str,
    out_dir: str,
    capacity: int | None,
    written: list[str],
    budget: list[int],
) -> dict[str, Any]:
    """Import one volume's spill file; ``budget[0]``: malformed lines still tolerated."""
    out = os.path.join(out_dir, trace_name(volume))
    if out in written:
        raise UsageError(
            f"{path}: volumes {volume!r} and another share the file name {os.path.basename(out)}"
        )
    if not os.path.exists(out):
        # Listed before the import: a signal that comes once the engine has renamed it into
        # place must still remove it with the others.
        written.append(out)
    try:
        summary = api.import_trace(fmt, spilled, out, capacity_pages=capacity, skip_bad=budget[0], label=path)
    except Exception as exc:  # describe() decides what is a user error
        found = describe(exc)
        if found is None or found[1] is not Kind.INPUT:
            raise  # a bug, or SIGTERM / Ctrl-C: as they are
        # The importer's FILE:LINE counts the volume's lines, not the input's: said so.
        where = re.escape(path) + r":(\d+)"
        message = re.sub(
            where, lambda m: f"{path}: volume {volume}, its line {m.group(1)}", found[0], count=1
        )
        raise InputError(path, message) from None
    budget[0] -= int(summary.get("skipped_count") or 0)
    if out not in written:
        written.append(out)
    requests = sum(int(summary.get(k) or 0) for k in ("writes", "reads", "trims", "flushes"))
    return {
        "volume": volume,
        "trace": os.path.basename(out),
        "bytes": os.path.getsize(out),
        "lines": int(summary.get("lines") or 0),
        "requests": requests,
        "writes": int(summary.get("writes") or 0),
        "reads": int(summary.get("reads") or 0),
        "write_pages": int(summary.get("write_pages") or 0),
        "capacity_pages": int(summary.get("capacity_pages") or 0),
    }
