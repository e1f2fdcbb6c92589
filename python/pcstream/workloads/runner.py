"""Run a workload recipe: install what it needs, record it, check its trace, map it to blocks."""

from __future__ import annotations

import glob
import json
import os
import shutil
import subprocess
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pcstream import record as rec
from pcstream.errors import EXIT_FAILURE, EXIT_USAGE, CliError
from pcstream.workloads.recipes import RECIPES, Recipe


def recipe(name: str) -> Recipe:
    if name not in RECIPES:
        raise CliError(f"workload '{name}': unknown; use one of {', '.join(RECIPES)}", EXIT_USAGE)
    return RECIPES[name]


def _present(probe: str) -> bool:
    if "*" in probe:
        return bool(glob.glob(probe))
    if probe.startswith("/"):
        return os.path.exists(probe)
    return shutil.which(probe) is not None


def missing_packages(r: Recipe) -> list[str]:
    return [pkg for pkg, probe in r.packages if not _present(probe)]


def ensure_packages(r: Recipe) -> list[str]:
    """Install the recipe's missing Debian packages (as root, with apt-get); the installed ones."""
    missing = missing_packages(r)
    if not missing:
        return []
    if os.geteuid() != 0 or shutil.which("apt-get") is None:
        raise CliError(
            f"workload {r.name} needs the Debian packages {' '.join(missing)}; install them "
            f"(sudo apt-get install -y {' '.join(missing)}) and run again",
            EXIT_FAILURE,
        )
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    for cmd in (["apt-get", "update", "-qq"], ["apt-get", "install", "-y", "-qq", *missing]):
        proc = subprocess.run(cmd, capture_output=True, text=True, env=env, check=False)
        if proc.returncode != 0:
            tail = (proc.stderr or proc.stdout).strip().splitlines()[-1:] or ["no output"]
            raise CliError(f"workload {r.name}: '{' '.join(cmd)}' failed: {tail[0]}", EXIT_FAILURE)
    still = missing_packages(r)
    if still:
        raise CliError(
            f"workload {r.name}: {' '.join(still)} still missing after apt-get install", EXIT_FAILURE
        )
    return missing


def trace_facts(trace: Path) -> dict[str, Any]:
    """What the checks look at, from a file-level trace: signatures, written files, deletes."""
    import pyarrow.parquet as pq

    pf = pq.ParquetFile(trace)
    kv = {k.decode(): v.decode() for k, v in (pf.schema_arrow.metadata or {}).items()}
    paths = {int(k): v for k, v in json.loads(kv.get("pcstream.paths", "{}")).items()}
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


MapFn = Callable[[Path, Path], dict[str, Any]]


def run_recipe(
    r: Recipe,
    out_dir: Path,
    method: str = "auto",
    keep_work: bool = False,
    map_to_blocks: MapFn | None = None,
) -> dict[str, Any]:
    """Record recipe ``r`` into ``out_dir/NAME.file.parquet``; check it; map it with
    ``map_to_blocks(file_trace, block_trace)`` into ``out_dir/NAME.parquet`` when given.
    Returns the summary."""
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
            raise CliError(f"workload {r.name}: set-up failed: {tail[0][:200]}", EXIT_FAILURE)
    script = f"set -e\ncd {work.resolve()}\nexec >{log} 2>&1\n{r.script}\n"
    t0 = time.monotonic()
    try:
        # Stdio-heavy programs (cc1, shells) write a few bytes at a time: fold those runs.
        status, summary = rec.record(["bash", "-c", script], file_trace, method=method, coalesce=True)
    finally:
        if not keep_work:
            shutil.rmtree(work, ignore_errors=True)
    wall = time.monotonic() - t0
    if status != 0:
        last = log.read_text(errors="replace").strip().splitlines()[-1:] if log.exists() else []
        raise CliError(
            f"workload {r.name}: the recorded script exited with status {status}"
            + (f" ({last[0][:200]}; full output in {log})" if last else ""),
            EXIT_FAILURE,
        )
    facts = trace_facts(file_trace)
    problems = [p for check in r.checks if (p := check(facts)) is not None]
    result: dict[str, Any] = {
        "workload": r.name,
        "file_trace": str(file_trace),
        "log": str(log),
        "installed": installed,
        "record_wall_s": round(wall, 1),
        "record": {k: summary[k] for k in ("records", "writes", "write_bytes", "processes", "signatures")},
        "facts": {k: v for k, v in facts.items() if k != "written_paths"},
        "files_written": len(facts["written_paths"]),
        "check_problems": problems,
    }
    if problems:
        raise CliError(f"workload {r.name}: trace check failed: {'; '.join(problems)}", EXIT_FAILURE)
    if map_to_blocks is not None:
        block = out_dir / f"{r.name}.parquet"
        result["block_trace"] = str(block)
        result["map"] = map_to_blocks(file_trace, block)
    return result
