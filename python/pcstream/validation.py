"""Validation of the ext4 model against a real ext4 (``pcstream validate``): the model's block
trace for a file-level trace versus the block trace a real ext4 issued in the same run.

The file-level trace is mapped through the model with the real trace's capacity (and, when the
layout file of ``record --block`` is there, its mount options and device), then both block
traces are summarised and simulated on one SSD preset under ``baseline`` and ``oracle``. Each
compared figure is a row; three of them have acceptance targets. Method and measured results:
docs/FSMODEL.md, "Validation against real ext4".
"""

from __future__ import annotations

import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pcstream import api, mapping
from pcstream.errors import EXIT_FAILURE, EXIT_INPUT, CliError, require_file
from pcstream.record import blockcapture
from pcstream.units import PAGE_BYTES

POLICIES = ("baseline", "oracle")
META = ("data", "journal", "inode", "directory", "bitmap", "other")
# Acceptance targets: relative difference of written bytes and baseline WAF, absolute difference
# of the journal + metadata share (in points).
TARGET_BYTES = 0.10
TARGET_META_POINTS = 5.0
TARGET_WAF = 0.05

# (key, label, kind, target): kind "bytes"/"ratio"/"count" compare relatively, "share" in points.
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


def _pages(info: dict[str, Any], key: str) -> int:
    return int((info.get(key) or {}).get("pages") or 0)


def figures(info: dict[str, Any], waf: dict[str, float]) -> dict[str, Any]:
    """The compared figures of one block trace: its ``api.info`` summary and WAF per policy."""
    written = _pages(info, "writes")
    share = info.get("meta_share") or {}
    meta_share = 1.0 - float(share.get("data", 1.0)) if written else 0.0
    fig: dict[str, Any] = {
        "written_bytes": written * PAGE_BYTES,
        "meta_share": meta_share,
        **{f"{m}_share": float(share.get(m, 0.0)) for m in META[1:]},
        "discard_bytes": _pages(info, "trims") * PAGE_BYTES,
        "flushes": int(info.get("flushes") or 0),
        "requests": int((info.get("writes") or {}).get("requests") or 0),
    }
    for policy, value in waf.items():
        fig[f"waf_{policy}"] = value
    return fig


def simulate(trace: str, ssd: str) -> dict[str, float]:
    """WAF of ``trace`` on ``ssd`` (no prefill, no timing) under each of :data:`POLICIES`."""
    return {p: float(api.simulate(trace, p, ssd=ssd, timing=False)["waf"]) for p in POLICIES}


def compare_rows(model: dict[str, Any], real: dict[str, Any]) -> list[dict[str, Any]]:
    """One row per :data:`ROWS` entry: model, real, difference (relative, or points for shares),
    target and whether it is met (None without a target)."""
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


def validate(
    file_trace: str,
    real_trace: str,
    ssd: str,
    layout_path: str | None = None,
    mount_opts: str | None = None,
    model_out: str | None = None,
    bar: api.ProgressBar = api.no_progress_bar,
) -> dict[str, Any]:
    """Map ``file_trace`` like the real run and compare with ``real_trace``; the result object
    (rows, targets met, both sets of figures, the map summary). ``bar`` shows the map's progress."""
    require_file(file_trace, "file-level trace")
    require_file(real_trace, "block trace")
    layout: dict[str, Any] = {}
    lp = Path(layout_path) if layout_path else blockcapture.Outputs.layout_for(Path(real_trace))
    if lp is not None:
        require_file(str(lp), "layout file")
        layout = blockcapture.load_layout(lp)
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
        with bar("map (model)", "events") as progress:
            summary = mapping.map_trace(file_trace, out, capacity, opts, device, progress=progress)
        model_info = api.info(out)
        model = figures(model_info, simulate(out, ssd))
    real = figures(real_info, simulate(real_trace, ssd))
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


def validate_capture(
    cmd: Sequence[str],
    where: Path,
    status: int,
    captured: dict[str, Any],
    ssd: str,
    mount_opts: str | None = None,
    bar: api.ProgressBar = api.no_progress_bar,
) -> dict[str, Any]:
    """:func:`validate` on what ``record --block`` of ``cmd`` captured into ``where`` (its exit
    ``status`` and capture summary), the modelled trace kept beside the real one; the result
    object with the run's command, time and lost events."""
    if status != 0:
        raise CliError(f"{cmd[0]}: exited with status {status}; nothing compared", EXIT_FAILURE)
    outputs = blockcapture.Outputs.at(where)
    model_out = str(where / "model.parquet") if outputs.block.parent == where else None
    result = validate(
        str(outputs.files), str(outputs.block), ssd, str(outputs.layout), mount_opts, model_out, bar
    )
    result["run"] = {
        "command": list(cmd),
        "run_s": captured.get("run_s"),
        "lost_events": captured.get("lost_events"),
    }
    return result
