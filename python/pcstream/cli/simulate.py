"""``pcstream simulate``: replay one block trace on a simulated SSD under one placement policy."""

from __future__ import annotations

import csv
import dataclasses
import json
import os
from typing import Any

import click
from rich.table import Table

from pcstream import api, diagnose, live
from pcstream.cli._common import (
    EXIT_FAILURE,
    CliError,
    epilog,
    field_options,
    fmt,
    fmt_bytes,
    fmt_share,
    json_option,
    key_value_table,
    pack_options,
    progress_bar,
    resolve_ssd,
)
from pcstream.cli._common import stdout as stdout_console
from pcstream.errors import check_output, check_output_name, prepare_output, require_file
from pcstream.options import SimOptions
from pcstream.outputs import atomic_write

CDF_POINTS = 1000

EXTRA = """\b
Results: WAF = (host pages + GC-copied pages) / host pages; IOPS and
latency p50/p99/p99.9 (us) come from the timing model; stream-0 share =
share of host pages left in the default stream; lifetimes per stream are
in logical time (host pages written between a write and its invalidation)."""


def render(result: dict[str, Any], timing: bool) -> list[Table]:
    """The result as two tables: headline figures, then one row per stream."""

    def timed(value: Any) -> str:
        return fmt(value) if timing else "— (--no-timing)"

    rows = [
        ("WAF", fmt(result.get("waf"))),
        ("host pages written (4 KiB)", fmt(result.get("host_pages"))),
        ("GC-copied pages", fmt(result.get("gc_pages"))),
        ("erases", fmt(result.get("erases"))),
        ("trimmed pages", fmt(result.get("trims_pages"))),
        ("read pages", fmt(result.get("reads_pages"))),
        ("IOPS", timed(result.get("iops"))),
        ("latency p50 (us)", timed(result.get("lat_p50_us"))),
        ("latency p99 (us)", timed(result.get("lat_p99_us"))),
        ("latency p99.9 (us)", timed(result.get("lat_p999_us"))),
        ("latency mean (us)", timed(result.get("lat_mean_us"))),
        ("stream-0 share", fmt_share(result.get("stream0_share"))),
        ("open write points", fmt(result.get("open_write_points"))),
        ("policy state", fmt_bytes(result.get("policy_state_bytes"))),
        ("wall time (s)", fmt(result.get("wall_s"))),
        ("host pages / s (wall)", fmt(result.get("host_pages_per_s"))),
        ("page ops / s (wall)", fmt(result.get("page_ops_per_s"))),
    ]
    title = (
        f"{os.path.basename(str(result.get('trace', '')))} · {result.get('policy')} · "
        f"ssd {result.get('ssd')} · prefill {result.get('prefill')} · warmup {result.get('warmup')} · "
        f"seed {result.get('seed')}"
    )
    tables = [key_value_table(title, rows)]

    per_stream = result.get("per_stream") or []
    if per_stream:
        title = "per stream (lifetimes in logical time = host pages)"
        table = Table(title=title, title_justify="left", min_width=len(title))
        for column in ("stream", "pages", "share", "lifetime p25", "p50", "p75"):
            table.add_column(column, justify="right")
        total = sum(int(s.get("pages") or 0) for s in per_stream) or 1
        for stream in per_stream:
            pages = int(stream.get("pages") or 0)
            table.add_row(
                fmt(stream.get("stream")),
                fmt(pages),
                fmt_share(pages / total),
                fmt(stream.get("lifetime_p25")),
                fmt(stream.get("p50", stream.get("lifetime_p50"))),
                fmt(stream.get("p75", stream.get("lifetime_p75"))),
            )
        tables.append(table)
    return tables


def write_cdf(path: str, cdf: list[list[float]]) -> None:
    with atomic_write(path, newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(["latency_us", "fraction"])
        for point in cdf:
            writer.writerow(point)


@click.command(
    "simulate", short_help="replay one trace under one policy: WAF, IOPS, latency", epilog=epilog(EXTRA)
)
@click.argument("trace")
@click.option(
    "--policy",
    required=True,
    metavar="NAME",
    help="Placement policy (see 'pcstream policies'), e.g. baseline, hotcold, pcstream.",
)
@field_options(SimOptions)
@click.option(
    "--cdf",
    metavar="FILE.csv",
    help="Write the latency CDF (latency_us, fraction) to this CSV file; needs timing.",
)
@json_option
@pack_options(SimOptions)
def command(trace: str, policy: str, opts: SimOptions, cdf: str | None, as_json: bool) -> None:
    """Replay TRACE (a block trace, Parquet) on a simulated SSD with placement policy NAME.

    Prints WAF, GC copies, erases, IOPS, latency percentiles and per-stream lifetimes; --json prints
    the same as one JSON object.
    """
    if cdf is not None and not opts.timing:
        raise click.UsageError("--cdf needs the timing model; drop --no-timing")
    require_file(trace, "trace file")
    table = opts.table
    if table is not None:
        check_output_name(table)
        if os.path.exists(table):  # read first: an input, refused by its type like every input
            require_file(table, "PC table file")
        check_output(table, [trace, opts.ssd], quiet=True)  # read, then replaced: no notice
    if cdf is not None:
        prepare_output(cdf, [trace, opts.ssd] + ([table] if table else []))
    opts = dataclasses.replace(
        opts, ssd=resolve_ssd(opts.ssd), cdf_points=CDF_POINTS if cdf is not None else 0
    )

    with progress_bar(f"simulate {policy}") as progress:
        text = api.simulate_json(trace, policy, opts, progress=progress)

    if table is not None and policy in live.TABLE_POLICIES:
        live.stamp_signature(table, trace)  # the signature method 'pcstream run' must use
    result = json.loads(text)
    if cdf is not None:
        points = result.pop("latency_cdf", None)
        if not isinstance(points, list):
            raise CliError(
                f"{trace}: the engine returned no latency CDF; nothing written to {cdf}", EXIT_FAILURE
            )
        write_cdf(cdf, points)

    if as_json:
        # The engine's text unchanged unless the CDF was moved to its file: byte-stable output.
        click.echo(text.strip() if cdf is None else json.dumps(result, separators=(",", ":")))
        return
    console = stdout_console()
    for rendered in render(result, opts.timing):
        console.print(rendered)
    if diagnose.little_gc(result):
        click.echo(
            f"warning: GC copied {diagnose.gc_share(result):.1%} of the host pages "
            f"(< {diagnose.LITTLE_GC_SHARE:.0%}); {diagnose.LITTLE_GC_WHY}",
            err=True,
        )
    if cdf is not None:
        click.echo(f"latency CDF written to {cdf}")
