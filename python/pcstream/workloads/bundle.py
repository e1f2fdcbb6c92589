"""The bundled suite: record every suite recipe, map it for the suite's SSD, keep the block traces
in ``traces/`` with a manifest of the command and versions that made each.

``pcstream workload suite --record -o traces`` (``make suite``) runs it. A recipe that fails is
reported (and listed in the manifest with its error) while the others still run.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import os
import platform
import sqlite3
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pcstream import api, mapping
from pcstream.errors import CliError, classify
from pcstream.workloads import recording
from pcstream.workloads.packages import package_versions
from pcstream.workloads.recipes import RECIPES, SUITE_SSD, Recipe

# The default suite, in report order. Each is sized for SUITE_SSD.
SUITE: tuple[str, ...] = (
    "rocksdb-ur",
    "rocksdb-ar",
    "rocksdb-fr",
    "sqlite-tpcc",
    "sqlite-tpcc-wal",
    "pgbench",
    "gcc",
    "mixed1",
    "mixed2",
    "fio-uniform",
    "fio-zipf0.8",
    "fio-zipf1.2",
    "fio-pareto0.5",
    "fio-normal",
    "varmail",
    "fileserver",
)
MANIFEST = "manifest.json"
# What the bundle may weigh in all (bytes).
BUDGET = 40 * 10**6


def environment() -> dict[str, Any]:
    return {
        "pcstream": api.version(),
        "kernel": platform.release(),
        "python": platform.python_version(),
        "sqlite": sqlite3.sqlite_version,
        "cores": os.cpu_count(),
        "date": dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
    }


def sha256(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def entry(r: Recipe, result: dict[str, Any], method: str) -> dict[str, Any]:
    block = Path(result["block_trace"])
    return {
        "workload": r.name,
        "summary": r.summary,
        "trace": block.name,
        "bytes": block.stat().st_size,
        "sha256": sha256(block),
        "command": f"pcstream workload {r.name} --record --method {method}",
        "setup": r.setup.strip(),
        "script": r.script.strip(),
        "packages": package_versions(r),
        "ssd": r.ssd,
        "mount_opts": r.mount_opts or "defaults (discard)",
        "record": result["record"],
        "record_wall_s": result["record_wall_s"],
        "map": {k: v for k, v in result["map"].items() if k != "warnings"},
    }


def load_manifest(out_dir: Path) -> dict[str, Any]:
    path = out_dir / MANIFEST
    if not path.is_file():
        return {"traces": {}}
    try:
        value = json.loads(path.read_text())
    except json.JSONDecodeError as e:
        raise CliError(f"{path}: not JSON ({e.msg} at line {e.lineno}); delete it and record again") from None
    value.setdefault("traces", {})
    return value


def record_suite(
    out_dir: Path,
    names: tuple[str, ...] = SUITE,
    method: str = "auto",
    capacity_pages: int | None = None,
    mount_opts: str | None = None,
    keep_file_traces: bool = False,
    say: Callable[[str], None] = lambda s: print(s, file=sys.stderr),
    bar: api.ProgressBar = api.no_progress_bar,
    age: mapping.Aging | None = None,
) -> dict[str, Any]:
    """Record ``names`` into ``out_dir`` and map each to NAME.parquet (for the SSD its recipe is
    sized for, unless ``capacity_pages`` or ``mount_opts`` say otherwise), and update
    ``out_dir/manifest.json``; returns the manifest. Failures are kept in ``manifest['failed']``."""
    out_dir.mkdir(parents=True, exist_ok=True)
    manifest = load_manifest(out_dir)
    failed: dict[str, str] = {}
    for i, name in enumerate(names, 1):
        r = RECIPES[name]
        say(f"[{i}/{len(names)}] {name}: {r.summary} (about {r.seconds} s)")
        try:
            result = recording.run_recipe(
                r,
                out_dir,
                method=method,
                map_blocks=True,
                capacity_pages=capacity_pages,
                mount_opts=mount_opts,
                bar=bar,
                age=age,
            )
        except Exception as e:  # noqa: BLE001 - any user-facing failure of one recipe
            # A recipe that fails (its program, its checks, or the engine mapping its trace,
            # e.g. a file system too small for what it wrote) is listed; the others still run.
            known = classify(e)
            if known is None:
                raise
            failed[name] = known[0]
            say(f"[{i}/{len(names)}] {name}: FAILED: {known[0]}")
            continue
        finally:
            if not keep_file_traces:
                (out_dir / f"{name}.file.parquet").unlink(missing_ok=True)
        # The program's log is kept only when it failed.
        (out_dir / f"{name}.log").unlink(missing_ok=True)
        manifest["traces"][name] = entry(r, result, method)
        e = manifest["traces"][name]
        say(f"[{i}/{len(names)}] {name}: {e['bytes'] / 1e6:.1f} MB block trace, sha256 {e['sha256'][:12]}")
    manifest["environment"] = environment()
    manifest["ssd"] = SUITE_SSD
    manifest["total_bytes"] = sum(t["bytes"] for t in manifest["traces"].values())
    manifest["failed"] = failed
    (out_dir / MANIFEST).write_text(json.dumps(manifest, indent=1, sort_keys=True) + "\n")
    if manifest["total_bytes"] > BUDGET:
        say(
            f"warning: the bundle weighs {manifest['total_bytes'] / 1e6:.1f} MB, above the "
            f"{BUDGET / 1e6:.0f} MB budget: shorten the largest recipes"
        )
    return manifest
