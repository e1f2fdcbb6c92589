"""Options, argument checks and rendering helpers shared by the verbs."""

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

from pcstream.errors import EXIT_INPUT, CliError, require_file

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


# --------------------------------------------------------------------------- argument checks


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


def prepare_output(path: str) -> str:
    """Create the parent directory of an output file; fail with one line if that is impossible."""
    parent = os.path.dirname(os.path.abspath(path))
    if os.path.isdir(path):
        raise CliError(f"{path}: is a directory; give a file name for the output", EXIT_INPUT)
    try:
        os.makedirs(parent, exist_ok=True)
    except OSError as exc:
        raise CliError(f"{parent}: cannot create the output directory ({exc.strerror})", EXIT_INPUT) from None
    return path


# --------------------------------------------------------------------------- output


# Width of tables when stdout is not a terminal (a pipe, a file, a test) and COLUMNS is unset.
PIPE_WIDTH = 120


def stdout() -> Console:
    width = None if sys.stdout.isatty() or os.environ.get("COLUMNS") else PIPE_WIDTH
    return Console(highlight=False, width=width)


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
