"""``pcstream demo``: compare every policy on the bundled suite of real-program traces (or on a
few generated workloads, :data:`pcstream.compare.sweep.GENERATED`) and write the report."""

from __future__ import annotations

import os
import time
from typing import Any

import click

from pcstream import api
from pcstream.cli._common import epilog, outcomes_table, progress_bar, report_failures, settle, stdout
from pcstream.compare import sweep
from pcstream.compare.jobs import default_jobs
from pcstream.options import SimOptions
from pcstream.report import RunInfo, answer, write_report
from pcstream.workloads.recipes import SUITE_SSD

# --quick on the bundled suite: this many traces (the smallest).
QUICK_TRACES = 4
# The prefill of traces without their own aged state (as compare's default).
PREFILL = sweep.DEFAULT_PREFILL
SEED = 1


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
    help="Simulations at once, and processes drawing the report's figures  [default: number of cores].",
)
@click.pass_context
def command(
    ctx: click.Context, out_dir: str, generated: bool, quick: bool, timing: bool, jobs: int | None
) -> None:
    """The main job: compare every placement policy on the bundled suite (block traces of real
    programs in traces/ of the source tree: RocksDB, SQLite, PostgreSQL, GCC, mixed, fio, mail
    and file servers; see traces/manifest.json) on the 'paper' SSD preset, each trace starting
    from the aged file system it was recorded for (90 % full), once mapped with online discard
    (NAME.parquet) and once without (NAME.nodiscard.parquet). It prints the answer first: per
    discard mode, a workload × policy table of WAF / baseline with each workload's best policy
    marked, the mode where garbage collection matters most first; then the full table. It writes
    the HTML report DIR/index.html (the same answer as heatmaps, figures in DIR/figures, the PC
    streams with their call paths) and the results: one JSON object per run in
    DIR/results.jsonl, one row per run in DIR/results.parquet.

    With --generated (or without the bundled suite): five generated workloads (uniform, zipf
    0.99, hot/cold 10/90, sequential, rocksdb-like mix) on the 'small' preset instead.
    """
    started = time.monotonic()
    traces, bundled, ssd, title = _workloads(out_dir, generated, quick)
    policies = api.policy_names()
    n_jobs = jobs or default_jobs()
    click.echo(f"comparing {len(policies)} policies on {len(traces)} traces with {n_jobs} job(s)", err=True)
    sim = SimOptions(seed=SEED, timing=timing, cdf_points=sweep.REPORT_CDF_POINTS)
    jobs_list = sweep.make_jobs(traces, policies, sim, ssd=ssd, prefill=None)
    with progress_bar("compare", unit="runs") as progress:
        outcomes = settle(sweep.run(jobs_list, n_jobs, progress=progress))
    info = RunInfo(
        policies=policies,
        ssds=[ssd],
        prefill=PREFILL,
        warmup=sim.warmup,
        seed=sim.seed,
        timing=sim.timing,
        executor=sweep.executor_name(n_jobs, None),
        command=sweep.command_line(traces, "all", [ssd], None, sim),
    )
    index = write_report(outcomes, out_dir, info, n_jobs)
    results_path = os.path.join(out_dir, "results.jsonl")

    console = stdout()
    if not bundled:
        console.print(outcomes_table(outcomes, timing, title=title))
    else:
        # The answer, not 30 × 14 rows of figures: the mode where GC matters most first.
        for mode, group in answer.by_mode(outcomes):
            console.print(answer.answer_table(mode, group, ssd))
        click.echo(f"every run's WAF, IOPS, latency and stream-0 share: {index} and the results below")
    click.echo(f"report:  {index}")
    click.echo(f"results: {results_path} (one JSON object per trace × policy), results.parquet beside it")
    click.echo(f"traces:  {os.path.dirname(traces[0])}")
    click.echo(f"time:    {time.monotonic() - started:.1f} s")
    ctx.exit(report_failures(outcomes))


def _workloads(out_dir: str, generated: bool, quick: bool) -> tuple[list[str], bool, str, str]:
    """The traces to compare, whether they are the bundled suite, their SSD and the table's title:
    the bundled suite when it is there and not --generated, else generated workloads (written
    into DIR/traces)."""
    traces = [] if generated else sweep.bundled_traces(QUICK_TRACES if quick else None)
    if traces:
        ssd = SUITE_SSD
        click.echo(f"the bundled suite: {len(traces)} traces of real programs in {sweep.SUITE_DIR}", err=True)
        return traces, True, ssd, f"demo · bundled suite · ssd {ssd}"
    if not generated:
        click.echo(f"the bundled suite is missing ({sweep.SUITE_DIR}): using generated workloads", err=True)
    ssd = sweep.GENERATED_SSD
    summary: dict[str, Any] = api.ssd_summary(ssd)
    capacity = int(summary["logical_pages"])
    writes = capacity * (1 if quick else 3)
    click.echo(
        f"generating {len(sweep.GENERATED)} workloads of {writes:,} page writes each for the '{ssd}' SSD "
        f"({capacity:,} logical pages of 4 KiB) into {out_dir}/traces",
        err=True,
    )
    traces = sweep.generate(out_dir, capacity, writes, SEED)
    return traces, False, ssd, f"demo · ssd {ssd} · prefill {PREFILL} · {writes:,} writes"
