"""``pcstream compare``: every trace × every policy, one table (or one JSON line per pair)."""

from __future__ import annotations

import os
from collections.abc import Sequence
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
    prefill_option,
    print_json,
    progress_bar,
    resolve_ssd,
    seed_option,
    ssd_option,
    timing_option,
    warmup_option,
)
from pcstream.cli._common import stdout as stdout_console
from pcstream.errors import EXIT_FAILURE, EXIT_OK, EXIT_USAGE, CliError, report
from pcstream.runner import Job, Outcome, run_jobs

BASELINE = "baseline"

EXTRA = """\b
WAF/base = the policy's WAF divided by the baseline's on the same trace
(shown when baseline is among the policies; below 1 is better)."""


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
    ssd: str,
    prefill: float,
    warmup: int,
    seed: int,
    timing: bool,
) -> list[Job]:
    """Traces outer, policies inner: the order of every output."""
    return [
        Job(trace, policy, ssd=ssd, prefill=prefill, warmup=warmup, seed=seed, timing=timing)
        for trace in traces
        for policy in policies
    ]


def run(jobs: Sequence[Job], n_jobs: int) -> list[Outcome]:
    """Run the jobs with a progress bar on stderr when it is a terminal."""
    with progress_bar("compare", unit="runs") as progress:
        done = 0

        def on_done(_outcome: Outcome) -> None:
            nonlocal done
            done += 1
            if progress is not None:
                progress(done, len(jobs))

        return run_jobs(jobs, n_jobs, on_done)


def table(outcomes: Sequence[Outcome], timing: bool, title: str = "compare") -> Table:
    """One row per (trace, policy): WAF, WAF / baseline WAF, IOPS, p99 latency, stream-0 share."""
    baseline: dict[str, float] = {}
    for outcome in outcomes:
        if outcome.result is not None and outcome.job.policy == BASELINE:
            baseline[outcome.job.trace] = float(outcome.result["waf"])
    show_norm = any(outcome.job.policy == BASELINE for outcome in outcomes)

    rendered = Table(title=escape(title), title_justify="left", min_width=len(title))
    rendered.add_column("trace", no_wrap=True)
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
    previous_trace = None
    for outcome in outcomes:
        trace = os.path.basename(outcome.job.trace)
        label = trace if outcome.job.trace != previous_trace else ""
        if previous_trace is not None and outcome.job.trace != previous_trace:
            rendered.add_section()
        previous_trace = outcome.job.trace
        result: dict[str, Any] | None = outcome.result
        if result is None:
            cells: list[str | Text] = [Text(label), Text(outcome.job.policy), "—"]
            if show_norm:
                cells.append("—")
            cells += ["—", "—", "—", Text(f"failed (exit {outcome.status}), see stderr", style="red")]
        else:
            waf = float(result["waf"])
            cells = [Text(label), Text(outcome.job.policy), f"{waf:.3f}"]
            if show_norm:
                base = baseline.get(outcome.job.trace)
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


@click.command("compare", short_help="every trace x every policy, in one table", epilog=epilog(EXTRA))
@click.argument("traces", nargs=-1)
@click.option(
    "--policies",
    "policy_spec",
    default="all",
    show_default=True,
    metavar="all|a,b,...",
    help="Policies to run (see 'pcstream policies').",
)
@ssd_option
@prefill_option
@warmup_option
@seed_option
@timing_option
@json_option
@click.option(
    "--jobs",
    type=click.IntRange(min=1),
    metavar="N",
    default=1,
    show_default=True,
    help="Simulations to run at once, each in its own process.",
)
@click.pass_context
def command(
    ctx: click.Context,
    traces: tuple[str, ...],
    policy_spec: str,
    ssd: str,
    prefill: float,
    warmup: int,
    seed: int,
    timing: bool,
    as_json: bool,
    jobs: int,
) -> None:
    """Simulate every TRACE (block traces, Parquet) under every selected policy and compare them.

    Runs are independent and printed in a fixed order (traces, then policies), one JSON object per
    line with --json. A failing run is reported and the others still finish; the exit status is
    then 1.
    """
    if not traces:
        raise CliError(
            "there is no bundled trace suite yet; pass one or more block traces "
            "(make some with 'pcstream gen' or run 'pcstream demo')",
            EXIT_USAGE,
        )
    ssd = resolve_ssd(ssd)
    policies = select_policies(policy_spec)
    outcomes = run(
        make_jobs(traces, policies, ssd=ssd, prefill=prefill, warmup=warmup, seed=seed, timing=timing),
        jobs,
    )
    if as_json:
        for outcome in outcomes:
            print_json(outcome.record())
    else:
        stdout_console().print(table(outcomes, timing, title=f"compare · ssd {ssd} · prefill {prefill}"))
    ctx.exit(report_failures(outcomes))
