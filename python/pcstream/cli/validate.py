"""``pcstream validate``: compare the ext4 model's block trace with a real ext4's, for the same run.

The file-level trace is mapped through the model with the real trace's capacity (and, when the
layout file of ``record --block`` is there, its mount options and device), then both block
traces are summarised and simulated on one SSD preset under ``baseline`` and ``oracle``.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import Any

import click
from rich.table import Table

from pcstream import api
from pcstream.cli._common import epilog, fmt, json_option, print_json, resolve_ssd
from pcstream.cli._common import stdout as stdout_console
from pcstream.cli.map import SIZE, SIZE_HELP, map_trace
from pcstream.errors import EXIT_FAILURE, EXIT_INPUT, CliError, require_file

PAGE = 4096
POLICIES = ("baseline", "oracle")
META = ("data", "journal", "inode", "directory", "bitmap", "other")
# Acceptance targets: relative difference of written bytes and baseline WAF, absolute difference
# of the journal + metadata share (in points).
TARGET_BYTES = 0.10
TARGET_META_POINTS = 5.0
TARGET_WAF = 0.05

EXTRA = """\b
Compared: bytes written, journal + metadata share of them (and each
class: journal, inode table, directory, bitmaps / descriptors, other),
bytes discarded, cache flushes, and WAF under baseline and oracle on
--ssd (no prefill). Targets: written bytes within 10 %, journal +
metadata share within 5 points, baseline WAF within 5 %. The real
trace's classes come from the image's layout (record --block); without
its layout file every real write counts as data. Method and measured
results: docs/FSMODEL.md, "Validation against real ext4"."""


def _pages(info: dict[str, Any], key: str) -> int:
    return int((info.get(key) or {}).get("pages") or 0)


def _figures(info: dict[str, Any], waf: dict[str, float]) -> dict[str, Any]:
    written = _pages(info, "writes")
    share = info.get("meta_share") or {}
    meta_share = 1.0 - float(share.get("data", 1.0)) if written else 0.0
    fig: dict[str, Any] = {
        "written_bytes": written * PAGE,
        "meta_share": meta_share,
        **{f"{m}_share": float(share.get(m, 0.0)) for m in META[1:]},
        "discard_bytes": _pages(info, "trims") * PAGE,
        "flushes": int(info.get("flushes") or 0),
        "requests": int((info.get("writes") or {}).get("requests") or 0),
    }
    for policy, value in waf.items():
        fig[f"waf_{policy}"] = value
    return fig


def _simulate(trace: str, ssd: str) -> dict[str, float]:
    return {p: float(api.simulate(trace, p, ssd=ssd, timing=False)["waf"]) for p in POLICIES}


# (key, label, kind, target): kind "bytes"/"ratio" compare relatively, "share" in points.
ROWS: tuple[tuple[str, str, str, float | None], ...] = (
    ("written_bytes", "bytes written", "bytes", TARGET_BYTES),
    ("meta_share", "journal + metadata share", "share", TARGET_META_POINTS),
    ("journal_share", "  journal", "share", None),
    ("inode_share", "  inode table", "share", None),
    ("directory_share", "  directory", "share", None),
    ("bitmap_share", "  bitmap / descriptor", "share", None),
    ("other_share", "  other (superblock, extent tree)", "share", None),
    ("discard_bytes", "bytes discarded", "bytes", None),
    ("flushes", "cache flushes", "count", None),
    ("requests", "write requests", "count", None),
    ("waf_baseline", "WAF baseline", "ratio", TARGET_WAF),
    ("waf_oracle", "WAF oracle", "ratio", None),
)


def compare_rows(model: dict[str, Any], real: dict[str, Any]) -> list[dict[str, Any]]:
    rows = []
    for key, label, kind, target in ROWS:
        m, r = model[key], real[key]
        if kind == "share":
            diff: float | None = 100.0 * (m - r)
            ok = None if target is None else abs(diff) <= target
        else:
            diff = (m - r) / r if r else None
            ok = None if target is None else (diff is not None and abs(diff) <= target)
        rows.append(
            {"metric": key, "label": label.strip(), "kind": kind, "model": m, "real": r, "diff": diff,
             "target": target, "ok": ok}
        )  # fmt: skip
    return rows


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
        f"capacity {result['capacity_pages']:,} pages"
    )
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


def validate(
    file_trace: str,
    real_trace: str,
    ssd: str,
    layout_path: str | None = None,
    mount_opts: str | None = None,
    model_out: str | None = None,
) -> dict[str, Any]:
    """Map ``file_trace`` like the real run and compare with ``real_trace``; the result object."""
    from pcstream import blocktrace

    require_file(file_trace, "file-level trace")
    require_file(real_trace, "block trace")
    layout: dict[str, Any] = {}
    lp = Path(layout_path) if layout_path else blocktrace.Outputs.layout_for(Path(real_trace))
    if lp is not None:
        require_file(str(lp), "layout file")
        layout = blocktrace.load_layout(lp)
    real_info = api.info(real_trace)
    capacity = int(real_info["capacity_pages"])
    logical = int(api.ssd_summary(ssd)["logical_pages"])
    if capacity > logical:
        raise CliError(
            f"{real_trace}: capacity {capacity} pages exceeds the {logical} logical pages of SSD {ssd}; "
            "pick a larger --ssd or capture with --capacity at most that size",
            EXIT_INPUT,
        )
    opts = mount_opts if mount_opts is not None else str(layout.get("mount_opts", ""))
    device = layout.get("fs_dev")
    with tempfile.TemporaryDirectory(prefix="pcstream-validate-") as tmp:
        out = model_out or str(Path(tmp) / "model.parquet")
        summary = map_trace(file_trace, out, capacity, opts, device, label="map (model)")
        model_info = api.info(out)
        model = _figures(model_info, _simulate(out, ssd))
    real = _figures(real_info, _simulate(real_trace, ssd))
    rows = compare_rows(model, real)
    targets = [r for r in rows if r["ok"] is not None]
    return {
        "file_trace": file_trace,
        "real_trace": real_trace,
        "model_trace": model_out,
        "layout": str(lp) if lp else None,
        "ssd": ssd,
        "capacity_pages": capacity,
        "mount_opts": opts,
        "device": device,
        "rows": rows,
        "targets_met": sum(1 for r in targets if r["ok"]),
        "targets": len(targets),
        "model": model,
        "real": real,
        "map": summary,
        "real_layout_classified": bool(layout),
    }


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
    "--mount-opts", default=None, metavar="OPTS", help="Model mount options (default: the real run's)."
)
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
    if run_cmd:
        if not args:
            raise click.UsageError("--run needs a command: pcstream validate --run -- CMD [ARGS...]")
        from pcstream import blocktrace
        from pcstream import record as rec

        where = Path(out or "validate-run")
        pages = capacity if capacity is not None else int(api.ssd_summary(ssd)["logical_pages"])
        status, captured = rec.record_block(list(args), where, pages, mount_opts=None)
        if not as_json:
            click.echo(blocktrace.summary_line(blocktrace.Outputs.at(where), captured), err=True)
        if status != 0:
            raise CliError(f"{args[0]}: exited with status {status}; nothing compared", EXIT_FAILURE)
        outputs = blocktrace.Outputs.at(where)
        model_out = str(where / "model.parquet") if outputs.block.parent == where else None
        result = validate(
            str(outputs.files), str(outputs.block), ssd, str(outputs.layout), mount_opts, model_out
        )
        result["run"] = {
            "command": list(args),
            "run_s": captured.get("run_s"),
            "lost_events": captured.get("lost_events"),
        }
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
        result = validate(args[0], args[1], ssd, layout, mount_opts, out)
    if as_json:
        print_json(result)
    else:
        console = stdout_console()
        console.print(render(result))
        click.echo(f"targets met: {result['targets_met']}/{result['targets']}")
        if not result["real_layout_classified"]:
            click.echo("note: no layout file for the real trace; its writes count as data", err=True)
        for warning in (result.get("map") or {}).get("warnings") or []:
            click.echo(f"warning (model): {warning}", err=True)
    if strict and result["targets_met"] < result["targets"]:
        return EXIT_FAILURE
    return 0
