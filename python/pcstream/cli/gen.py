"""``pcstream gen``: write a synthetic block trace."""

from __future__ import annotations

import os

import click

from pcstream import api
from pcstream.cli._common import epilog, json_option, print_json
from pcstream.errors import prepare_output, read_input

KINDS = ("uniform", "zipf", "pareto", "normal", "hotcold", "seq", "mix", "lsm")

EXTRA = """\b
Kinds: uniform (every page alike), zipf (--theta), pareto (--alpha),
normal (--sigma), hotcold (--hot-fraction of the pages get --hot-ratio of
the writes), seq (sequential passes), mix (--mix: a preset such as
rocksdb-like or hotcold-files, or a JSON/TOML spec file), lsm (a leveled
LSM-tree store: WAL, flushes and compactions with --levels and --ratio, keys
skewed by --skew, SSTs of --sst-pages placed by --sst-alloc, beside a
build-like writer taking --build-share of the pages; one PC per activity;
--writes counts pages).


Example: pcstream gen lsm --capacity-pages 244994 --writes 1200000 --levels 4
  --ratio 10 --skew 0.99 --build-share 0.3 --sst-pages 256 --seed 1 -o lsm.parquet"""


def _mix_value(value: str) -> str:
    """A mix preset name is passed as is; a .json/.toml file is read and passed as its text."""
    if value.endswith((".json", ".toml")) or os.sep in value:
        return read_input(value, "mix spec file", api.input_limit("mix_spec"))
    return value


@click.command(
    "gen", short_help="write a synthetic block trace (uniform, zipf, hotcold, ...)", epilog=epilog(EXTRA)
)
@click.argument("kind", type=click.Choice(KINDS), metavar="KIND")
@click.option("-o", "--out", required=True, metavar="OUT.parquet", help="Trace file to write.")
@click.option(
    "--capacity-pages",
    type=click.IntRange(min=1),
    metavar="N",
    help="Logical pages (4 KiB) the trace addresses; match the SSD's logical pages (see 'pcstream presets').",
)
@click.option(
    "--footprint",
    type=click.FloatRange(0.0, 1.0, min_open=True),
    metavar="F",
    help="Share of the capacity that writes touch, (0, 1].",
)
@click.option("--writes", type=click.IntRange(min=1), metavar="N", help="Write requests to generate.")
@click.option("--req-pages", type=click.IntRange(min=1), metavar="N", help="Pages (4 KiB) per request.")
@click.option("--seed", type=click.IntRange(min=0), metavar="N", help="Seed of the generator.")
@click.option(
    "--read-ratio", type=click.FloatRange(0.0, 1.0), metavar="F", help="Share of requests that are reads."
)
@click.option("--theta", type=float, metavar="F", help="zipf: skew (0.99 = strongly skewed).")
@click.option("--alpha", type=float, metavar="F", help="pareto: shape.")
@click.option(
    "--sigma", type=float, metavar="F", help="normal: standard deviation as a share of the footprint."
)
@click.option(
    "--hot-fraction",
    type=click.FloatRange(0.0, 1.0),
    metavar="SHARE",
    help="hotcold: share of pages that are hot.",
)
@click.option(
    "--hot-ratio",
    type=click.FloatRange(0.0, 1.0),
    metavar="SHARE",
    help="hotcold: share of writes to hot pages.",
)
@click.option("--mix", metavar="PRESET|FILE.json|FILE.toml", help="mix: workload mix preset or spec file.")
@click.option("--levels", type=click.IntRange(1, 16), metavar="L", help="lsm: levels below L0 (default 4).")
@click.option(
    "--ratio", type=click.IntRange(2, 1000), metavar="R", help="lsm: size ratio between levels (default 10)."
)
@click.option(
    "--skew",
    type=click.FloatRange(min=0.0),
    metavar="THETA",
    help="lsm: Zipf theta of the keys put, 0 = uniform (default 0).",
)
@click.option(
    "--build-share",
    type=click.FloatRange(0.0, 1.0, max_open=True),
    metavar="B",
    help="lsm: share of the pages from a concurrent build-like writer, [0, 1) (default 0).",
)
@click.option(
    "--sst-pages", type=click.IntRange(min=1), metavar="P", help="lsm: pages per SST (default 256)."
)
@click.option(
    "--sst-alloc",
    type=click.Choice(["next", "lowest"]),
    help="lsm: free slot a new SST takes: next (after the one taken last, wrapping, as a file "
    "system moving its goal on; default) or lowest (freed slots reused at once: the LBA then "
    "tells lifetimes apart).",
)
@json_option
def command(kind: str, out: str, mix: str | None, as_json: bool, **options: object) -> None:
    """Generate a synthetic block trace of KIND into OUT (Parquet).

    Example: pcstream gen zipf --theta 0.99 --capacity-pages 61248 --writes 200000 -o zipf.parquet
    """
    params = {key: str(value) for key, value in options.items() if value is not None}
    if mix is not None:
        params["mix"] = _mix_value(mix)
    elif kind == "mix":
        raise click.UsageError("gen mix needs --mix PRESET|FILE.json|FILE.toml (e.g. --mix rocksdb-like)")
    prepare_output(out, [mix] if mix is not None else [])
    summary = api.gen(kind, out, params)
    if as_json:
        print_json(summary)
        return
    rows = int(summary["rows"])
    pages = api.written_pages(summary)
    click.echo(f"wrote {rows:,} requests ({pages:,} pages of 4 KiB) to {summary.get('path', out)}")
