"""Options, argument types and checks, and rendering helpers shared by the verbs (the one module
of the CLI package a verb may import besides the library)."""

from __future__ import annotations

import contextlib
import json
import os
import sys
from collections.abc import Callable, Iterator, Sequence
from typing import Any, TypeVar

import click
from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, Progress, TaskProgressColumn, TextColumn, TimeElapsedColumn
from rich.table import Table
from rich.text import Text

from pcstream import diagnose, units
from pcstream.compare.outcome import Outcome
from pcstream.errors import EXIT_FAILURE, EXIT_OK, report, require_file
from pcstream.report.data import BASELINE

F = TypeVar("F", bound=Callable[..., Any])

# Appended to every verb's --help ("\b" keeps click from re-flowing the lines).
UNITS = """\b
Units: a page is 4 KiB (4096 bytes); logical time = host pages written;
OP = (physical - logical) / logical pages; --prefill = share of the SSD's
logical pages written once before the trace; --warmup = host pages of the
trace excluded from every figure; latencies in microseconds (us); IOPS =
host requests per second of simulated time."""

TRACE_HELP = "block trace (Parquet, one row per request; see 'pcstream info')"


def epilog(extra: str = "") -> str:
    return f"{extra}\n\n{UNITS}" if extra else UNITS


# --------------------------------------------------------------------------- shared options


def ssd_option(f: F) -> F:
    return click.option(
        "--ssd",
        default="paper",
        show_default=True,
        metavar="PRESET|FILE.toml",
        help="SSD: a preset name (see 'pcstream presets') or an SSD config TOML file.",
    )(f)


def prefill_option(f: F) -> F:
    return click.option(
        "--prefill",
        type=click.FloatRange(0.0, 1.0),
        default=0.0,
        show_default=True,
        metavar="SHARE",
        help="Age the SSD first: write this share of its logical pages once, sequentially, as cold data.",
    )(f)


def warmup_option(f: F) -> F:
    return click.option(
        "--warmup",
        type=click.IntRange(min=0),
        default=0,
        show_default=True,
        metavar="PAGES",
        help="Exclude the trace's first PAGES host pages (4 KiB) from every measured figure.",
    )(f)


def seed_option(f: F, default: int = 0) -> F:
    return click.option(
        "--seed",
        type=click.IntRange(min=0),
        default=default,
        show_default=True,
        metavar="N",
        help="Seed of every random choice; equal inputs and seed give identical results.",
    )(f)


def timing_option(f: F) -> F:
    return click.option(
        "--timing/--no-timing",
        default=True,
        show_default=True,
        help="Model die timing (IOPS, latency). --no-timing is faster and leaves WAF unchanged.",
    )(f)


def json_option(f: F) -> F:
    return click.option("--json", "as_json", is_flag=True, help="Print JSON (one object per line).")(f)


def aging_options(f: F) -> F:
    """--age SHARE, --age-seed N, --age-churn ROUNDS (the verb gets ``age``, ``age_seed``,
    ``age_churn``; build a :class:`pcstream.aging.Aging` from them)."""
    f = click.option(
        "--age-churn",
        type=click.IntRange(min=0),
        default=0,
        show_default=True,
        metavar="ROUNDS",
        help="ROUNDS rounds that fill the file system to 98 % and delete random files back down to "
        "SHARE, so the free space is fragmented, and without discard still holds deleted data on the "
        "device, as on a used file system.",
    )(f)
    f = click.option(
        "--age-seed",
        type=click.IntRange(min=0),
        default=0,
        show_default=True,
        metavar="N",
        help="Seed of the aging's file sizes and names (same seed, same aged file system).",
    )(f)
    return click.option(
        "--age",
        type=click.FloatRange(0.0, 0.99, min_open=True),
        default=None,
        metavar="SHARE",
        help="Age the file system first: fill it with cold files (sizes of a published file-system "
        "study, spread over a directory tree) until SHARE of its blocks are in use; the program "
        "then runs in what is left. The aged state leads the trace (docs/FSMODEL.md).",
    )(f)


# --------------------------------------------------------------------------- argument types and checks


class SizeType(click.ParamType):
    """A click type for SIZE (see :func:`pcstream.units.parse_size`); the value is in pages."""

    name = "SIZE"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> int:
        if isinstance(value, int):
            return value
        try:
            return units.parse_size(str(value))
        except ValueError as exc:
            self.fail(str(exc), param, ctx)


SIZE = SizeType()
SIZE_HELP = units.SIZE_HELP


def resolve_ssd(value: str) -> str:
    """A preset name is passed as is; anything that looks like a path must be an existing file."""
    if value.endswith(".toml") or os.sep in value or os.path.exists(value):
        require_file(value, "SSD config file")
    return value


def parse_params(items: Sequence[str]) -> dict[str, str] | None:
    """``("k=v", ...)`` → ``{"k": "v"}``; a malformed item is a usage error."""
    params: dict[str, str] = {}
    for item in items:
        key, sep, value = item.partition("=")
        key = key.strip()
        if not sep or not key:
            raise click.UsageError(f"--param {item!r} is not KEY=VALUE; write it like --param threshold=4")
        params[key] = value.strip()
    return params or None


# --------------------------------------------------------------------------- output


# Width of tables when stdout is not a terminal (a pipe, a file, a test) and COLUMNS is unset.
PIPE_WIDTH = 120


class _PipeConsole(Console):
    """A console that lets a closed stdout pipe end the command as BrokenPipeError (status 141,
    see pcstream.errors) instead of rich's own ``SystemExit(1)``."""

    def on_broken_pipe(self) -> None:
        self.quiet = True
        raise BrokenPipeError


def stdout() -> Console:
    width = None if sys.stdout.isatty() or os.environ.get("COLUMNS") else PIPE_WIDTH
    return _PipeConsole(highlight=False, width=width)


def stderr() -> Console:
    return Console(stderr=True, highlight=False)


def print_json(obj: Any) -> None:
    click.echo(json.dumps(obj, separators=(",", ":")))


@contextlib.contextmanager
def progress_bar(description: str, unit: str = "rows") -> Iterator[Callable[[int, int], None] | None]:
    """A rich progress bar on stderr fed by ``(done, total)`` calls; None when stderr is no TTY."""
    if not sys.stderr.isatty():
        yield None
        return
    columns = (
        TextColumn("[bold]{task.description}"),
        BarColumn(),
        TaskProgressColumn(),
        TextColumn("{task.fields[count]}"),
        TimeElapsedColumn(),
    )
    with Progress(*columns, console=stderr(), transient=True) as progress:
        task = progress.add_task(description, total=None, count="")

        def update(done: int, total: int) -> None:
            progress.update(task, completed=done, total=total or None, count=f"{done:,}/{total:,} {unit}")

        yield update


def fmt(value: Any, digits: int = 3) -> str:
    """Numbers for tables: thousands separators for integers, ``digits`` significant decimals."""
    if value is None:
        return "—"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int):
        return f"{value:,}"
    if isinstance(value, float):
        if value != value:  # NaN
            return "—"
        if abs(value) >= 1000:
            return f"{value:,.0f}"
        return f"{value:.{digits}f}"
    if isinstance(value, (list, tuple)):
        return ", ".join(fmt(v, digits) for v in value)
    if isinstance(value, dict):
        return json.dumps(value)
    return str(value)


def fmt_share(value: Any) -> str:
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return f"{100.0 * value:.1f} %"
    return fmt(value)


def fmt_bytes(value: Any) -> str:
    if not isinstance(value, (int, float)) or isinstance(value, bool):
        return fmt(value)
    size = float(value)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if size < 1024 or unit == "TiB":
            return f"{size:,.0f} {unit}" if unit == "B" else f"{size:,.1f} {unit}"
        size /= 1024
    return fmt(value)


def key_value_table(title: str, rows: Sequence[tuple[str, str]]) -> Table:
    table = Table(title=escape(title), show_header=False, title_justify="left", min_width=len(title))
    table.add_column("field", style="bold")
    table.add_column("value", justify="right")
    for key, value in rows:
        table.add_row(Text(key), Text(value))
    return table


def flatten(obj: dict[str, Any], prefix: str = "") -> list[tuple[str, Any]]:
    """Nested dicts as dotted keys; lists of dicts are left to the caller."""
    rows: list[tuple[str, Any]] = []
    for key, value in obj.items():
        name = f"{prefix}{key}"
        if isinstance(value, dict):
            rows.extend(flatten(value, name + "."))
        else:
            rows.append((name, value))
    return rows


# --------------------------------------------------------------------------- comparisons


def outcomes_table(outcomes: Sequence[Outcome], timing: bool, title: str = "compare") -> Table:
    """One row per (trace, SSD, policy): WAF, WAF / baseline WAF (same trace and SSD), IOPS, p99
    latency, stream-0 share. The SSD column appears when the runs used more than one."""
    baseline: dict[tuple[str, str], float] = {}
    for outcome in outcomes:
        if outcome.result is not None and outcome.job.policy == BASELINE:
            baseline[(outcome.job.trace, outcome.job.ssd)] = float(outcome.result["waf"])
    show_norm = any(outcome.job.policy == BASELINE for outcome in outcomes)
    show_ssd = len({outcome.job.ssd for outcome in outcomes}) > 1

    note = diagnose.little_gc_note([o.result for o in outcomes if o.result is not None])
    rendered = Table(
        title=escape(title),
        title_justify="left",
        min_width=len(title),
        caption=escape(f"warning: {note}") if note else None,
        caption_justify="left",
        caption_style="yellow",
    )
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
