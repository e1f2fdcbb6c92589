"""``pcstream map``: turn a file-level trace into the block trace an ext4 file system would issue.

Also home of the SIZE option type the trace verbs share (pages, bytes with a unit, or an SSD
preset's logical size).
"""

from __future__ import annotations

import json
import re
from typing import Any

import click

from pcstream import api
from pcstream.cli._common import (
    epilog,
    fmt,
    json_option,
    key_value_table,
    prepare_output,
    print_json,
    progress_bar,
)
from pcstream.cli._common import stdout as stdout_console
from pcstream.errors import require_file

PAGE = 4096
_UNITS = {
    "": None,
    "p": 1,
    "pages": 1,
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

SIZE_HELP = "pages of 4 KiB (61248), bytes with a unit (16GiB, 512M, 1.5TB), or an SSD preset name (small)"


def parse_size(text: str) -> int:
    """SIZE → 4 KiB pages: a plain number is pages; a unit (B, K/KiB, KB, M/MiB, MB, G/GiB, GB,
    T/TiB, TB) means bytes, rounded up to whole pages; a preset name is its logical pages."""
    m = _SIZE.match(text)
    if m is None:
        if text in api.presets():
            return int(api.ssd_summary(text)["logical_pages"])
        raise ValueError(f"'{text}' is not a size: use {SIZE_HELP}")
    number, unit = m.group(1), m.group(2).lower()
    if unit not in _UNITS:
        raise ValueError(f"'{text}': unknown unit '{m.group(2)}'; use B, KiB, MiB, GiB, TiB (or KB, MB, ...)")
    mult = _UNITS[unit]
    if mult is None or unit in ("p", "pages"):
        if "." in number:
            raise ValueError(f"'{text}': a page count must be a whole number")
        pages = int(number)
    else:
        pages = -(-int(float(number) * mult) // PAGE)
    if pages <= 0:
        raise ValueError(f"'{text}' is not a positive size")
    return pages


class SizeType(click.ParamType):
    """A click type for SIZE (see :func:`parse_size`); the value is in pages."""

    name = "SIZE"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> int:
        if isinstance(value, int):
            return value
        try:
            return parse_size(str(value))
        except ValueError as exc:
            self.fail(str(exc), param, ctx)


SIZE = SizeType()
DEFAULT_CAPACITY = "paper"

EXTRA = """\b
The model (ext4 with its defaults, jbd2 in ordered mode, delayed
allocation, writeback timers, discard) and its simplifications are
described in docs/FSMODEL.md. Default --capacity: the logical size of the
'paper' SSD preset, the default SSD of 'pcstream simulate', so the mapped
trace fits it; pass --capacity small (or a size) for smaller SSDs.
Mount options: discard, nodiscard, barrier, nobarrier, auto_da_alloc,
noauto_da_alloc, commit=S, dirty_expire=S, writeback_interval=S,
dirty_bytes=B, ram=B, journal_pages=N, max_request_pages=N, cpus=N."""


def summary_rows(s: dict[str, Any]) -> list[tuple[str, str]]:
    meta = s.get("metadata_pages") or {}
    return [
        ("file events", fmt(s.get("events"))),
        ("requests", fmt(s.get("requests"))),
        ("data pages", fmt(s.get("data_pages"))),
        ("journal pages", fmt(s.get("journal_pages"))),
        ("inode-table pages", fmt(meta.get("inode"))),
        ("directory pages", fmt(meta.get("directory"))),
        ("bitmap / descriptor pages", fmt(meta.get("bitmap"))),
        ("other metadata pages", fmt(meta.get("other"))),
        ("trimmed pages", fmt(s.get("trim_pages"))),
        ("cache flushes", fmt(s.get("flushes"))),
        ("absorbed pages (never written)", fmt(s.get("absorbed_pages"))),
        ("files", fmt(s.get("files"))),
        ("commits / checkpoints", f"{fmt(s.get('commits'))} / {fmt(s.get('checkpoints'))}"),
        ("peak dirty pages", fmt(s.get("peak_dirty_pages"))),
        ("capacity pages / free at end", f"{fmt(s.get('capacity_pages'))} / {fmt(s.get('free_pages'))}"),
    ]


def map_trace(
    file_trace: str,
    out: str,
    capacity_pages: int,
    mount_opts: str = "",
    device: int | None = None,
    label: str = "map",
) -> dict[str, Any]:
    """Map with a progress bar (events) on a terminal; returns the engine's summary."""
    with progress_bar(label, unit="events") as progress:
        text = api.engine().map_trace(
            file_trace, out, capacity_pages, mount_opts=mount_opts, device=device, progress=progress
        )
    value = json.loads(text)
    assert isinstance(value, dict)
    return value


@click.command(
    "map", short_help="file-level trace -> block trace through an ext4 model", epilog=epilog(EXTRA)
)
@click.argument("file_trace", metavar="FILE_TRACE")
@click.option("-o", "--out", required=True, metavar="BLOCK_TRACE", help="Block trace to write (Parquet).")
@click.option(
    "--fs", type=click.Choice(["ext4"]), default="ext4", show_default=True, help="File-system model."
)
@click.option(
    "--capacity",
    type=SIZE,
    default=DEFAULT_CAPACITY,
    show_default=True,
    help=f"File-system size: {SIZE_HELP}.",
)
@click.option(
    "--mount-opts",
    default="",
    metavar="OPTS",
    help="ext4-style mount options, comma-separated (e.g. nodiscard,commit=5).",
)
@click.option(
    "--device",
    type=click.IntRange(min=0),
    default=None,
    metavar="ST_DEV",
    help="Model only the files of this device (st_dev as recorded); others are skipped.",
)
@json_option
def command(
    file_trace: str, out: str, fs: str, capacity: int, mount_opts: str, device: int | None, as_json: bool
) -> None:
    """Replay FILE_TRACE (from 'pcstream record') through the ext4 model and write the block
    trace it would cause (data, journal and metadata writes, TRIMs, flushes) to BLOCK_TRACE.

    Example: pcstream map trace.parquet -o block.parquet --capacity small --mount-opts discard
    """
    require_file(file_trace, "file-level trace")
    prepare_output(out)
    summary = map_trace(file_trace, out, capacity, mount_opts, device)
    if as_json:
        print_json(summary)
        return
    console = stdout_console()
    console.print(key_value_table(f"{file_trace} -> {out} ({fs})", summary_rows(summary)))
    for warning in summary.get("warnings") or []:
        click.echo(f"warning: {warning}", err=True)
