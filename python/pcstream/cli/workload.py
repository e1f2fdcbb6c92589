"""``pcstream workload``: record a real program from the workload suite into a trace."""

from __future__ import annotations

from pathlib import Path

import click
from rich.table import Table

from pcstream.aging import Aging
from pcstream.cli._common import (
    EXIT_FAILURE,
    EXIT_OK,
    SIZE,
    SIZE_HELP,
    aging_options,
    epilog,
    print_json,
    progress_bar,
    spelling,
    stderr,
    stdout,
)
from pcstream.options import METHODS
from pcstream.workloads import bundle, recording
from pcstream.workloads.packages import missing_packages
from pcstream.workloads.recipes import (
    RECIPES,
    SUITE_AGE_CHURN,
    SUITE_AGE_SHARE,
    SUITE_MODES,
    SUITE_SSD,
    Recipe,
)

EXTRA = """\b
Examples:
  pcstream workload                       list the recipes
  pcstream workload rocksdb-ur            show what the recipe runs and needs
  pcstream workload rocksdb-ur --record -o traces/
                                          install, run under 'pcstream record', check,
                                          map to a block trace (traces/rocksdb-ur.parquet)"""


def suite(
    do_record: bool,
    out_dir: Path,
    method: str,
    capacity: int | None,
    mount_opts: str | None,
    age: Aging,
    as_json: bool,
    only: tuple[str, ...] = bundle.SUITE,
    keep_file_traces: bool = False,
    remap: bool = False,
) -> int:
    if not (do_record or remap):
        out = stdout()
        modes = " and ".join(f"{opts} ({'NAME' + suffix}.parquet)" for opts, suffix in SUITE_MODES)
        out.print(f"[bold]suite[/bold]: {', '.join(bundle.SUITE)} (about "
                  f"{sum(RECIPES[n].seconds for n in bundle.SUITE) // 60} min on 2 cores), mapped for "
                  f"the '{SUITE_SSD}' SSD preset on a file system aged to {SUITE_AGE_SHARE:.0%} "
                  f"({SUITE_AGE_CHURN} churn round), in two discard modes: {modes}")  # fmt: skip
        out.print(f"run it: pcstream workload suite --record -o {out_dir}")
        return EXIT_OK
    manifest = bundle.record_suite(
        out_dir,
        names=only,
        method=method,
        keep_file_traces=keep_file_traces,
        remap=remap,
        capacity_pages=capacity,
        # --mount-opts: one mode, NAME.parquet; otherwise both of the suite's.
        modes=((mount_opts, ""),) if mount_opts is not None else SUITE_MODES,
        say=stderr().print,
        bar=progress_bar,
        age=age if age.share is not None else bundle.SUITE_AGING,
        spelling=spelling,
    )
    if as_json:
        print_json(manifest)
    failed = manifest["failed"]
    stderr().print(
        f"pcstream workload suite: {len(manifest['traces'])} traces, "
        f"{manifest['total_bytes'] / 1e6:.1f} MB in {out_dir} (manifest: {out_dir / bundle.MANIFEST})"
        + (f"; FAILED: {', '.join(failed)}" if failed else "")
    )
    return EXIT_FAILURE if failed else EXIT_OK


def listing() -> Table:
    t = Table(title="workload recipes", title_justify="left")
    t.add_column("name", no_wrap=True)
    t.add_column("about")
    t.add_column("~s", justify="right")
    t.add_column("missing packages")
    for r in RECIPES.values():
        t.add_row(r.name, r.summary, str(r.seconds), " ".join(missing_packages(r)) or "-")
    t.add_row("suite", f"the bundled suite: {len(bundle.SUITE)} of the above", "", "")
    return t


@click.command("workload", short_help="record a real program of the suite (RocksDB, SQLite, GCC, fio...)",
               epilog=epilog(EXTRA))  # fmt: skip
@click.argument("name", required=False)
@click.option("--record", "do_record", is_flag=True, help="Run the recipe (default: show it).")
@click.option("-o", "--output-dir", default="traces", show_default=True, metavar="DIR",
              help="Where NAME.file.parquet (file level) and NAME.parquet (block level) go.")  # fmt: skip
@click.option("--method", type=click.Choice(METHODS), default="auto", show_default=True,
              help="Stack walk for the PC signatures (see 'pcstream record').")  # fmt: skip
@click.option("--capacity", type=SIZE, default=None, metavar="SIZE",
              help=f"File-system size for the map to blocks: {SIZE_HELP}  [default: the logical "
              "size of the SSD preset the recipe is sized for]")  # fmt: skip
@click.option("--mount-opts", default=None, metavar="OPTS",
              help="ext4 model mount options (see 'pcstream map')  [default: the recipe's]")  # fmt: skip
@aging_options
@click.option("--only", default=None, metavar="NAMES",
              help="suite: record only these recipes (comma-separated); the manifest keeps the others' "
              "entries.")  # fmt: skip
@click.option("--keep-file-traces", is_flag=True,
              help="suite: keep each recipe's file-level trace (DIR/NAME.file.parquet) to map it again later "
              "(other sizes, aging, mount options) without recording again.")  # fmt: skip
@click.option("--remap", is_flag=True,
              help="suite: record nothing; map the file-level traces --keep-file-traces left in DIR again "
              "(e.g. after a change of the file-system model), keeping their record figures.")  # fmt: skip
@click.option("--no-map", is_flag=True, help="Record and check only; no block trace.")
@click.option("--keep-work", is_flag=True, help="Keep the scratch directory DIR/NAME.work.")
@click.option("--json", "as_json", is_flag=True, help="Print the summary as JSON.")
def command(
    name: str | None,
    do_record: bool,
    output_dir: str,
    method: str,
    capacity: int | None,
    mount_opts: str | None,
    age: float | None,
    age_seed: int,
    age_churn: int,
    only: str | None,
    keep_file_traces: bool,
    remap: bool,
    no_map: bool,
    keep_work: bool,
    as_json: bool,
) -> int:
    """Run a real program (a recipe of the workload suite) under 'pcstream record' in a scratch
    directory with bounded size and time, check that its trace holds what it must (e.g. WAL,
    flush and compaction writers for RocksDB; deleted object files for GCC) and map it to a
    block-level trace. Missing Debian packages are installed with apt-get when run as root.
    Without NAME: list the recipes. NAME 'suite': the bundled suite (every recipe it holds,
    block traces and DIR/manifest.json with the command and versions that made each)."""
    if name is None:
        stdout().print(listing())
        return EXIT_OK
    aging = Aging(age, age_seed, age_churn)
    if name == "suite":
        return suite(
            do_record,
            Path(output_dir),
            method,
            capacity,
            mount_opts,
            aging,
            as_json,
            suite_names(only),
            keep_file_traces,
            remap,
        )
    if only is not None:
        raise click.UsageError("--only is for 'pcstream workload suite'")
    r = recording.recipe(name)
    if not do_record:
        describe(r, output_dir)
        return EXIT_OK
    stderr().print(f"pcstream workload: recording {r.name} (about {r.seconds} s)...")
    result = recording.run_recipe(
        r,
        Path(output_dir),
        method=method,
        keep_work=keep_work,
        map_blocks=not no_map,
        capacity_pages=capacity,
        mount_opts=mount_opts,
        bar=progress_bar,
        age=aging,
    )
    if as_json:
        print_json(result)
    else:
        f = result["facts"]
        stderr().print(
            f"pcstream workload: {r.name}: {f['write_bytes'] / 2**20:.1f} MiB in {f['records']} records, "
            f"{f['write_signatures']} writing signatures, {result['files_written']} files written, "
            f"{f['unlinks']} deleted; checks passed -> {result['file_trace']}"
        )
        if "map" in result:
            m = result["map"]
            stderr().print(
                f"pcstream workload: {r.name}: mapped to {m['data_pages']:,} data, "
                f"{m['journal_pages']:,} journal and {m['trim_pages']:,} trimmed pages on a "
                f"{m['capacity_pages']:,}-page file system -> {result['block_trace']}"
            )
    return EXIT_OK


def suite_names(only: str | None) -> tuple[str, ...]:
    """The recipes of ``workload suite``: every one, or those ``--only`` names (all in the suite)."""
    if only is None:
        return bundle.SUITE
    names = tuple(n.strip() for n in only.split(",") if n.strip())
    unknown = [n for n in names if n not in bundle.SUITE]
    if unknown or not names:
        raise click.BadParameter(
            f"{', '.join(unknown) or 'nothing'} is not in the suite ({', '.join(bundle.SUITE)})",
            param_hint="--only",
        )
    return names


def describe(r: Recipe, output_dir: str) -> None:
    """What ``workload NAME`` without --record prints: the recipe, its packages, script and checks."""
    out = stdout()
    out.print(f"[bold]{r.name}[/bold]: {r.summary} (about {r.seconds} s on 2 cores)")
    out.print(f"packages: {' '.join(p for p, _ in r.packages) or 'none'}"
              f" (missing: {' '.join(missing_packages(r)) or 'none'})")  # fmt: skip
    if r.setup:
        out.print("set-up (not recorded):")
        out.print(r.setup.strip(), markup=False, highlight=False)
    out.print("script (run in the scratch directory):")
    out.print(r.script.strip(), markup=False, highlight=False)
    out.print("checks: " + ", ".join(c.__name__ for c in r.checks))
    out.print(f"mapped for the '{r.ssd}' SSD preset, mount options: {r.mount_opts or 'defaults'}")
    out.print(f"run it: pcstream workload {r.name} --record -o {output_dir}")
