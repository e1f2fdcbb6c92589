"""Purity of PC signatures: how well the program context of a write predicts what the write is.

Every write of a file-level trace (``pcstream record``) gets a ground-truth class; a signature's
purity is the share of its bytes that belong to its majority class, and the overall purity is the
byte-weighted mean over all signatures (= bytes in their signature's majority class / all bytes).
A PC-based placement can only separate classes as well as this number says.

RocksDB ground truth (``rocksdb_classes``): ``wal`` (``NNNNNN.log``), ``flush_sst`` and
``compaction_sst`` (``NNNNNN.sst``, told apart by the ``EVENT_LOG_v1`` lines of the RocksDB ``LOG``
files: ``table_file_creation`` gives file_number -> job, ``flush_started`` / ``compaction_started``
give job -> kind; an SST without a creation event is a compaction output abandoned at shutdown and
counts as compaction), ``manifest`` (``MANIFEST-*``) and ``other`` (``LOG``, ``OPTIONS-*``,
``CURRENT``, ``IDENTITY``, temporary files).

``python -m pcstream.report.purity TRACE DBDIR`` prints the report of a recorded RocksDB run;
``python -m pcstream.report.purity --run [--methods auto,fp,unwind,scan]`` records db_bench itself
(rocksdb-tools) once per method and prints one line per method (docs/RECORD.md, "Purity").
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pcstream import tracemeta

CLASSES = ("wal", "flush_sst", "compaction_sst", "manifest", "other")

# db_bench: ~2 x 6 s of rate-limited random puts (7.6 MB/s of user data) with small memtables and
# SST files, so that a dozen seconds hold ~50 flushes and ~40 compactions (measured: 12.4 s,
# 230 k puts, 200 table files without the shim).
DB_BENCH_ARGS = [
    "--benchmarks=fillrandom,overwrite",
    "--num=200000",
    "--value_size=400",
    "--compression_type=none",
    "--write_buffer_size=2097152",
    "--target_file_size_base=2097152",
    "--max_bytes_for_level_base=8388608",
    "--duration=6",
    "--benchmark_write_rate_limit=8000000",
    "--seed=1",
    "--progress_reports=false",
]

_EVENT = re.compile(r"EVENT_LOG_v1 (\{.*\})\s*$")
_WAL = re.compile(r"\d+\.log")
_SST = re.compile(r"(\d+)\.sst")


def rocksdb_sst_kinds(db_dir: Path) -> dict[int, str]:
    """SST file number -> ``flush_sst`` or ``compaction_sst``, from every ``LOG*`` file of ``db_dir``."""
    job_kind: dict[int, str] = {}
    file_job: dict[int, int] = {}
    logs = sorted(p for p in db_dir.iterdir() if p.name == "LOG" or p.name.startswith("LOG.old"))
    for log in logs:
        with open(log, encoding="utf-8", errors="replace") as f:
            for lineno, line in enumerate(f, 1):
                m = _EVENT.search(line)
                if not m:
                    continue
                try:
                    ev = json.loads(m.group(1))
                except json.JSONDecodeError as e:
                    raise ValueError(
                        f"{log}:{lineno}: EVENT_LOG_v1 line is not JSON ({e.msg}); is the LOG torn?"
                    ) from e
                kind = ev.get("event")
                if kind == "flush_started":
                    job_kind[ev["job"]] = "flush_sst"
                elif kind == "compaction_started":
                    job_kind[ev["job"]] = "compaction_sst"
                elif kind == "table_file_creation":
                    file_job[ev["file_number"]] = ev["job"]
    return {num: job_kind.get(job, "compaction_sst") for num, job in file_job.items()}


def rocksdb_classes(db_dir: Path) -> Callable[[str], str]:
    """A classifier: absolute path of a written file -> its RocksDB class (see the module doc)."""
    kinds = rocksdb_sst_kinds(db_dir)

    def classify(path: str) -> str:
        name = Path(path).name
        if _WAL.fullmatch(name):
            return "wal"
        m = _SST.fullmatch(name)
        if m:
            return kinds.get(int(m.group(1)), "compaction_sst")
        if name.startswith("MANIFEST-"):
            return "manifest"
        return "other"

    return classify


@dataclass
class Purity:
    """Bytes by (signature, class) and what follows from them."""

    bytes_by: dict[int, dict[str, int]] = field(default_factory=dict)

    @property
    def total_bytes(self) -> int:
        return sum(sum(c.values()) for c in self.bytes_by.values())

    @property
    def pure_bytes(self) -> int:
        return sum(max(c.values()) for c in self.bytes_by.values())

    @property
    def purity(self) -> float:
        """Byte-weighted purity in [0, 1] (1.0 for an empty trace)."""
        total = self.total_bytes
        return self.pure_bytes / total if total else 1.0

    def per_class(self) -> dict[str, dict[str, float]]:
        """class -> bytes, signatures holding them, and the share of them in pure-for-them signatures."""
        out: dict[str, dict[str, float]] = {}
        for counts in self.bytes_by.values():
            major = max(counts, key=lambda k: (counts[k], k))
            for cls, n in counts.items():
                row = out.setdefault(cls, {"bytes": 0, "signatures": 0, "in_majority_bytes": 0})
                row["bytes"] += n
                row["signatures"] += 1
                if cls == major:
                    row["in_majority_bytes"] += n
        return dict(sorted(out.items()))

    def as_dict(self) -> dict[str, Any]:
        return {
            "purity": round(self.purity, 6),
            "signatures": len(self.bytes_by),
            "write_bytes": self.total_bytes,
            "classes": self.per_class(),
        }


def purity(trace: Path, classify: Callable[[str], str]) -> Purity:
    """Bytes of every write of ``trace`` by (pc, class of its file)."""
    import pyarrow.parquet as pq

    pf = pq.ParquetFile(trace)
    paths = tracemeta.paths(pf.metadata.metadata or {})
    cls_of = {pid: classify(p) for pid, p in paths.items()}
    acc: dict[int, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    for batch in pf.iter_batches(columns=["op", "len", "pc", "path"]):
        cols = batch.to_pydict()
        for op, n, pc, path in zip(cols["op"], cols["len"], cols["pc"], cols["path"]):
            if op == "write":
                acc[pc][cls_of.get(path, "other")] += n
    return Purity({pc: dict(c) for pc, c in acc.items()})


def format_report(label: str, p: Purity) -> str:
    """One line: purity, signatures, and per class MB / signatures."""
    parts = [
        f"{c} {v['bytes'] / 1e6:.1f} MB in {int(v['signatures'])} sig"
        for c, v in p.per_class().items()
        if v["bytes"]
    ]
    head = f"{label}: purity {100 * p.purity:.2f} % over {p.total_bytes / 1e6:.1f} MB"
    return f"{head}, {len(p.bytes_by)} signatures ({'; '.join(parts)})"


def run_db_bench(method: str, workdir: Path, extra: Iterable[str] = (), frames: int = 12) -> dict[str, Any]:
    """Record one db_bench run (DB_BENCH_ARGS) in ``workdir`` with ``method``; its purity report."""
    db_bench = shutil.which("db_bench")
    if db_bench is None:
        raise FileNotFoundError("db_bench: not found; install rocksdb-tools (make rocksdb-tools)")
    db = workdir / f"db-{method}"
    trace = workdir / f"rocksdb-{method}.parquet"
    shutil.rmtree(db, ignore_errors=True)
    # One row per write, each with its own PC: purity weighs every write by its signature.
    cmd = [
        sys.executable, "-m", "pcstream", "record", "--no-coalesce", "-o", str(trace), "--method", method,
        "--frames", str(frames), "--", db_bench, f"--db={db}", *DB_BENCH_ARGS, *extra,
    ]  # fmt: skip
    t0 = time.monotonic()
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
    wall = time.monotonic() - t0
    if proc.returncode != 0:
        raise RuntimeError(
            f"db_bench under pcstream record --method {method} failed: {proc.stderr.strip()[-400:]}"
        )
    p = purity(trace, rocksdb_classes(db))
    out = p.as_dict()
    out.update(
        method=method, frames=frames, wall_s=round(wall, 1), summary=proc.stderr.strip().splitlines()[-1]
    )
    out["report"] = format_report(f"db_bench --method {method}", p)
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        prog="python -m pcstream.report.purity", description=__doc__.split("\n\n")[0]
    )
    ap.add_argument("trace", nargs="?", type=Path, help="file-level trace of a RocksDB run")
    ap.add_argument("db", nargs="?", type=Path, help="the RocksDB directory of that run (its LOG files)")
    ap.add_argument("--run", action="store_true", help="record db_bench (rocksdb-tools) once per method")
    ap.add_argument("--methods", default="auto,fp,unwind,scan")
    ap.add_argument("--frames", type=int, default=12)
    ap.add_argument(
        "--workdir", type=Path, default=None, help="keep DBs and traces here (default: a temp dir)"
    )
    ap.add_argument("--json", action="store_true", help="print JSON instead of one line per run")
    a = ap.parse_args(argv)
    if a.run:
        work = a.workdir or Path(tempfile.mkdtemp(prefix="pcstream-purity-"))
        work.mkdir(parents=True, exist_ok=True)
        try:
            for m in a.methods.split(","):
                r = run_db_bench(m, work, frames=a.frames)
                print(json.dumps(r) if a.json else f"{r['report']}; {r['wall_s']} s", flush=True)
        finally:
            if a.workdir is None:
                shutil.rmtree(work, ignore_errors=True)
        return 0
    if a.trace is None or a.db is None:
        ap.error("give TRACE and DB, or --run")
    p = purity(a.trace, rocksdb_classes(a.db))
    print(json.dumps(p.as_dict()) if a.json else format_report(str(a.trace), p))
    return 0


if __name__ == "__main__":
    sys.exit(main())
