"""Recording a workload recipe (``pcstream workload NAME --record``): install what it needs, run
its script under ``pcstream record`` in a scratch directory, check the file-level trace, and map
it to the block trace of the SSD the recipe is sized for (docs/WORKLOADS.md).
"""

from __future__ import annotations

import shutil
import signal
import subprocess
import time
from collections import Counter
from pathlib import Path
from typing import Any

from pcstream import api, tracemeta
from pcstream.aging import Aging
from pcstream.errors import Failure, Terminated, UsageError, prepare_output
from pcstream.options import MapOptions, RecordOptions
from pcstream.record import runner, shimrun
from pcstream.units import parse_size
from pcstream.workloads.packages import ensure_packages
from pcstream.workloads.recipes import RECIPES, Recipe

# The record summary's figures a recipe's result (and the suite's manifest) keeps: the bytes the
# safety net recovered, those put by stdio macros and those no offset was known for show how
# complete the capture of each program was (docs/RECORD.md).
RECORD_FIGURES = (
    "records",
    "writes",
    "write_bytes",
    "processes",
    "signatures",
    "recovered_bytes",
    "inline_stdio_bytes",
    "unplaced_bytes",
)


def recipe(name: str) -> Recipe:
    if name not in RECIPES:
        raise UsageError(f"workload '{name}': unknown; use one of {', '.join(RECIPES)}")
    return RECIPES[name]


def trace_facts(trace: Path) -> dict[str, Any]:
    """What the checks look at, from a file-level trace: signatures, written files, deletes."""
    import pyarrow.parquet as pq

    pf = pq.ParquetFile(trace)
    paths = tracemeta.paths(pf.metadata.metadata or {})
    t = pf.read(columns=["op", "len", "pc", "path"]).to_pydict()
    sigs: set[int] = set()
    written: set[int] = set()
    ops: Counter[str] = Counter()
    write_bytes = 0
    for op, n, pc, path in zip(t["op"], t["len"], t["pc"], t["path"], strict=True):
        ops[op] += 1
        if op == "write" and n:
            write_bytes += n
            if pc:
                sigs.add(pc)
            written.add(path)
    return {
        "records": sum(ops.values()),
        "ops": dict(ops),
        "write_bytes": write_bytes,
        "write_signatures": len(sigs),
        "written_paths": sorted(paths.get(p, "") for p in written if p),
        "unlinks": ops.get("unlink", 0),
    }


def map_recipe(
    r: Recipe,
    file_trace: Path,
    block_trace: Path,
    capacity_pages: int | None = None,
    mount_opts: str | None = None,
    bar: api.ProgressBar = api.no_progress_bar,
    age: Aging | None = None,
) -> dict[str, Any]:
    """Map ``r``'s file-level trace into ``block_trace`` for the SSD preset the recipe is sized for
    (its logical pages, the recipe's mount options), unless a capacity or options are given;
    ``age``: on an aged file system."""
    pages = capacity_pages if capacity_pages is not None else parse_size(r.ssd)
    opts = r.mount_opts if mount_opts is None else mount_opts
    prepare_output(str(block_trace), [str(file_trace)])
    with bar(f"map {r.name}", "events") as progress:
        options = MapOptions(capacity=pages, mount_opts=opts).aged(age)
        return api.map_trace(str(file_trace), str(block_trace), options, progress=progress)


def run_recipe(
    r: Recipe,
    out_dir: Path,
    method: str = "auto",
    keep_work: bool = False,
    map_blocks: bool = False,
    capacity_pages: int | None = None,
    mount_opts: str | None = None,
    bar: api.ProgressBar = api.no_progress_bar,
    age: Aging | None = None,
) -> dict[str, Any]:
    """Record recipe ``r`` into ``out_dir/NAME.file.parquet``; check it; with ``map_blocks`` map
    it into ``out_dir/NAME.parquet`` (see :func:`map_recipe`). Returns the summary."""
    installed = ensure_packages(r)
    out_dir.mkdir(parents=True, exist_ok=True)
    work = out_dir / f"{r.name}.work"
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir()
    file_trace = out_dir / f"{r.name}.file.parquet"
    # The programs' own output goes to a log beside the traces, not to our stdout.
    log = (out_dir / f"{r.name}.log").resolve()
    if r.setup:
        setup = ["bash", "-c", f"set -e\n{r.setup}"]
        proc = subprocess.run(setup, cwd=work, capture_output=True, text=True, check=False)
        if proc.returncode != 0:
            tail = (proc.stderr or proc.stdout).strip().splitlines()[-1:] or ["no output"]
            raise Failure(f"workload {r.name}: set-up failed: {tail[0][:200]}")
    script = f"set -e\ncd {work.resolve()}\nexec >{log} 2>&1\n{r.script}\n"
    t0 = time.monotonic()
    try:
        # Stdio-heavy programs (cc1, shells) write a few bytes at a time: fold those runs.
        status, summary = shimrun.record(
            ["bash", "-c", script], file_trace, RecordOptions(method=method, frames=r.frames, coalesce=True)
        )
    finally:
        if not keep_work:
            shutil.rmtree(work, ignore_errors=True)
    wall = time.monotonic() - t0
    if runner.last_forwarded:
        # Told to stop while the program ran: the trace holds a cut-off run, not the recipe's.
        file_trace.unlink(missing_ok=True)
        if signal.SIGTERM in runner.last_forwarded:
            raise Terminated()
        raise KeyboardInterrupt
    if status != 0:
        last = log.read_text(errors="replace").strip().splitlines()[-1:] if log.exists() else []
        raise Failure(
            f"workload {r.name}: the recorded script exited with status {status}"
            + (f" ({last[0][:200]}; full output in {log})" if last else ""),
        )
    facts = trace_facts(file_trace)
    problems = [p for check in r.checks if (p := check(facts)) is not None]
    result: dict[str, Any] = {
        "workload": r.name,
        "file_trace": str(file_trace),
        "log": str(log),
        "installed": installed,
        "record_wall_s": round(wall, 1),
        "record": {k: summary.get(k, 0) for k in RECORD_FIGURES},
        "facts": {k: v for k, v in facts.items() if k != "written_paths"},
        "files_written": len(facts["written_paths"]),
        "check_problems": problems,
    }
    if problems:
        raise Failure(f"workload {r.name}: trace check failed: {'; '.join(problems)}")
    if map_blocks:
        block = out_dir / f"{r.name}.parquet"
        result["block_trace"] = str(block)
        result["map"] = map_recipe(r, file_trace, block, capacity_pages, mount_opts, bar, age)
    return result
