"""``pcstream record``: run a command with the write-capture shim and write a file-level trace."""

from __future__ import annotations

from pathlib import Path

import click

from pcstream import record as rec
from pcstream.cli._common import epilog


@click.command(
    "record",
    short_help="capture a program's file writes with their PC signatures",
    context_settings={"ignore_unknown_options": True, "allow_interspersed_args": False},
    epilog=epilog("Log format, hooks, methods and known gaps: docs/RECORD.md."),
)
@click.option(
    "-o",
    "--output",
    default="trace.parquet",
    show_default=True,
    metavar="FILE",
    help="File-level trace to write (Parquet).",
)
@click.option(
    "--method",
    type=click.Choice(rec.METHODS),
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
    "--symbols/--no-symbols",
    default=True,
    show_default=True,
    help="Name the frames of the PC table (addr2line) after the run.",
)
@click.argument("cmd", nargs=-1, required=True, type=click.UNPROCESSED, metavar="-- CMD [ARGS]...")
def command(
    output: str, method: str, frames: int, keep_logs: str | None, symbols: bool, cmd: tuple[str, ...]
) -> int:
    """Run CMD with the pcshim LD_PRELOAD shim, then convert what it logged into one file-level
    trace (all processes, ordered by time) with a PC table. CMD's stdin, stdout, stderr and exit
    status are its own; a one-line summary goes to stderr.
    """
    out = Path(output)
    status, summary = rec.record(
        list(cmd), out, method, frames, Path(keep_logs) if keep_logs else None, symbols=symbols
    )
    click.echo(rec.summary_line(out, summary), err=True)
    return status
