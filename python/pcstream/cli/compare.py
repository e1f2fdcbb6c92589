"""``pcstream compare``: every trace × SSD config × policy, one table (or one JSON line per run),
optionally the results as files (``--results``) and an HTML report (``--report``). The sweep
itself is :mod:`pcstream.compare.sweep`."""

from __future__ import annotations

import os

import click

from pcstream import tracemeta
from pcstream.cli._common import (
    EXIT_INPUT,
    EXIT_USAGE,
    CliError,
    epilog,
    json_option,
    outcomes_table,
    print_json,
    progress_bar,
    report_failures,
    resolve_ssd,
    seed_option,
    settle,
    timing_option,
    warmup_option,
)
from pcstream.cli._common import stdout as stdout_console
from pcstream.compare import sweep
from pcstream.compare.jobs import default_jobs
from pcstream.compare.outcome import Job, Outcome
from pcstream.errors import check_output_name, require_file
from pcstream.options import SimOptions
from pcstream.report import RunInfo, require, write_report, write_results
from pcstream.report.runlog import RunLog
from pcstream.workloads.recipes import SUITE_SSD

EXTRA = """\b
WAF/base = the policy's WAF divided by the baseline's on the same trace and
SSD (shown when baseline is among the policies; below 1 is better).
--results DIR writes results.jsonl (the --json lines) and results.parquet
(one row per run); --report DIR writes index.html, figures/*.png and both
result files. results.jsonl grows a line per finished run while the sweep
runs; --resume DIR skips the runs it already holds. --ray without ADDRESS
starts a local Ray; with ADDRESS ('auto', HOST:PORT, ray://HOST:PORT) the
cluster's workers need pcstream installed, not the traces: they travel
through Ray's object store (docs/CLUSTER.md). Put --ray after the traces or
write --ray=ADDRESS."""


def bundled_suite(ctx: click.Context) -> list[str]:
    """The traces of the bundled suite, sorted; a usage error saying how to get traces if none."""
    found = sweep.bundled_traces()
    if found:
        return found
    makers = ["'pcstream gen'"]
    if "workload" in getattr(ctx.find_root().command, "commands", {}):
        makers.append("'pcstream workload'")
    raise CliError(
        f"no traces given and the bundled suite is missing (no *.parquet in {sweep.SUITE_DIR}); "
        f"pass block traces, make some with {' or '.join(makers)}, or run 'pcstream demo'",
        EXIT_USAGE,
    )


@click.command(
    "compare", short_help="every trace x SSD x policy: table, result files, HTML report", epilog=epilog(EXTRA)
)
@click.argument("traces", nargs=-1)
@click.option(
    "--policies",
    "policy_spec",
    default="all",
    show_default=True,
    metavar="all|a,b,...",
    help="Policies to run (see 'pcstream policies').",
)
@click.option(
    "--ssd",
    "ssds",
    multiple=True,
    default=("paper",),
    show_default=True,
    metavar="PRESET|FILE.toml",
    help="SSD: a preset name (see 'pcstream presets') or an SSD config TOML file; repeat for several.",
)
@click.option(
    "--prefill",
    type=click.FloatRange(0.0, 1.0),
    default=sweep.DEFAULT_PREFILL,
    show_default=True,
    metavar="SHARE",
    help="Age the SSD first: write this share of its logical pages once, sequentially, as cold data. "
    "Traces that carry their own aged state (pcstream map --age) are not prefilled, and an explicit "
    "--prefill with them is refused.",
)
@warmup_option
@seed_option
@timing_option
@json_option
@click.option(
    "--jobs",
    type=click.IntRange(min=1),
    metavar="N",
    default=None,
    show_default="number of cores",
    help=(
        "Simulations to run at once, each in its own process (CPUs of a local Ray); "
        "also the processes that draw the report's per-trace figures."
    ),
)
@click.option(
    "--results",
    "results_dir",
    metavar="DIR",
    help="Write DIR/results.jsonl (the --json lines) and DIR/results.parquet (one row per run).",
)
@click.option(
    "--report",
    "report_dir",
    metavar="DIR",
    help="Write an HTML report: DIR/index.html, DIR/figures/*.png and the result files.",
)
@click.option(
    "--resume",
    "resume",
    metavar="DIR",
    help="Go on with a sweep cut short: skip the runs DIR/results.jsonl already holds (same trace "
    "content, SSD, policy, seed, prefill, warm-up); implies --results DIR.",
)
@click.option(
    "--ray",
    "ray_address",
    is_flag=False,
    flag_value="",
    default=None,
    metavar="[ADDRESS]",
    help="Run the simulations as Ray tasks: on a local Ray, or on the cluster at ADDRESS.",
)
@click.pass_context
def command(
    ctx: click.Context,
    traces: tuple[str, ...],
    policy_spec: str,
    ssds: tuple[str, ...],
    prefill: float,
    warmup: int,
    seed: int,
    timing: bool,
    as_json: bool,
    jobs: int | None,
    results_dir: str | None,
    report_dir: str | None,
    resume: str | None,
    ray_address: str | None,
) -> None:
    """Simulate every TRACE (block traces, Parquet) on every SSD config under every selected
    policy and compare them. Without TRACE: the bundled suite (traces/*.parquet of the source tree,
    recorded from real programs on an aged file system, with and without discard; see
    traces/manifest.json) on its SSD, the 'paper' preset; each starts from its own aged state.

    Runs are independent and printed in a fixed order (traces, then SSD configs, then policies),
    one JSON object per line with --json. A failing run is reported once on stderr and the others
    still finish; the exit status is then 1.
    """
    if resume is not None:
        if results_dir is not None and os.path.abspath(results_dir) != os.path.abspath(resume):
            raise click.UsageError("--resume DIR writes its results to DIR; drop --results or give it DIR")
        results_dir = resume
    traces, ssd_list, prefill_given = _checked(ctx, traces, ssds, results_dir, report_dir, ray_address)
    policies = sweep.select_policies(policy_spec)
    if not policies:
        raise click.UsageError("--policies is empty; give 'all' or names such as baseline,hotcold")
    n_jobs = jobs or default_jobs()
    cdf_points = sweep.REPORT_CDF_POINTS if report_dir is not None else 0
    sim = SimOptions(warmup=warmup, seed=seed, timing=timing, cdf_points=cdf_points)
    job_list = sweep.make_jobs(
        traces, policies, sim, ssd=ssd_list, prefill=prefill if prefill_given else None
    )
    outcomes = _run(job_list, n_jobs, ray_address, results_dir or report_dir, resume is not None)
    if as_json:
        for outcome in outcomes:
            print_json(outcome.record())
    else:
        ssd_text = ", ".join(ssd_list)
        aged = "" if prefill_given or not sweep.aged_traces(traces) else " (aged traces: their own state)"
        title = f"compare · ssd {ssd_text} · prefill {prefill}{aged}"
        stdout_console().print(outcomes_table(outcomes, timing, title=title))
    status = report_failures(outcomes)
    if results_dir is not None:
        jsonl, parquet = write_results(outcomes, results_dir)
        click.echo(f"results: {jsonl}, {parquet}", err=True)
    if report_dir is not None:
        info = RunInfo(
            policies=policies,
            ssds=ssd_list,
            prefill=prefill,
            warmup=warmup,
            seed=seed,
            timing=timing,
            executor=sweep.executor_name(n_jobs, ray_address),
            command=sweep.command_line(
                traces, policy_spec, ssd_list, prefill if prefill_given else None, sim
            ),
        )
        index = write_report(outcomes, report_dir, info, jobs)
        click.echo(f"report: {index}", err=True)
    ctx.exit(status)


def _run(
    job_list: list[Job], n_jobs: int, ray_address: str | None, log_dir: str | None, resume: bool
) -> list[Outcome]:
    """Run the sweep, every finished run appended to LOG_DIR/results.jsonl at once (when given);
    when resuming, the runs that file already holds are taken from it, not run again."""
    if log_dir is None:
        with progress_bar("compare", unit="runs") as progress:
            return settle(sweep.run(job_list, n_jobs, ray_address, progress))
    log = RunLog(log_dir, job_list, resume=resume)
    done = log.done(job_list)
    if done:
        click.echo(f"resume: {len(done)} of {len(job_list)} runs already in {log.path}", err=True)
    todo = [job for index, job in enumerate(job_list) if index not in done]

    def finished(outcome: Outcome) -> None:
        settle([outcome])
        log.annotate(outcome)
        log.append(outcome)

    try:
        with progress_bar("compare", unit="runs") as progress:
            new = iter(sweep.run(todo, n_jobs, ray_address, progress, finished))
    finally:
        log.close()
    return [done[index] if index in done else next(new) for index in range(len(job_list))]


def _checked(
    ctx: click.Context,
    traces: tuple[str, ...],
    ssds: tuple[str, ...],
    results_dir: str | None,
    report_dir: str | None,
    ray_address: str | None,
) -> tuple[tuple[str, ...], list[str], bool]:
    """The arguments checked and completed before any run: the traces (default: the bundled
    suite), the SSD configs without repeats, and whether --prefill was given; the output
    directories made ready."""
    if ray_address and (ray_address.endswith(".parquet") or os.path.isfile(ray_address)):
        raise click.UsageError(
            f"--ray took {ray_address!r} as its ADDRESS; put --ray after the traces or write --ray=ADDRESS"
        )
    if not traces:
        traces = tuple(bundled_suite(ctx))
        # The bundled traces are sized for the suite's SSD: its preset unless --ssd says otherwise.
        if ctx.get_parameter_source("ssds") is click.core.ParameterSource.DEFAULT:
            ssds = (SUITE_SSD,)
    if results_dir is not None:
        require("results", ["pyarrow"])
        _prepare_dir(results_dir)
    if report_dir is not None:
        require("report")
        _prepare_dir(report_dir)
    for trace in traces:
        # A FIFO or a device is never a trace: refused before any run (a missing file fails its
        # own runs, like any other unreadable trace).
        if os.path.exists(trace):
            require_file(trace, "trace file")
    ssd_list = [resolve_ssd(ssd) for ssd in dict.fromkeys(ssds)]
    prefill_given = ctx.get_parameter_source("prefill") is not click.core.ParameterSource.DEFAULT
    if prefill_given and (aged := sweep.aged_traces(traces)):
        raise click.UsageError(
            f"{aged[0]} carries its own aged state ({tracemeta.aged_pages(aged[0]):,} pages); "
            "drop --prefill (it would age the device a second time)"
        )
    return traces, ssd_list, prefill_given


def _prepare_dir(path: str) -> None:
    check_output_name(path)
    if os.path.exists(path) and not os.path.isdir(path):
        raise CliError(f"{path}: exists and is not a directory; give a directory for the output", EXIT_USAGE)
    try:
        os.makedirs(path, exist_ok=True)
    except OSError as exc:
        raise CliError(f"{path}: cannot create the output directory ({exc.strerror})", EXIT_INPUT) from None
