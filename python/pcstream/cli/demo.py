"""``pcstream demo``: generate a few workloads, compare every policy on them, write the report."""

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

SSD = "small"
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


@click.command("demo", short_help="the main job: generate workloads, compare all policies", epilog=epilog())
@click.option(
    "--out",
    "out_dir",
    default="pcstream-demo",
    show_default=True,
    metavar="DIR",
    help="Directory for the traces, the results and the HTML report (DIR/index.html).",
)
@click.option("--quick", is_flag=True, help="Write 1x instead of 3x the logical capacity (for a smoke test).")
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
def command(ctx: click.Context, out_dir: str, quick: bool, timing: bool, jobs: int | None) -> None:
    """A short tour: generate five workloads (uniform, zipf 0.99, hot/cold 10/90, sequential,
    rocksdb-like mix) sized for the 'small' SSD preset, age the SSD to 90 % full (--prefill 0.9),
    compare every placement policy on them, and write the HTML report DIR/index.html (figures in
    DIR/figures) with the results: one JSON object per run in DIR/results.jsonl, one row per run in
    DIR/results.parquet.
    """
    started = time.monotonic()
    summary: dict[str, Any] = api.ssd_summary(SSD)
    capacity = int(summary["logical_pages"])
    writes = capacity * (1 if quick else 3)
    click.echo(
        f"generating {len(WORKLOADS)} workloads of {writes:,} page writes each for the '{SSD}' SSD "
        f"({capacity:,} logical pages of 4 KiB) into {out_dir}/traces",
        err=True,
    )
    traces = generate(out_dir, capacity, writes)

    policies = api.policy_names()
    n_jobs = jobs or default_jobs()
    click.echo(f"comparing {len(policies)} policies on {len(traces)} traces with {n_jobs} job(s)", err=True)
    outcomes = compare.run(
        compare.make_jobs(
            traces,
            policies,
            ssd=SSD,
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
        ssds=[SSD],
        prefill=PREFILL,
        warmup=0,
        seed=SEED,
        timing=timing,
        executor=compare.executor_name(n_jobs, None),
        command=compare.command_line(traces, "all", [SSD], PREFILL, 0, SEED, timing),
    )
    index = write_report(outcomes, out_dir, info)
    results_path = os.path.join(out_dir, "results.jsonl")

    console = stdout()
    console.print(
        compare.table(outcomes, timing, title=f"demo · ssd {SSD} · prefill {PREFILL} · {writes:,} writes")
    )
    click.echo(f"report:  {index}")
    click.echo(f"results: {results_path} (one JSON object per trace × policy), results.parquet beside it")
    click.echo(f"traces:  {os.path.join(out_dir, 'traces')}")
    click.echo(f"time:    {time.monotonic() - started:.1f} s")
    ctx.exit(compare.report_failures(outcomes))
