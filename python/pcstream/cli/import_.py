"""``pcstream import``: convert a block trace from the field (blkparse, MSR, Alibaba, Tencent,
fio iolog, MQSim) into the block-trace Parquet format."""

from __future__ import annotations

import os
from typing import Any

import click

from pcstream import api, splitvolumes
from pcstream.cli._common import (
    SIZE,
    SIZE_HELP,
    epilog,
    fmt,
    json_option,
    key_value_table,
    print_json,
    progress_bar,
)
from pcstream.cli._common import stdout as stdout_console
from pcstream.errors import check_output_name, prepare_output, require_file

FORMATS = ("blkparse", "msr", "alibaba", "tencent", "fio", "mqsim")

EXTRA = """\b
Formats (docs/IMPORT.md has the columns and units of each):
  blkparse  blkparse text; issue (D) lines; rwbs W/R/D(discard)/F(flush)
  msr       SNIA MSR Cambridge CSV (FILETIME, host, disk, Read/Write, bytes)
  alibaba   Alibaba block traces 2020 CSV (device, R/W, bytes, us)
  tencent   Tencent CBS 2018 CSV (s, 512 B sectors, 0 read / 1 write, volume)
  fio       fio iolog v2 / v3 (write_iolog)
  mqsim     MQSim / DiskSim ASCII (ns, device, sectors, 0 write / 1 read)
Inputs may be .gz or .zst compressed. Byte ranges become 4 KiB pages (a
partial page counts as a page); times start at 0. Without --capacity the
trace's capacity is the highest page it addresses."""


def render(summary: dict[str, Any], source: str, out: str) -> list[tuple[str, str]]:
    rows = [
        ("input lines", fmt(summary.get("lines"))),
        ("rows written", fmt(summary.get("rows"))),
        ("writes (requests / pages)", f"{fmt(summary.get('writes'))} / {fmt(summary.get('write_pages'))}"),
        ("reads (requests / pages)", f"{fmt(summary.get('reads'))} / {fmt(summary.get('read_pages'))}"),
        ("trims (requests / pages)", f"{fmt(summary.get('trims'))} / {fmt(summary.get('trim_pages'))}"),
        ("flushes", fmt(summary.get("flushes"))),
        ("lines of other devices", fmt(summary.get("filtered_out"))),
        ("capacity pages", fmt(summary.get("capacity_pages"))),
        ("malformed lines skipped", fmt(summary.get("skipped_count"))),
        ("times out of order (clamped)", fmt(summary.get("reordered"))),
    ]
    return rows


@click.command(
    "import", short_help="convert a field block trace (blkparse, MSR, ...) to Parquet", epilog=epilog(EXTRA)
)
@click.argument("fmt_name", metavar="FORMAT", type=click.Choice(FORMATS))
@click.argument("file", metavar="FILE")
@click.option("-o", "--out", metavar="B.parquet", help="Block trace to write (Parquet).")
@click.option(
    "--split-volumes",
    "split_dir",
    metavar="DIR",
    help="Instead of -o: one trace per volume, DIR/<volume>.parquet, and DIR/manifest.json "
    "(alibaba, tencent, msr; any input size).",
)
@click.option(
    "--capacity",
    type=SIZE,
    default=None,
    help=f"Logical capacity of the trace: {SIZE_HELP}. A request beyond it is an error.",
)
@click.option(
    "--device",
    metavar="ID",
    default=None,
    help="Keep only this device / volume / disk, as the input names it (msr: host_disk, e.g. hm_0; "
    "blkparse: maj,min; alibaba/tencent/mqsim: the number; fio: the file name).",
)
@click.option(
    "--skip-bad",
    type=click.IntRange(min=0),
    default=0,
    show_default=True,
    metavar="N",
    help="Tolerate up to N malformed lines (each is reported); the next one is an error.",
)
@json_option
def command(
    fmt_name: str,
    file: str,
    out: str | None,
    split_dir: str | None,
    capacity: int | None,
    device: str | None,
    skip_bad: int,
    as_json: bool,
) -> None:
    """Import FILE, a block trace in FORMAT, into OUT (block-trace Parquet).

    Example: pcstream import msr hm_0.csv.gz -o hm_0.parquet --capacity 16GiB
    """
    require_file(file, f"{fmt_name} trace")
    if (out is None) == (split_dir is None):
        raise click.UsageError("give -o B.parquet (one trace) or --split-volumes DIR (one per volume)")
    if split_dir is not None:
        _split(fmt_name, file, split_dir, capacity, device, skip_bad, as_json)
        return
    assert out is not None
    prepare_output(out, [file])
    with progress_bar(f"import {fmt_name}", unit="bytes") as progress:
        summary = api.import_trace(
            fmt_name,
            file,
            out,
            capacity_pages=capacity,
            device=device,
            skip_bad=skip_bad,
            progress=progress,
        )
    if as_json:
        print_json(summary)
        return
    stdout_console().print(key_value_table(f"{file} ({fmt_name}) -> {out}", render(summary, file, out)))
    for reason in summary.get("skipped") or []:
        click.echo(f"skipped {reason}", err=True)
    more = int(summary.get("skipped_count") or 0) - len(summary.get("skipped") or [])
    if more > 0:
        click.echo(f"skipped {more} more malformed lines (only the first 100 are listed)", err=True)


def _split(
    fmt_name: str,
    file: str,
    out_dir: str,
    capacity: int | None,
    device: str | None,
    skip_bad: int,
    as_json: bool,
) -> None:
    if device is not None:
        raise click.UsageError("--device keeps one volume; --split-volumes writes every volume")
    if fmt_name not in splitvolumes.VOLUME_COLUMNS:
        raise click.UsageError(f"--split-volumes reads {', '.join(splitvolumes.VOLUME_COLUMNS)} traces")
    check_output_name(out_dir)
    if os.path.exists(out_dir) and not os.path.isdir(out_dir):
        raise click.UsageError(f"{out_dir}: exists and is not a directory; give a directory for the traces")
    with progress_bar(f"import {fmt_name}", unit="bytes") as progress:
        manifest = splitvolumes.split_volumes(
            fmt_name, file, out_dir, capacity_pages=capacity, skip_bad=skip_bad, progress=progress
        )
    if as_json:
        print_json(manifest)
        return
    volumes = manifest["volumes"]
    rows = [
        ("input lines", fmt(manifest["lines"])),
        ("volumes (traces written)", fmt(len(volumes))),
        ("requests", fmt(sum(v["requests"] for v in volumes))),
        ("malformed lines skipped", fmt(manifest["skipped_count"])),
        ("manifest", os.path.join(out_dir, splitvolumes.MANIFEST)),
    ]
    stdout_console().print(key_value_table(f"{file} ({fmt_name}) -> {out_dir}/", rows))
