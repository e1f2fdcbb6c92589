"""``pcstream compare``: every trace × SSD config × policy, one table (or one JSON line per run),
optionally the results as files (``--results``) and an HTML report (``--report``)."""

from __future__ import annotations

import os
import shlex
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import click
from rich.markup import escape
from rich.table import Table
from rich.text import Text

from pcstream import api
from pcstream.cli._common import (
    epilog,
    fmt,
    fmt_share,
    json_option,
    print_json,
    progress_bar,
    seed_option,
    timing_option,
    warmup_option,
)
from pcstream.cli._common import stdout as stdout_console
from pcstream.errors import EXIT_FAILURE, EXIT_INPUT, EXIT_OK, EXIT_USAGE, CliError, report
from pcstream.report import RunInfo, require, write_report, write_results
from pcstream.report.data import BASELINE
from pcstream.runner import Job, Outcome, default_jobs, run_jobs, run_jobs_ray
from pcstream.workloads.recipes import SUITE_SSD

# compare ages the SSD by default (simulate does not): steady-state GC is what placement changes.
DEFAULT_PREFILL = 0.9
# Points of the latency CDF each run returns when a report is written.
REPORT_CDF_POINTS = 100
# The bundled suite: traces/*.parquet at the top of the source tree (python/pcstream/cli/ → ../../..).
SUITE_DIR = Path(__file__).resolve().parents[3] / "traces"

EXTRA = """\b
WAF/base = the policy's WAF divided by the baseline's on the same trace and
SSD (shown when baseline is among the policies; below 1 is better).
--results DIR writes results.jsonl (the --json lines) and results.parquet
(one row per run); --report DIR writes index.html, figures/*.png and both
result files. --ray without ADDRESS starts a local Ray; with ADDRESS ('auto',
HOST:PORT, ray://HOST:PORT) the cluster's workers need pcstream installed and
the traces at the same paths. Put --ray after the traces or write --ray=ADDRESS."""


def select_policies(spec: str) -> list[str]:
    """``all`` → every registered policy; ``a,b`` → those, in the given order, without repeats."""
    if spec.strip() == "all":
        return api.policy_names()
    names = list(dict.fromkeys(name.strip() for name in spec.split(",") if name.strip()))
    if not names:
        raise click.UsageError("--policies is empty; give 'all' or names such as baseline,hotcold")
    return names


def make_jobs(
    traces: Sequence[str],
    policies: Sequence[str],
    *,
    ssd: str | Sequence[str],
    prefill: float,
    warmup: int,
    seed: int,
    timing: bool,
    cdf_points: int = 0,
) -> list[Job]:
    """Traces outer, then SSD configs, policies inner: the order of every output."""
    ssds = [ssd] if isinstance(ssd, str) else list(ssd)
    return [
        Job(
            trace,
            policy,
            ssd=one_ssd,
            prefill=prefill,
            warmup=warmup,
            seed=seed,
            timing=timing,
            cdf_points=cdf_points if timing else 0,
        )
        for trace in traces
        for one_ssd in ssds
        for policy in policies
    ]


def run(jobs: Sequence[Job], n_jobs: int, ray_address: str | None = None) -> list[Outcome]:
    """Run the jobs with a progress bar on stderr when it is a terminal.

    ``ray_address`` None runs them in ``n_jobs`` local processes; "" in a local Ray instance of
    ``n_jobs`` CPUs; anything else on that Ray cluster.
    """
    with progress_bar("compare", unit="runs") as progress:
        done = 0

        def on_done(_outcome: Outcome) -> None:
            nonlocal done
            done += 1
            if progress is not None:
                progress(done, len(jobs))

        if ray_address is not None:
            return run_jobs_ray(jobs, ray_address or None, n_jobs, on_done)
        return run_jobs(jobs, n_jobs, on_done)


def executor_name(n_jobs: int, ray_address: str | None) -> str:
    if ray_address is None:
        return f"local, {n_jobs} worker process(es)" if n_jobs > 1 else "local, in process"
    if ray_address == "":
        return f"ray, local instance with {n_jobs} CPU(s)"
    return f"ray, cluster at {ray_address}"


def bundled_suite(ctx: click.Context) -> list[str]:
    """The traces of the bundled suite, sorted; a usage error saying how to get traces if none."""
    found = sorted(str(path) for path in SUITE_DIR.glob("*.parquet")) if SUITE_DIR.is_dir() else []
    if found:
        return found
    makers = ["'pcstream gen'"]
    if "workload" in getattr(ctx.find_root().command, "commands", {}):
        makers.append("'pcstream workload'")
    raise CliError(
        f"no traces given and the bundled suite is missing (no *.parquet in {SUITE_DIR}); "
        f"pass block traces, make some with {' or '.join(makers)}, or run 'pcstream demo'",
        EXIT_USAGE,
    )


def table(outcomes: Sequence[Outcome], timing: bool, title: str = "compare") -> Table:
    """One row per (trace, SSD, policy): WAF, WAF / baseline WAF (same trace and SSD), IOPS, p99
    latency, stream-0 share. The SSD column appears when the runs used more than one."""
    baseline: dict[tuple[str, str], float] = {}
    for outcome in outcomes:
        if outcome.result is not None and outcome.job.policy == BASELINE:
            baseline[(outcome.job.trace, outcome.job.ssd)] = float(outcome.result["waf"])
    show_norm = any(outcome.job.policy == BASELINE for outcome in outcomes)
    show_ssd = len({outcome.job.ssd for outcome in outcomes}) > 1

    rendered = Table(title=escape(title), title_justify="left", min_width=len(title))
    rendered.add_column("trace", no_wrap=True)
    if show_ssd:
        rendered.add_column("ssd", no_wrap=True)
    rendered.add_column("policy", no_wrap=True)
    rendered.add_column("WAF", justify="right")
    if show_norm:
        rendered.add_column("WAF/base", justify="right")
    rendered.add_column("IOPS", justify="right")
    rendered.add_column("p99 (us)", justify="right")
    rendered.add_column("stream-0", justify="right")
    any_failed = any(outcome.result is None for outcome in outcomes)
    if any_failed:
        rendered.add_column("note")
    previous: tuple[str, str] | None = None
    for outcome in outcomes:
        group = (outcome.job.trace, outcome.job.ssd)
        label = os.path.basename(outcome.job.trace) if previous is None or group[0] != previous[0] else ""
        if previous is not None and group != previous:
            rendered.add_section()
        ssd_cell = [Text(outcome.job.ssd if group != previous else "")] if show_ssd else []
        previous = group
        result: dict[str, Any] | None = outcome.result
        if result is None:
            cells: list[str | Text] = [Text(label), *ssd_cell, Text(outcome.job.policy), "—"]
            if show_norm:
                cells.append("—")
            cells += ["—", "—", "—", Text(f"failed (exit {outcome.status}), see stderr", style="red")]
        else:
            waf = float(result["waf"])
            cells = [Text(label), *ssd_cell, Text(outcome.job.policy), f"{waf:.3f}"]
            if show_norm:
                base = baseline.get(group)
                cells.append(f"{waf / base:.3f}" if base else "—")
            cells += [
                fmt(result.get("iops")) if timing else "—",
                fmt(result.get("lat_p99_us")) if timing else "—",
                fmt_share(result.get("stream0_share")),
            ]
            if any_failed:
                cells.append("")
        rendered.add_row(*cells)
    return rendered


def report_failures(outcomes: Sequence[Outcome]) -> int:
    """One stderr line per distinct failure; the exit status of the batch."""
    seen: set[str] = set()
    for outcome in outcomes:
        if outcome.error is not None and outcome.error not in seen:
            seen.add(outcome.error)
            report(outcome.error)
    return EXIT_FAILURE if seen else EXIT_OK


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
    default=DEFAULT_PREFILL,
    show_default=True,
    metavar="SHARE",
    help="Age the SSD first: write this share of its logical pages once, sequentially, as cold data.",
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
    help="Simulations to run at once, each in its own process (CPUs of a local Ray).",
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
    ray_address: str | None,
) -> None:
    """Simulate every TRACE (block traces, Parquet) on every SSD config under every selected
    policy and compare them. Without TRACE: the bundled suite (traces/*.parquet of the source tree,
    recorded from real programs; see traces/manifest.json) on its SSD, the 'medium' preset.

    Runs are independent and printed in a fixed order (traces, then SSD configs, then policies),
    one JSON object per line with --json. A failing run is reported once on stderr and the others
    still finish; the exit status is then 1.
    """
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
        require("--results", ["pyarrow"])
        _prepare_dir(results_dir)
    if report_dir is not None:
        require("--report")
        _prepare_dir(report_dir)
    ssd_list = list(dict.fromkeys(ssds))
    policies = select_policies(policy_spec)
    n_jobs = jobs or default_jobs()
    job_list = make_jobs(
        traces,
        policies,
        ssd=ssd_list,
        prefill=prefill,
        warmup=warmup,
        seed=seed,
        timing=timing,
        cdf_points=REPORT_CDF_POINTS if report_dir is not None else 0,
    )
    outcomes = run(job_list, n_jobs, ray_address)
    if as_json:
        for outcome in outcomes:
            print_json(outcome.record())
    else:
        ssd_text = ", ".join(ssd_list)
        stdout_console().print(table(outcomes, timing, title=f"compare · ssd {ssd_text} · prefill {prefill}"))
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
            executor=executor_name(n_jobs, ray_address),
            command=command_line(traces, policy_spec, ssd_list, prefill, warmup, seed, timing),
        )
        index = write_report(outcomes, report_dir, info)
        click.echo(f"report: {index}", err=True)
    ctx.exit(status)


def command_line(
    traces: Sequence[str],
    policy_spec: str,
    ssds: Sequence[str],
    prefill: float,
    warmup: int,
    seed: int,
    timing: bool,
) -> str:
    """The compare command that reproduces these results (executor options left out)."""
    words = ["pcstream", "compare", *traces, "--policies", policy_spec]
    for ssd in ssds:
        words += ["--ssd", ssd]
    words += ["--prefill", f"{prefill:g}", "--warmup", str(warmup), "--seed", str(seed)]
    if not timing:
        words.append("--no-timing")
    return shlex.join(words)


def _prepare_dir(path: str) -> None:
    if os.path.exists(path) and not os.path.isdir(path):
        raise CliError(f"{path}: exists and is not a directory; give a directory for the output", EXIT_INPUT)
    try:
        os.makedirs(path, exist_ok=True)
    except OSError as exc:
        raise CliError(f"{path}: cannot create the output directory ({exc.strerror})", EXIT_INPUT) from None
