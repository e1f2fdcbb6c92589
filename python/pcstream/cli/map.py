"""``pcstream map``: turn a file-level trace into the block trace an ext4 file system would issue."""

from __future__ import annotations

from typing import Any

import click

from pcstream import api, mapstage
from pcstream.cli._common import (
    epilog,
    field_options,
    fmt,
    json_option,
    key_value_table,
    pack_options,
    print_json,
    progress_bar,
)
from pcstream.cli._common import stdout as stdout_console
from pcstream.errors import prepare_output, require_file
from pcstream.options import MapOptions

EXTRA = """\b
The model (ext4 with its defaults, jbd2 in ordered mode, delayed
allocation, writeback timers, discard) and its simplifications are
described in docs/FSMODEL.md. Default --capacity: the logical size of the
'paper' SSD preset, the default SSD of 'pcstream simulate', so the mapped
trace fits it; pass --capacity small (or a size) for smaller SSDs.
Mount options: discard (online TRIM of freed extents, the default here),
nodiscard (ext4's default: no TRIM), fstrim=S (all free space trimmed
every S seconds of trace time, as a periodic fstrim), barrier, nobarrier,
auto_da_alloc, noauto_da_alloc, commit=S, dirty_expire=S,
writeback_interval=S, dirty_bytes=B, ram=B, journal_pages=N,
max_request_pages=N, cpus=N.
With --age the trace starts with the aged state: its first rows (metadata
keys pcstream.aged_rows / pcstream.aged_pages) are what the aged file
system left on the device, which 'simulate' and 'compare' write first as
cold data and exclude from every figure."""


def summary_rows(summary: dict[str, Any]) -> list[tuple[str, str]]:
    return [
        (label, " / ".join(fmt(v) for v in values)) for label, values in mapstage.summary_figures(summary)
    ]


@click.command(
    "map", short_help="file-level trace -> block trace through an ext4 model", epilog=epilog(EXTRA)
)
@click.argument("file_trace", metavar="FILE_TRACE")
@click.option("-o", "--out", required=True, metavar="BLOCK_TRACE", help="Block trace to write (Parquet).")
@field_options(MapOptions, "fs", "capacity", "mount_opts", "device", "age", "age_seed", "age_churn")
@json_option
@pack_options(MapOptions)
def command(file_trace: str, out: str, opts: MapOptions, as_json: bool) -> None:
    """Replay FILE_TRACE (from 'pcstream record') through the ext4 model and write the block
    trace it would cause (data, journal and metadata writes, TRIMs, flushes) to BLOCK_TRACE.

    Example: pcstream map trace.parquet -o block.parquet --capacity small --mount-opts discard
    """
    require_file(file_trace, "file-level trace")
    prepare_output(out, [file_trace])
    with progress_bar("map", unit="events") as progress:
        summary = api.map_trace(file_trace, out, opts, progress=progress)
    if as_json:
        print_json(summary)
        return
    console = stdout_console()
    console.print(key_value_table(f"{file_trace} -> {out} ({opts.fs})", summary_rows(summary)))
    for warning in summary.get("warnings") or []:
        click.echo(f"warning: {warning}", err=True)
