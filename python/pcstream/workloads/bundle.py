"""The bundled suite: record every suite recipe once, map it for the suite's SSD on the aged file
system in each discard mode (NAME.parquet with online discard, NAME.nodiscard.parquet without),
keep the block traces in ``traces/`` with a manifest of the command, mount options, aging and
versions that made each.

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

from pcstream import api
from pcstream.aging import Aging
from pcstream.errors import Failure, Kind, Terminated, describe, plain
from pcstream.outputs import atomic_write
from pcstream.workloads import recording
from pcstream.workloads.packages import package_versions
from pcstream.workloads.recipes import (
    RECIPES,
    SUITE_AGE_CHURN,
    SUITE_AGE_SHARE,
    SUITE_MODES,
    SUITE_SSD,
    Recipe,
)

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
    "cassandra",
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
# The suite's aged file system (see recipes.SUITE_AGE_SHARE).
SUITE_AGING = Aging(SUITE_AGE_SHARE, 0, SUITE_AGE_CHURN)


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


def entry(r: Recipe, result: dict[str, Any], block: Path, mount_opts: str, map_summary: dict[str, Any],
          method: str, age: Aging) -> dict[str, Any]:  # fmt: skip
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
        "mount_opts": mount_opts or "defaults (discard)",
        "age": {"share": age.share, "seed": age.seed, "churn": age.churn} if age.share else None,
        "record": result["record"],
        "record_wall_s": result["record_wall_s"],
        "map": {k: v for k, v in map_summary.items() if k != "warnings"},
    }


def load_manifest(out_dir: Path) -> dict[str, Any]:
    path = out_dir / MANIFEST
    if not path.is_file():
        return {"traces": {}}
    try:
        value = json.loads(path.read_text())
    except json.JSONDecodeError as e:
        raise Failure(f"{path}: not JSON ({e.msg} at line {e.lineno}); delete it and record again") from None
    value.setdefault("traces", {})
    return value


def recorded(manifest: dict[str, Any], name: str, file_trace: Path) -> dict[str, Any]:
    """What the recording of ``name`` gave (its record figures, from the manifest), to map its kept
    file-level trace again; a one-line error when either is missing."""
    if not file_trace.is_file():
        raise Failure(
            f"{file_trace}: no file-level trace; record with {{keep_file_traces}} first",
            params=("keep_file_traces",),
        )
    prior = next((e for e in manifest["traces"].values() if e.get("workload") == name), None)
    if prior is None:
        raise Failure(f"{name}: not in the manifest; record it first")
    return {"record": prior["record"], "record_wall_s": prior["record_wall_s"]}


def save_manifest(out_dir: Path, manifest: dict[str, Any], failed: dict[str, str]) -> None:
    """Write DIR/manifest.json with the environment, the traces' total size and the failures."""
    manifest["environment"] = environment()
    manifest["ssd"] = SUITE_SSD
    manifest["total_bytes"] = sum(t["bytes"] for t in manifest["traces"].values())
    manifest["failed"] = failed
    with atomic_write(str(out_dir / MANIFEST)) as f:
        f.write(json.dumps(manifest, indent=1, sort_keys=True) + "\n")


def failure(e: Exception, spelling: Callable[[str], str] = plain) -> tuple[str, Kind] | None:
    """What a recipe's failure says, the parameters it names spelled as ``spelling`` says (None:
    not a failure of one recipe, so it propagates). SIGTERM stops the whole suite, as it stops any
    other command."""
    return None if isinstance(e, Terminated) else describe(e, spelling)


def record_suite(
    out_dir: Path,
    names: tuple[str, ...] = SUITE,
    method: str = "auto",
    capacity_pages: int | None = None,
    modes: tuple[tuple[str, str], ...] = SUITE_MODES,
    keep_file_traces: bool = False,
    say: Callable[[str], None] = lambda s: print(s, file=sys.stderr),
    bar: api.ProgressBar = api.no_progress_bar,
    age: Aging = SUITE_AGING,
    remap: bool = False,
    spelling: Callable[[str], str] = plain,
) -> dict[str, Any]:
    """Record ``names`` into ``out_dir`` and map each, once per ``(mount options, suffix)`` of
    ``modes``, to NAME+suffix.parquet (for the SSD its recipe is sized for unless
    ``capacity_pages`` says otherwise; aged as ``age`` says), and update ``out_dir/manifest.json``
    (one entry per trace, keyed by its stem); returns the manifest. Failures (of the recording or
    of one mode's mapping) are kept in ``manifest['failed']`` under the trace's stem.

    ``remap``: record nothing; map the file-level traces a recording with ``keep_file_traces``
    left (DIR/NAME.file.parquet) again, keeping their record figures from the manifest.
    ``spelling``: how a failure names the parameters it is about (see :func:`failure`)."""
    assert modes, "at least one discard mode"
    out_dir.mkdir(parents=True, exist_ok=True)
    manifest = load_manifest(out_dir)
    failed = kept_failures(manifest, names)
    for i, name in enumerate(names, 1):
        r = RECIPES[name]
        head = f"[{i}/{len(names)}] {name}"
        say(f"{head}: {r.summary} (about {r.seconds} s)")
        file_trace = out_dir / f"{name}.file.parquet"
        mapped_all = True
        try:
            result = (
                recorded(manifest, name, file_trace)
                if remap
                else recording.run_recipe(r, out_dir, method=method, bar=bar)
            )
            for opts, suffix in modes:
                stem = name + suffix
                block = out_dir / f"{stem}.parquet"
                try:
                    summary = recording.map_recipe(r, file_trace, block, capacity_pages, opts, bar, age)
                except Exception as e:  # noqa: BLE001 - one mode's mapping; see below
                    known = failure(e, spelling)
                    if known is None:
                        raise
                    block.unlink(missing_ok=True)
                    mapped_all = False
                    failed[stem] = known[0]
                    manifest["traces"].pop(stem, None)
                    say(f"{head}: {opts}: FAILED: {known[0]}")
                    continue
                manifest["traces"][stem] = entry(r, result, block, opts, summary, method, age)
                e = manifest["traces"][stem]
                say(f"{head}: {opts}: {e['bytes'] / 1e6:.1f} MB block trace, sha256 {e['sha256'][:12]}")
        except Exception as e:  # noqa: BLE001 - any user-facing failure of one recipe
            # A recipe that fails (its program, its checks, or the engine mapping its trace,
            # e.g. a file system too small for what it wrote) is listed; the others still run.
            known = failure(e, spelling)
            if known is None:
                raise
            for _, suffix in modes:
                failed[name + suffix] = known[0]
            say(f"{head}: FAILED: {known[0]}")
            continue
        finally:
            if not (keep_file_traces or remap):
                file_trace.unlink(missing_ok=True)
        # The program's log is kept only when it or a mapping failed (it says what the program wrote).
        if mapped_all:
            (out_dir / f"{name}.log").unlink(missing_ok=True)
        # Saved after every recipe, so a suite stopped part-way keeps the manifest entries of the
        # traces it did replace.
        save_manifest(out_dir, manifest, failed)
    save_manifest(out_dir, manifest, failed)
    warn_budget(manifest, say)
    return manifest


def kept_failures(manifest: dict[str, Any], names: tuple[str, ...]) -> dict[str, str]:
    """The failures of the manifest that stay listed: those of recipes not run this time
    (``--only`` re-runs some); a recipe run again is listed only if it fails again."""
    return {
        stem: why
        for stem, why in manifest.get("failed", {}).items()
        if not any(stem == n or stem.startswith(n + ".") for n in names)
    }


def warn_budget(manifest: dict[str, Any], say: Callable[[str], None]) -> None:
    """Say so when the bundle weighs more than :data:`BUDGET`."""
    if manifest["total_bytes"] > BUDGET:
        say(
            f"warning: the bundle weighs {manifest['total_bytes'] / 1e6:.1f} MB, above the "
            f"{BUDGET / 1e6:.0f} MB budget: shorten the largest recipes"
        )
