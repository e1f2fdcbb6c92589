"""``pcstream record``: run a command with the write-capture shim and write a file-level trace."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import click

from pcstream import compose
from pcstream.cli._common import epilog, field_options, pack_options, resolve_ssd
from pcstream.errors import check_output_name
from pcstream.groundtruth import loopdev
from pcstream.options import RecordOptions
from pcstream.record import attach, runner, shimrun

BLOCK_DEFAULT_OUT = "record-block"

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
@field_options(
    RecordOptions,
    "method",
    "frames",
    "via",
    "keep_logs",
    "symbol_dirs",
    "no_symbols",
    "coalesce",
    "block",
    "capacity",
    "mount_opts",
    "table",
    "ssd",
)
@click.option(
    "--json", "as_json", is_flag=True, help="--block: print the capture summary as one JSON object to stdout."
)
@field_options(RecordOptions, "age", "age_seed", "age_churn")
@click.option(
    "--pid",
    "pids",
    default=None,
    metavar="PID[,PID...]",
    help="Record these running processes (their threads and the children they start) instead of "
    "running CMD, with the BPF capture (root); until --duration, SIGINT/SIGTERM, or they end.",
)
@click.option(
    "--duration",
    type=float,
    default=None,
    metavar="S",
    help="--pid: stop recording S seconds after the capture (and JFR in a JVM) is attached.",
)
@click.argument("cmd", nargs=-1, type=click.UNPROCESSED, metavar="-- CMD [ARGS]...")
@pack_options(RecordOptions)
def command(
    output: str | None,
    opts: RecordOptions,
    as_json: bool,
    pids: str | None,
    duration: float | None,
    cmd: tuple[str, ...],
) -> int:
    """Run CMD with the pcshim LD_PRELOAD shim, then convert what it logged into one file-level
    trace (all processes, ordered by time) with a PC table. CMD's stdin, stdout, stderr and exit
    status are its own; it runs in a process group of its own, which gets the SIGTERM, SIGINT and
    SIGHUP sent to record (the trace is still written). A summary line, then one line per warning,
    goes to stderr.

    Example: pcstream record --block --capacity small -o run1 -- python3 $PWD/tools/fs_workload.py
    """
    if opts.no_symbols and opts.symbol_dirs:
        raise click.UsageError("--symbols DIR and --no-symbols exclude each other")
    if cmd and cmd[0].startswith("-"):
        # ignore_unknown_options hands an unknown option to CMD: no program is named like one
        raise click.UsageError(f"no such option: {cmd[0]}")
    attach.check_pids_usage(cmd, pids)
    if duration is not None and pids is None:
        raise click.UsageError("--duration needs --pid")
    if pids is not None:
        if opts.block:
            raise click.UsageError("--pid and --block exclude each other")
        out = Path(output or "trace.parquet")
        status, summary = attach.record_pids(attach.parse_pids(pids), out, opts, duration)
        click.echo(shimrun.summary_line(out, summary), err=True)
        return status

    def warn(warning: str) -> None:
        click.echo(f"pcstream record: warning: {warning}", err=True)

    if opts.block:
        if opts.keep_logs is not None:
            raise click.UsageError("--keep-logs is not supported with --block")
        where = Path(check_output_name(output or BLOCK_DEFAULT_OUT))
        runner.check_command(list(cmd))
        runner.check_outputs_spare_command(list(vars(loopdev.Outputs.at(where)).values()), list(cmd))
        for early in runner.early_warnings(list(cmd), runner.shim_path()):
            warn(early)
        block_opts = dataclasses.replace(opts, ssd=resolve_ssd(opts.ssd))
        status, summary = compose.record_block(list(cmd), where, block_opts)
        click.echo(loopdev.summary_line(loopdev.Outputs.at(where), summary), err=True)
        if as_json:
            click.echo(json.dumps(summary, separators=(",", ":")))
        return status
    if opts.capacity is not None or opts.mount_opts is not None or opts.age is not None:
        raise click.UsageError("--capacity, --mount-opts and --age need --block")
    if opts.table is not None or as_json:
        raise click.UsageError("--table and --json need --block (live hints without recording: pcstream run)")
    out = Path(output or "trace.parquet")
    status, summary = shimrun.record(list(cmd), out, opts, say=warn)
    click.echo(shimrun.summary_line(out, summary), err=True)
    return status
