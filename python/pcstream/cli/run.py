"""``pcstream run``: run an unmodified program with live write-lifetime hints from a learned PC table."""

from __future__ import annotations

import json

import click

from pcstream import live
from pcstream.cli._common import epilog, resolve_ssd, ssd_option

EXTRA = """\b
The mapping from streams to Linux's four hint levels, which devices act
on the hints, and measured fidelity: docs/LIVE.md."""


@click.command(
    "run",
    short_help="run a program with write-lifetime hints from a learned PC table",
    context_settings={"ignore_unknown_options": True, "allow_interspersed_args": False},
    epilog=epilog(EXTRA),
)
@click.option(
    "--table",
    required=True,
    metavar="TABLE.json",
    help="PC table learned by 'simulate --table' (policy pcstream) on a recorded run of this program.",
)
@ssd_option
@click.option("--stats", is_flag=True, help="Print a summary line (writes, match rate, hints set) to stderr.")
@click.option("--json", "as_json", is_flag=True, help="Print the summary as one JSON object to stderr.")
@click.argument("cmd", nargs=-1, required=True, type=click.UNPROCESSED, metavar="-- CMD [ARGS]...")
def command(table: str, ssd: str, stats: bool, as_json: bool, cmd: tuple[str, ...]) -> int:
    """Run CMD with the pcshim shim setting each write's file hint (fcntl F_SET_RW_HINT) from the
    stream TABLE gives the write's PC on --ssd (the stream count the table is clustered for).
    CMD's stdin, stdout, stderr, exit status, threads, forks and signals are its own; nothing is
    recorded. Warnings (hints the kernel rejects, a table that matches no write) go to stderr.

    Example: pcstream run --table t.json --ssd paper -- db_bench --benchmarks=fillrandom
    """
    status, summary = live.run(list(cmd), table, resolve_ssd(ssd))
    for warning in summary["warnings"]:
        click.echo(f"pcstream run: warning: {warning}", err=True)
    if as_json:
        click.echo(json.dumps(summary, separators=(",", ":")), err=True)
    elif stats:
        c, t = summary["live"], summary["table"]
        click.echo(
            f"pcstream run: {c['writes']} writes from {c['processes']} processes, "
            f"{100 * c['match_rate']:.1f} % matched a PC of the table ({t['hinted_pcs']} of {t['pcs']} PCs "
            f"hinted), {c['hints_set']} hints set, {c['hints_rejected']} rejected",
            err=True,
        )
    return status
