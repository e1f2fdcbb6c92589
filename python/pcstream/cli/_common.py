"""Options, argument types and checks, and rendering helpers shared by the verbs (the one module
of the CLI package a verb may import besides the library)."""

from __future__ import annotations

import contextlib
import dataclasses
import functools
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

from pcstream import api, diagnose, options, units
from pcstream.compare.outcome import Outcome
from pcstream.diagnose import BASELINE
from pcstream.errors import Kind, describe, one_line, require_config_file

F = TypeVar("F", bound=Callable[..., Any])

# Appended to every verb's --help ("\b" keeps click from re-flowing the lines).
UNITS = """\b
Units: a page is 4 KiB (4096 bytes); logical time = host pages written;
OP = (physical - logical) / logical pages; --prefill = share of the SSD's
logical pages written once before the trace; --warmup = host pages of the
trace excluded from every figure; latencies in microseconds (us); IOPS =
host requests per second of simulated time."""

TRACE_HELP = "block trace (Parquet, one row per request; see 'pcstream info')"


# --------------------------------------------------------------------------- errors and exit statuses

# Every error a user can cause ends as ``pcstream: error: <message>`` on stderr — one line, naming
# the file or option at fault and what to do — and one of these statuses; never a traceback.
#
# | status | meaning                                                          |
# |--------|------------------------------------------------------------------|
# | 0      | success                                                          |
# | 1      | some jobs of a batch failed (compare), or another failure        |
# | 2      | usage: unknown policy / generator kind / option, bad parameter,  |
# |        | a refused output                                                 |
# | 3      | input: missing, unreadable or malformed trace or file            |
# | 4      | config: bad SSD config, impossible geometry, unknown preset, a   |
# |        | device (or info's page bitmap) larger than the memory available |
# | 77     | record --block without root (record --via bpf and --pid without |
# |        | the BPF capture or root: 2)                                      |
# | 126    | record: the program is not executable (as a shell says)         |
# | 127    | record: the program is not found (as a shell says)               |
# | 130    | interrupted (Ctrl-C)                                             |
# | 141    | stdout closed early (``pcstream info T | head``): stops quietly   |
# | 143    | terminated (SIGTERM): temporary outputs removed                  |
EXIT_OK = 0
EXIT_FAILURE = 1
EXIT_USAGE = 2
EXIT_INPUT = 3
EXIT_CONFIG = 4
EXIT_NOT_ROOT = 77  # sysexits.h EX_NOPERM: the run needs root
EXIT_NOT_RUNNABLE = 126
EXIT_NOT_FOUND = 127
EXIT_INTERRUPTED = 130
EXIT_BROKEN_PIPE = 141
EXIT_TERMINATED = 143

# The exit status of each kind of domain error (pcstream.errors.Kind).
STATUS: dict[Kind, int] = {
    Kind.USAGE: EXIT_USAGE,
    Kind.INPUT: EXIT_INPUT,
    Kind.CONFIG: EXIT_CONFIG,
    Kind.FAILURE: EXIT_FAILURE,
    Kind.NOT_ROOT: EXIT_NOT_ROOT,
    Kind.PROGRAM_NOT_RUNNABLE: EXIT_NOT_RUNNABLE,
    Kind.PROGRAM_NOT_FOUND: EXIT_NOT_FOUND,
    Kind.TERMINATED: EXIT_TERMINATED,
}

PREFIX = "pcstream: error: "


class CliError(Exception):
    """An error found by the command line itself, with its exit status."""

    def __init__(self, message: str, status: int = EXIT_FAILURE) -> None:
        super().__init__(message)
        self.message = message
        self.status = status


def report(message: str) -> None:
    """Print ``pcstream: error: <message>`` as one line on stderr."""
    click.echo(PREFIX + one_line(message), err=True)


def spelling(param: str) -> str:
    """The option that sets the library's parameter ``param`` (``method`` → ``--method``)."""
    for cls in options.ALL:
        for f, spec in options.fields_of(cls):
            if f.name == param:
                return options.flag_of(f.name, spec)
    return "--" + param.replace("_", "-")


def classify(exc: BaseException) -> tuple[str, int] | None:
    """(one-line message, exit status) for a user error; None for a bug (let it propagate)."""
    if isinstance(exc, CliError):
        return one_line(exc.message), exc.status
    found = describe(exc, spelling)  # the parameters a library error names, spelled as options
    if found is not None:
        return found[0], STATUS[found[1]]
    if isinstance(exc, click.UsageError):
        hint = ""
        if exc.ctx is not None:
            hint = f"; see '{exc.ctx.command_path} --help'"
        return one_line(exc.format_message()).rstrip(".") + hint, EXIT_USAGE
    if isinstance(exc, click.ClickException):
        return one_line(exc.format_message()), exc.exit_code
    if isinstance(exc, (KeyboardInterrupt, click.Abort)):
        return "interrupted", EXIT_INTERRUPTED
    return None


def settle(outcomes: list[Outcome]) -> list[Outcome]:
    """Give each failed run of a sweep the exit status of its error's kind (its JSON record's
    ``exit_status``); returns ``outcomes``."""
    for outcome in outcomes:
        if outcome.kind is not None:
            outcome.status = STATUS[Kind(outcome.kind)]
    return outcomes


def epilog(extra: str = "") -> str:
    return f"{extra}\n\n{UNITS}" if extra else UNITS


# --------------------------------------------------------------------------- options from the options objects


def _click_type(f: dataclasses.Field[Any], spec: options.Spec) -> click.ParamType | None:
    if spec.kind == "size":
        return SIZE
    if spec.kind == "dir":
        return click.Path(file_okay=False)
    if spec.kind == "existing_dir":
        return click.Path(exists=True, file_okay=False)
    if spec.choices is not None:
        return click.Choice(spec.choices)
    if spec.low is None and spec.high is None:
        return None
    if str(f.type).startswith("float"):
        return click.FloatRange(spec.low, spec.high, min_open=spec.low_open)
    return click.IntRange(
        None if spec.low is None else int(spec.low), None if spec.high is None else int(spec.high)
    )


def _click_option(f: dataclasses.Field[Any], spec: options.Spec) -> Callable[[F], F]:
    """The click option of one field: its spelling, type, default, unit and help."""
    flag = options.flag_of(f.name, spec)
    decls = [f"{flag}/{spec.negative}" if spec.negative else flag, f.name]
    kwargs: dict[str, Any] = {"help": spec.help}
    if spec.show_default:
        kwargs["show_default"] = True
    if spec.unit is not None:
        kwargs["metavar"] = spec.unit
    if spec.repeat:
        kwargs["multiple"] = True
    else:
        kwargs["default"] = spec.cli_default if f.default is dataclasses.MISSING else f.default
        if str(f.type) == "bool" and spec.negative is None:
            kwargs["is_flag"] = True
    click_type = _click_type(f, spec)
    if click_type is not None:
        kwargs["type"] = click_type
    return click.option(*decls, **kwargs)


def field_options(cls: type, *names: str) -> Callable[[F], F]:
    """The click options of the fields ``names`` of the options class ``cls`` (all its fields an
    option sets when none are named), shown in the order named."""
    fields = dict((f.name, (f, spec)) for f, spec in options.fields_of(cls))
    chosen = names or tuple(name for name, (_, spec) in fields.items() if spec.cli)

    def decorate(func: F) -> F:
        for name in reversed(chosen):
            func = _click_option(*fields[name])(func)
        return func

    return decorate


def pack_options(cls: type, into: str = "opts") -> Callable[[F], F]:
    """Gather the values of ``cls``'s options (see :func:`field_options`) into one ``cls`` object,
    passed to the command as the keyword ``into``."""

    def decorate(func: F) -> F:
        @functools.wraps(func)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            values: dict[str, Any] = {}
            for f, spec in options.fields_of(cls):
                if spec.cli and f.name in kwargs:
                    value = kwargs.pop(f.name)
                    values[f.name] = (
                        tuple((parse_params(value) or {}).items()) if spec.kind == "pairs" else value
                    )
            kwargs[into] = cls(**values)
            return func(*args, **kwargs)

        return wrapper  # type: ignore[return-value]

    return decorate


# Options several verbs share, each defined once in pcstream.options.
ssd_option = field_options(options.SimOptions, "ssd")
warmup_option = field_options(options.SimOptions, "warmup")
seed_option = field_options(options.SimOptions, "seed")
timing_option = field_options(options.SimOptions, "timing")
# --age SHARE, --age-seed N, --age-churn ROUNDS (the verb gets ``age``, ``age_seed``, ``age_churn``).
aging_options = field_options(options.MapOptions, "age", "age_seed", "age_churn")


def json_option(f: F) -> F:
    return click.option("--json", "as_json", is_flag=True, help="Print JSON (one object per line).")(f)


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
    """A preset name is passed as is; anything that looks like a path must be an existing regular
    file holding a valid SSD config, checked before any work (else a bad SSD config, status 4,
    also when a sweep would have run other configs first)."""
    if value.endswith(".toml") or os.sep in value or os.path.exists(value):
        require_config_file(value)
        api.ssd_summary(value)  # the engine's reading: size limit, TOML, geometry
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

    results = [o.result for o in outcomes if o.result is not None]
    note = diagnose.little_gc_note(results)
    lines = ([f"warning: {note}"] if note else []) + [
        f"note: {why}" for why in diagnose.policy_notes(results)
    ]
    rendered = Table(
        title=escape(title),
        title_justify="left",
        min_width=len(title),
        caption=escape("\n".join(lines)) if lines else None,
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
