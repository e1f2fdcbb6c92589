"""``pcstream validate``: compare the ext4 model's block trace with a real ext4's, for the same run
(:mod:`pcstream.groundtruth.validation` computes; this verb captures on request and renders)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import click
from rich.table import Table

from pcstream import api, compose
from pcstream.aging import Aging
from pcstream.cli._common import (
    EXIT_FAILURE,
    EXIT_INPUT,
    SIZE,
    SIZE_HELP,
    CliError,
    aging_options,
    epilog,
    fmt,
    json_option,
    print_json,
    progress_bar,
    resolve_ssd,
)
from pcstream.cli._common import stdout as stdout_console
from pcstream.groundtruth import loopdev, validation
from pcstream.options import RecordOptions

EXTRA = """\b
Compared: bytes written, journal + metadata share of them (and each
class: journal, inode table, directory, bitmaps / descriptors, other),
bytes discarded, cache flushes, WAF under baseline and oracle on --ssd
(no prefill; an aged trace starts from its aged state), and for the
real trace's top 8 PCs by pages the page lifetimes (host pages written
until the page's LBA is overwritten or trimmed): median and p90, pages
never invalidated counted apart. Targets: written bytes within 10 %,
journal + metadata share within 5 points, baseline WAF within 10 %,
each PC's median lifetime within 25 %. The real trace's classes come
from the image's layout (record --block); without its layout file every
real write counts as data. With --run, --mount-opts and --age apply to
the real ext4 (aged by replaying the model's aging plan) and the model
alike. Method and measured results: docs/FSMODEL.md, "Validation
against real ext4"."""


def _cell(kind: str, value: Any) -> str:
    if kind == "bytes":
        return f"{value / (1 << 20):,.1f} MiB"
    if kind == "share":
        return f"{100.0 * value:.1f} %"
    if kind == "ratio":
        return f"{value:.3f}"
    return fmt(value)


def _diff(kind: str, diff: float | None) -> str:
    if diff is None:
        return "—"
    if kind == "share":
        return f"{diff:+.1f} pt"
    return f"{100.0 * diff:+.1f} %"


def _target(kind: str, target: float | None) -> str:
    if target is None:
        return ""
    return f"±{target:g} pt" if kind == "share" else f"±{100 * target:g} %"


def render(result: dict[str, Any]) -> Table:
    title = (
        f"model vs real ext4 · {os.path.basename(result['real_trace'])} · ssd {result['ssd']} · "
        f"capacity {result['capacity_pages']:,} pages · mount {result.get('mount_opts') or 'defaults'}"
    )
    if result.get("age"):
        a = result["age"]
        title += f" · aged to {a['share']:g} (seed {a['seed']}, churn {a['churn']})"
    table = Table(title=title, title_justify="left")
    for col, justify in (("metric", "left"), ("model", "right"), ("real", "right"), ("difference", "right"),
                         ("target", "right"), ("met", "center")):  # fmt: skip
        table.add_column(col, justify=justify)  # type: ignore[arg-type]
    for row in result["rows"]:
        label = ("  " if row["kind"] == "share" and row["metric"] != "meta_share" else "") + row["label"]
        met = "" if row["ok"] is None else ("yes" if row["ok"] else "NO")
        table.add_row(
            label,
            _cell(row["kind"], row["model"]),
            _cell(row["kind"], row["real"]),
            _diff(row["kind"], row["diff"]),
            _target(row["kind"], row["target"]),
            met,
        )
    return table


def _life(value: float | None) -> str:
    return "—" if value is None else f"{value:,.0f}"


def render_lifetimes(result: dict[str, Any]) -> Table:
    """Per-PC page lifetimes (host pages) of the real trace's top PCs, model vs real."""
    table = Table(
        title="page lifetimes of the top PCs, in host pages written until overwrite or trim (model / real)",
        title_justify="left",
    )
    for col in ("PC", "pages", "median", "difference", "target", "met", "p90", "never invalidated"):
        table.add_column(col, justify="left" if col == "PC" else "right")
    for row in result["lifetimes"]:
        m, r = row["model"], row["real"]
        met = "" if row["ok"] is None else ("yes" if row["ok"] else "NO")
        table.add_row(
            f"{row['name']} [{row['pc']:016x}]",
            f"{fmt(m['pages'])} / {fmt(r['pages'])}",
            f"{_life(m['median'])} / {_life(r['median'])}",
            _diff("ratio", row["diff"]),
            _target("ratio", row["target"]) or f"— (writes: {r.get('writes', 0)})",
            met,
            f"{_life(m['p90'])} / {_life(r['p90'])}",
            f"{fmt(m['never'])} / {fmt(r['never'])}",
        )
    return table


@click.command(
    "validate",
    short_help="compare the ext4 model with a real ext4 run (bytes, metadata, WAF)",
    epilog=epilog(EXTRA),
)
@click.option(
    "--run", "run_cmd", is_flag=True, help="Capture first: record --block CMD, then compare (root only)."
)
@click.option(
    "--ssd",
    default="small",
    show_default=True,
    metavar="PRESET|FILE.toml",
    help="SSD the WAF is measured on; both traces must fit its logical pages.",
)
@click.option(
    "--capacity",
    type=SIZE,
    default=None,
    help=f"--run: size of the ext4 image: {SIZE_HELP} (default: the SSD's logical size).",
)
@click.option(
    "-o",
    "--out",
    default=None,
    metavar="DIR",
    help="--run: where the traces go (default validate-run/); otherwise: keep the modelled block "
    "trace here (a .parquet file).",
)
@click.option(
    "--layout",
    default=None,
    metavar="FILE",
    help="Layout file of record --block (default: found beside the real trace).",
)
@click.option(
    "--mount-opts",
    default=None,
    metavar="OPTS",
    help="--run: mount options of the real ext4 and the model (default discard,noatime; noatime is "
    "added when no atime option is given), e.g. nodiscard; otherwise: the model's (default: the "
    "real run's).",
)
@aging_options
@click.option("--strict", is_flag=True, help="Exit with status 1 when a target is missed.")
@json_option
@click.argument(
    "args", nargs=-1, type=click.UNPROCESSED, metavar="FILE_TRACE REAL_BLOCK_TRACE | --run -- CMD..."
)
def command(
    run_cmd: bool,
    ssd: str,
    capacity: int | None,
    out: str | None,
    layout: str | None,
    mount_opts: str | None,
    age: float | None,
    age_seed: int,
    age_churn: int,
    strict: bool,
    as_json: bool,
    args: tuple[str, ...],
) -> int:
    """Compare the model's block trace for FILE_TRACE with REAL_BLOCK_TRACE, captured on a real
    ext4 in the same run by 'pcstream record --block'; or, with --run, do that capture of CMD
    first.

    Example: pcstream validate --run --ssd small -o run1 -- python3 $PWD/tools/fs_workload.py
    """
    ssd = resolve_ssd(ssd)
    aging = Aging(age, age_seed, age_churn) if age is not None else None
    if aging is None and (age_seed or age_churn):
        raise click.UsageError("--age-seed and --age-churn need --age")
    if run_cmd:
        if not args:
            raise click.UsageError("--run needs a command: pcstream validate --run -- CMD [ARGS...]")
        where = Path(out or "validate-run")
        pages = capacity if capacity is not None else int(api.ssd_summary(ssd)["logical_pages"])
        # One row per write in the file-level trace (no coalescing), as the model sees the calls.
        capture = RecordOptions(
            coalesce=False,
            capacity=pages,
            mount_opts=mount_opts,
            age=age,
            age_seed=age_seed,
            age_churn=age_churn,
        )
        status, captured = compose.record_block(list(args), where, capture)
        if not as_json:
            click.echo(loopdev.summary_line(loopdev.Outputs.at(where), captured), err=True)
        result = validation.validate_capture(args, where, status, captured, ssd, None, progress_bar)
    else:
        if len(args) != 2:
            raise click.UsageError("give FILE_TRACE and REAL_BLOCK_TRACE (or --run -- CMD ...)")
        if capacity is not None:
            raise click.UsageError("--capacity is for --run; the real trace's capacity is used")
        if out is not None:
            require_out = Path(out)
            if require_out.is_dir():
                raise CliError(
                    f"{out}: is a directory; give a .parquet file for the modelled trace", EXIT_INPUT
                )
        result = validation.validate(args[0], args[1], ssd, layout, mount_opts, out, progress_bar, aging)
    if as_json:
        print_json(result)
    else:
        console = stdout_console()
        console.print(render(result))
        if result.get("lifetimes"):
            console.print(render_lifetimes(result))
        click.echo(f"targets met: {result['targets_met']}/{result['targets']}")
        if result.get("lifetime_targets"):
            click.echo(
                f"per-PC lifetime targets met: {result['lifetime_targets_met']}/{result['lifetime_targets']}"
            )
        if not result["real_layout_classified"]:
            click.echo("note: no layout file for the real trace; its writes count as data", err=True)
        for warning in (result.get("map") or {}).get("warnings") or []:
            click.echo(f"warning (model): {warning}", err=True)
    missed = result["targets_met"] < result["targets"]
    if strict and (missed or result.get("lifetime_targets_met", 0) < result.get("lifetime_targets", 0)):
        return EXIT_FAILURE
    return 0
