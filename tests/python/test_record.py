"""pcstream record: the C programs of tests/shim run under the shim, with exact expected records,
unchanged outputs and exit statuses, and PC signatures that are stable across runs (ASLR on) and
separate call sites that share only their innermost frames."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest

from support import ROOT

SHIM_SRC = ROOT / "tests" / "shim"
SHIM_SO = ROOT / "python" / "pcstream" / "_shim" / "pcshim.so"
CC = shutil.which("cc") or shutil.which("gcc")

pytestmark = [
    pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the shim is Linux-only"),
    pytest.mark.skipif(CC is None, reason="no C compiler"),
]

FLAGS = {"callsites": ["-O0", "-fno-omit-frame-pointer", "-fno-inline"]}


@pytest.fixture(scope="session")
def progs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Every tests/shim/*.c, compiled."""
    out = tmp_path_factory.mktemp("shimprogs")
    built = {}
    for src in sorted(SHIM_SRC.glob("*.c")):
        exe = out / src.stem
        flags = FLAGS.get(src.stem, ["-O2"])
        subprocess.run([CC, *flags, "-Wall", "-Werror", "-o", str(exe), str(src), "-lpthread"], check=True)
        built[src.stem] = exe
    return built


class Recorded:
    def __init__(self, proc: subprocess.CompletedProcess[str], trace: Path) -> None:
        self.status = proc.returncode
        self.stdout = proc.stdout
        self.stderr = proc.stderr
        self.trace = trace
        if trace.exists():
            table = pq.read_table(trace)
            self.rows: list[dict[str, Any]] = table.to_pylist()
            raw = pq.read_metadata(trace).metadata or {}
            meta = {k.decode(): v.decode() for k, v in raw.items()}
            self.paths = {int(k): v for k, v in json.loads(meta["pcstream.paths"]).items()}
            self.pcs = json.loads(meta["pcstream.pcs"])
            self.meta = meta
        else:
            self.rows, self.paths, self.pcs, self.meta = [], {}, {}, {}

    def name(self, row: dict[str, Any], key: str = "path") -> str:
        return Path(self.paths[row[key]]).name if row[key] else ""

    def ops(self) -> list[str]:
        return [r["op"] for r in self.rows]


def record(cwd: Path, cmd: list[str], *opts: str) -> Recorded:
    trace = cwd / "trace.parquet"
    if trace.exists():
        trace.unlink()
    proc = subprocess.run(
        [sys.executable, "-m", "pcstream", "record", "-o", str(trace), *opts, "--", *cmd],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=120,
    )
    return Recorded(proc, trace)


def test_shim_is_built() -> None:
    assert SHIM_SO.is_file(), "make install builds python/pcstream/_shim/pcshim.so"


def test_basic_exact_records(progs: dict[str, Path], tmp_path: Path) -> None:
    r = record(tmp_path, [str(progs["basic"])])
    assert r.status == 3, r.stderr
    assert r.stdout == "basic ok\n"
    assert r.ops() == [
        "open", "write", "write", "write", "write", "fsync", "fdatasync", "sync_range", "truncate",
        "write", "close", "close", "rename", "truncate", "unlink", "exit",
    ]  # fmt: skip
    writes = [(r["offset"], r["len"], r["fd"]) for r in r.rows if r["op"] == "write"]
    fd = r.rows[0]["fd"]
    assert writes == [(0, 5, fd), (100, 2, fd), (5, 5, fd), (200, 5, fd), (10, 1, 77)]
    assert r.rows[0]["flags"] == os.O_CREAT | os.O_WRONLY | os.O_TRUNC
    assert all(r.name(x) == "a.dat" for x in r.rows[:12])
    rename = r.rows[12]
    assert (r.name(rename), r.name(rename, "path2")) == ("a.dat", "b.dat")
    assert (r.rows[13]["offset"], r.name(r.rows[13]), r.name(r.rows[14])) == (3, "b.dat", "b.dat")
    assert r.rows[8]["offset"] == 150 and r.rows[7]["len"] == 4096
    ino = r.rows[0]["ino"]
    assert ino and all(x["ino"] == ino for x in r.rows[:15])
    assert all(x["pc"] != 0 for x in r.rows if x["op"] == "write")
    assert len({x["pc"] for x in r.rows if x["op"] == "write"}) == 5
    ts = [x["ts_ns"] for x in r.rows]
    assert ts == sorted(ts)
    assert "16 records" in r.stderr and "1 processes" in r.stderr


def test_threads(progs: dict[str, Path], tmp_path: Path) -> None:
    r = record(tmp_path, [str(progs["threads"])])
    assert r.status == 0, r.stderr
    writes = [x for x in r.rows if x["op"] == "write"]
    assert len(writes) == 2000
    assert sorted(x["offset"] for x in writes) == list(range(0, 20000, 10))
    per_tid = Counter(x["tid"] for x in writes)
    assert sorted(per_tid.values()) == [500] * 4
    assert r.rows[0]["pid"] not in per_tid


def test_fork_exec_and_exit(progs: dict[str, Path], tmp_path: Path) -> None:
    r = record(tmp_path, [str(progs["forkexec"])])
    assert r.status == 5, r.stderr
    writes = {r.name(x): (x["len"], x["pid"]) for x in r.rows if x["op"] == "write"}
    assert {k: v[0] for k, v in writes.items()} == {"p.dat": 6, "c.dat": 5, "e.dat": 4, "k.dat": 3}
    parent = writes["p.dat"][1]
    forks = [x["offset"] for x in r.rows if x["op"] == "fork"]
    assert forks == [writes["c.dat"][1], writes["k.dat"][1]] and parent not in forks
    assert writes["e.dat"][1] == writes["c.dat"][1]  # exec keeps the pid
    execs = [x for x in r.rows if x["op"] == "exec"]
    assert len(execs) == 1 and r.paths[execs[0]["path"]] == str(progs["forkexec"])
    exits = {x["pid"]: (x["offset"], x["flags"]) for x in r.rows if x["op"] == "exit" and x["pid"] != parent}
    assert exits[writes["k.dat"][1]] == (4, 0)
    assert "4 processes" in r.stderr and "lost" not in r.stderr


def test_sigterm_flushes_and_keeps_the_status(progs: dict[str, Path], tmp_path: Path) -> None:
    r = record(tmp_path, [str(progs["sigterm"])])
    assert r.status == 128 + 15
    assert [(x["offset"], x["len"]) for x in r.rows if x["op"] == "write"] == [(0, 4), (4, 4), (8, 4)]
    assert "SIGTERM" in r.stderr and "lost" not in r.stderr


def test_sigkill_reports_the_loss(progs: dict[str, Path], tmp_path: Path) -> None:
    r = record(tmp_path, [str(progs["sigkill"])])
    assert r.status == 128 + 9
    assert len(r.rows) == 256  # one full buffer reached the log; the rest died with the process
    assert "records lost" in r.stderr


def test_stdio_recorded_at_the_call(progs: dict[str, Path], tmp_path: Path) -> None:
    r = record(tmp_path, [str(progs["stdio"])])
    assert r.status == 0 and r.stdout == "stdio ok\n"
    assert r.ops() == ["open", "write", "write", "write", "write", "close", "exit"]
    assert [(x["offset"], x["len"], x["flags"]) for x in r.rows if x["op"] == "write"] == [
        (0, 5, 1),
        (5, 5, 1),
        (10, 1, 1),
        (11, 10, 1),
    ]
    assert (tmp_path / "f.txt").read_text() == "n=42\nline\nc0123456789"


def _sites(r: Recorded) -> list[int]:
    return [x["pc"] for x in r.rows if x["op"] == "write"]


@pytest.mark.parametrize("method", ["fp", "unwind", "auto"])
def test_call_sites_separate_and_are_stable(progs: dict[str, Path], tmp_path: Path, method: str) -> None:
    a, a2, b = _sites(record(tmp_path, [str(progs["callsites"]), "twice"], "--method", method))
    assert a == a2 and a != b, "same site → same signature; sites differing at frame 6 → different"
    again = record(tmp_path, [str(progs["callsites"]), "twice"], "--method", method)
    assert _sites(again) == [a, a2, b], "signatures must not depend on the load address (ASLR)"
    frames = again.pcs[str(a)]
    assert len(frames) >= 6 and frames[0]["module"] == str(progs["callsites"])
    five = _sites(record(tmp_path, [str(progs["callsites"])], "--method", method, "--frames", "5"))
    assert five[0] == five[1], "with 5 frames the two sites share their signature"


def test_scan_gives_signatures(progs: dict[str, Path], tmp_path: Path) -> None:
    # Known gap (docs/RECORD.md): scan signatures pick up stale stack words and are not yet equal
    # across runs; only their presence and the frame table are checked here.
    r = record(tmp_path, [str(progs["callsites"]), "twice"], "--method", "scan")
    assert r.status == 0 and all(_sites(r)) and all(r.pcs[str(pc)] for pc in _sites(r))


def test_bad_input(progs: dict[str, Path], tmp_path: Path) -> None:
    r = record(tmp_path, ["no-such-command-xyz"])
    assert r.status == 127
    assert r.stderr.startswith("pcstream: error: no-such-command-xyz: command not found")
    assert len(r.stderr.strip().splitlines()) == 1
    proc = subprocess.run(
        [sys.executable, "-m", "pcstream", "record", "-o", "/nonexistent/dir/t.parquet", "--", "true"],
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 3 and "does not exist" in proc.stderr
