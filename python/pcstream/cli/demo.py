"""``pcstream demo``: compare every policy on the bundled suite of real-program traces (or on a
few generated workloads) and write the report."""

from __future__ import annotations

import os
import time
from typing import Any

import click

from pcstream import api
from pcstream.cli import compare
from pcstream.cli._common import epilog, stdout
from pcstream.cli._common import prepare_output as _prepare_output
from pcstream.report import RunInfo, write_report
from pcstream.runner import default_jobs
from pcstream.workloads.recipes import SUITE_SSD

# The generated workloads' SSD.
SSD = "small"
# --quick on the bundled suite: this many traces (the smallest).
QUICK_TRACES = 4
PREFILL = 0.9
SEED = 1

# (file stem, generator kind, parameters beyond size and seed)
WORKLOADS: tuple[tuple[str, str, dict[str, str]], ...] = (
    ("uniform", "uniform", {}),
    ("zipf-0.99", "zipf", {"theta": "0.99"}),
    ("hotcold-10-90", "hotcold", {"hot_fraction": "0.1", "hot_ratio": "0.9"}),
    ("seq", "seq", {}),
    ("mix-rocksdb-like", "mix", {"mix": "rocksdb-like"}),
)


def generate(out_dir: str, capacity_pages: int, writes: int) -> list[str]:
    """Write the demo workloads into ``out_dir/traces``; returns their paths in order."""
    paths = []
    for stem, kind, extra in WORKLOADS:
        path = os.path.join(out_dir, "traces", f"{stem}.parquet")
        _prepare_output(path)
        params = {"capacity_pages": str(capacity_pages), "writes": str(writes), "seed": str(SEED), **extra}
        api.gen(kind, path, params)
        paths.append(path)
    return paths


def bundled(quick: bool) -> list[str]:
    """The bundled suite's traces (the QUICK_TRACES smallest with ``quick``); empty if missing."""
    found = sorted(compare.SUITE_DIR.glob("*.parquet")) if compare.SUITE_DIR.is_dir() else []
    if quick:
        found = sorted(sorted(found, key=lambda p: (p.stat().st_size, p.name))[:QUICK_TRACES])
    return [str(p) for p in found]


@click.command("demo", short_help="the main job: compare all policies on the bundled suite", epilog=epilog())
@click.option(
    "--out",
    "out_dir",
    default="pcstream-demo",
    show_default=True,
    metavar="DIR",
    help="Directory for the traces, the results and the HTML report (DIR/index.html).",
)
@click.option(
    "--generated",
    is_flag=True,
    help="Use five generated workloads instead of the bundled suite (also when the suite is missing).",
)
@click.option(
    "--quick",
    is_flag=True,
    help=f"A smoke test: the {QUICK_TRACES} smallest bundled traces (generated: 1x, not 3x the capacity).",
)
@click.option(
    "--timing/--no-timing",
    default=True,
    show_default=True,
    help="Model die timing (IOPS, latency); --no-timing is faster and leaves WAF unchanged.",
)
@click.option(
    "--jobs",
    type=click.IntRange(min=1),
    metavar="N",
    default=None,
    help="Simulations at once  [default: number of cores].",
)
@click.pass_context
def command(
    ctx: click.Context, out_dir: str, generated: bool, quick: bool, timing: bool, jobs: int | None
) -> None:
    """The main job: compare every placement policy on the bundled suite (block traces of real
    programs in traces/ of the source tree: RocksDB, SQLite, PostgreSQL, GCC, mixed, fio, mail
    and file servers; see traces/manifest.json) on the 'medium' SSD preset aged to 90 % full
    (--prefill 0.9), and write the HTML report DIR/index.html (figures in DIR/figures, the PC
    streams with their call paths) with the results: one JSON object per run in
    DIR/results.jsonl, one row per run in DIR/results.parquet.

    With --generated (or without the bundled suite): five generated workloads (uniform, zipf
    0.99, hot/cold 10/90, sequential, rocksdb-like mix) on the 'small' preset instead.
    """
    started = time.monotonic()
    traces = [] if generated else bundled(quick)
    if traces:
        ssd = SUITE_SSD
        title = f"demo · bundled suite · ssd {ssd} · prefill {PREFILL}"
        click.echo(
            f"the bundled suite: {len(traces)} traces of real programs in {compare.SUITE_DIR}", err=True
        )
    else:
        if not generated:
            click.echo(
                f"the bundled suite is missing ({compare.SUITE_DIR}): using generated workloads", err=True
            )
        ssd = SSD
        summary: dict[str, Any] = api.ssd_summary(ssd)
        capacity = int(summary["logical_pages"])
        writes = capacity * (1 if quick else 3)
        click.echo(
            f"generating {len(WORKLOADS)} workloads of {writes:,} page writes each for the '{ssd}' SSD "
            f"({capacity:,} logical pages of 4 KiB) into {out_dir}/traces",
            err=True,
        )
        traces = generate(out_dir, capacity, writes)
        title = f"demo · ssd {ssd} · prefill {PREFILL} · {writes:,} writes"

    policies = api.policy_names()
    n_jobs = jobs or default_jobs()
    click.echo(f"comparing {len(policies)} policies on {len(traces)} traces with {n_jobs} job(s)", err=True)
    outcomes = compare.run(
        compare.make_jobs(
            traces,
            policies,
            ssd=ssd,
            prefill=PREFILL,
            warmup=0,
            seed=SEED,
            timing=timing,
            cdf_points=compare.REPORT_CDF_POINTS,
        ),
        n_jobs,
    )
    info = RunInfo(
        policies=policies,
        ssds=[ssd],
        prefill=PREFILL,
        warmup=0,
        seed=SEED,
        timing=timing,
        executor=compare.executor_name(n_jobs, None),
        command=compare.command_line(traces, "all", [ssd], PREFILL, 0, SEED, timing),
    )
    index = write_report(outcomes, out_dir, info)
    results_path = os.path.join(out_dir, "results.jsonl")

    console = stdout()
    console.print(compare.table(outcomes, timing, title=title))
    click.echo(f"report:  {index}")
    click.echo(f"results: {results_path} (one JSON object per trace × policy), results.parquet beside it")
    click.echo(f"traces:  {os.path.dirname(traces[0])}")
    click.echo(f"time:    {time.monotonic() - started:.1f} s")
    ctx.exit(compare.report_failures(outcomes))
