"""``pcstream record``: run a command with the write-capture shim and write a file-level trace."""

from __future__ import annotations

import json
from pathlib import Path

import click

from pcstream import compose
from pcstream.aging import Aging
from pcstream.cli._common import SIZE, SIZE_HELP, aging_options, epilog, resolve_ssd, ssd_option
from pcstream.groundtruth import loopdev
from pcstream.record import runner, shimrun

BLOCK_DEFAULT_OUT = "record-block"
BLOCK_DEFAULT_CAPACITY = "1GiB"

EXTRA = """\b
Log format, hooks, methods and known gaps: docs/RECORD.md.
--block (root only; exit status 77 otherwise) also captures the real
block I/O: CMD runs in a fresh ext4 (sparse image of --capacity, loop
device, mounted with --mount-opts) as its working directory (so give
other paths absolute) while tracefs records the loop device's bios; -o names a directory (default
record-block/) that gets block.parquet (the real block trace, meta classes
from the image's layout), files.parquet (the file-level trace of the same
run), layout.json and block.blkparse; or give X.parquet for X.parquet,
X.files.parquet, X.layout.json, X.blkparse. Method: docs/FSMODEL.md."""


@click.command(
    "record",
    short_help="capture a program's file writes with their PC signatures",
    context_settings={"ignore_unknown_options": True, "allow_interspersed_args": False},
    epilog=epilog(EXTRA),
)
@click.option(
    "-o",
    "--output",
    default=None,
    metavar="FILE|DIR",
    help="File-level trace to write (Parquet; default trace.parquet); with --block a directory "
    f"(default {BLOCK_DEFAULT_OUT}/) or the block trace's X.parquet name.",
)
@click.option(
    "--method",
    type=click.Choice(shimrun.METHODS),
    default="auto",
    show_default=True,
    help="Stack walk for the PC signature: frame pointers, libunwind, stack scan, or auto.",
)
@click.option(
    "--frames",
    type=click.IntRange(1, 64),
    default=12,
    show_default=True,
    help="Return addresses hashed into a signature.",
)
@click.option(
    "--keep-logs",
    type=click.Path(file_okay=False),
    default=None,
    metavar="DIR",
    help="Keep the raw shim logs in DIR (default: a temporary directory, removed).",
)
@click.option(
    "--symbols",
    "symbol_dirs",
    multiple=True,
    type=click.Path(exists=True, file_okay=False),
    metavar="DIR",
    help="Also look for separate debug files in DIR (by build-id, DIR/.build-id/xx/yyyy.debug, and "
    "by path, DIR/usr/lib/...) when naming frames; /usr/lib/debug is always searched. Repeatable.",
)
@click.option(
    "--no-symbols",
    is_flag=True,
    help="Do not name the frames of the PC table (addr2line) after the run.",
)
@click.option(
    "--coalesce/--no-coalesce",
    default=True,
    show_default=True,
    help="Fold runs of small contiguous writes of one thread to one file (<= 50 ms, 4 MiB) into one "
    "row per stretch of pages with the same last-writing PC (what 'pcstream map' sees is the same); "
    "--no-coalesce keeps one row per call, with its own PC.",
)
@click.option(
    "--block",
    is_flag=True,
    help="Also capture the real block I/O of CMD on a fresh ext4 loop device (root only).",
)
@click.option(
    "--capacity",
    type=SIZE,
    default=None,
    help=f"--block: size of the ext4 image: {SIZE_HELP} (default {BLOCK_DEFAULT_CAPACITY}).",
)
@click.option(
    "--mount-opts",
    default=None,
    metavar="OPTS",
    help="--block: mount options of the ext4 (default discard,noatime, as the model assumes).",
)
@click.option(
    "--table",
    default=None,
    metavar="TABLE.json",
    help="--block: run CMD with live write-lifetime hints from this PC table (learned by 'simulate "
    "--table'; its signature method replaces --method/--frames); needs the BPF capture. The layout "
    "file then has the shim's counts and the hint fidelity (docs/LIVE.md).",
)
@ssd_option
@click.option(
    "--json", "as_json", is_flag=True, help="--block: print the capture summary as one JSON object to stdout."
)
@aging_options
@click.argument("cmd", nargs=-1, required=True, type=click.UNPROCESSED, metavar="-- CMD [ARGS]...")
def command(
    output: str | None,
    method: str,
    frames: int,
    keep_logs: str | None,
    symbol_dirs: tuple[str, ...],
    no_symbols: bool,
    coalesce: bool,
    block: bool,
    capacity: int | None,
    mount_opts: str | None,
    age: float | None,
    age_seed: int,
    age_churn: int,
    table: str | None,
    ssd: str,
    as_json: bool,
    cmd: tuple[str, ...],
) -> int:
    """Run CMD with the pcshim LD_PRELOAD shim, then convert what it logged into one file-level
    trace (all processes, ordered by time) with a PC table. CMD's stdin, stdout, stderr and exit
    status are its own; it runs in a process group of its own, which gets the SIGTERM, SIGINT and
    SIGHUP sent to record (the trace is still written). A summary line, then one line per warning,
    goes to stderr.

    Example: pcstream record --block --capacity small -o run1 -- python3 $PWD/tools/fs_workload.py
    """
    if no_symbols and symbol_dirs:
        raise click.UsageError("--symbols DIR and --no-symbols exclude each other")
    symbols = not no_symbols
    dirs = [Path(d) for d in symbol_dirs]

    def warn(warning: str) -> None:
        click.echo(f"pcstream record: warning: {warning}", err=True)

    if block:
        if keep_logs is not None:
            raise click.UsageError("--keep-logs is not supported with --block")
        where = Path(output or BLOCK_DEFAULT_OUT)
        pages = capacity if capacity is not None else SIZE.convert(BLOCK_DEFAULT_CAPACITY, None, None)
        for early in runner.early_warnings(list(cmd), runner.shim_path()):
            warn(early)
        status, summary = compose.record_block(
            list(cmd), where, pages, method, frames, mount_opts, symbols=symbols, coalesce=coalesce,
            symbol_dirs=dirs, age=Aging(age, age_seed, age_churn) if age is not None else None,
            table=Path(table) if table else None, ssd=resolve_ssd(ssd),
        )  # fmt: skip
        click.echo(loopdev.summary_line(loopdev.Outputs.at(where), summary), err=True)
        if as_json:
            click.echo(json.dumps(summary, separators=(",", ":")))
        return status
    if capacity is not None or mount_opts is not None or age is not None:
        raise click.UsageError("--capacity, --mount-opts and --age need --block")
    if table is not None or as_json:
        raise click.UsageError("--table and --json need --block (live hints without recording: pcstream run)")
    out = Path(output or "trace.parquet")
    status, summary = shimrun.record(
        list(cmd),
        out,
        method,
        frames,
        Path(keep_logs) if keep_logs else None,
        symbols=symbols,
        coalesce=coalesce,
        symbol_dirs=dirs,
        say=warn,
    )
    click.echo(shimrun.summary_line(out, summary), err=True)
    return status
