"""record --block and validate --run: the tracefs → blkparse conversion and the layout parsers
(always), the root check (always), and end-to-end runs on a real ext4 loop device (root with loop
devices and tracefs only; skipped otherwise): classes in the real trace, the comparison (with
the BPF capture where it runs: PCs and lifetimes), the tracefs capture on an aged file system,
Ctrl-C and errors leaving no loop device, mount, tracing instance or capture process behind.
The BPF capture itself: test_bio_capture.py."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest

from pcstream import tracemeta
from pcstream.groundtruth import biotracer, loopdev, tracefs
from pcstream.groundtruth.ext4layout import Layout, parse_debugfs_stats, parse_dumpe2fs
from pcstream.groundtruth.tracefs import tracefs_to_blkparse
from support import ROOT, assert_user_error, invoke

WORKLOAD = ROOT / "tools" / "fs_workload.py"
SHIM_SO = ROOT / "python" / "pcstream" / "_shim" / "pcshim.so"

# --------------------------------------------------------------------------- conversion and layout

TRACE = """\
# tracer: nop
#           TASK-PID     CPU#  |||||  TIMESTAMP  FUNCTION
         python3-26931   [001] .....  5226.318432: block_bio_queue: 7,0 WS 40760 + 200 [python3]
    jbd2/loop0-8-26922   [001] .....  5226.318552: block_bio_queue: 7,0 WSM 7992 + 8 [jbd2/loop0-8]
    jbd2/loop0-8-26922   [001] .....  5226.318665: block_bio_queue: 7,0 FWFSM 8056 + 8 [jbd2/loop0-8]
            sync-26972   [000] .....  5226.544416: block_bio_queue: 7,0 FWS 0 + 0 [sync]
    kworker/u8:2-26457   [001] .....  5226.544467: block_bio_queue: 7,0 DS 40760 + 221384 [kworker/u8:2]
CPU:1 [LOST 12 EVENTS]
"""

DUMPE2FS = """\
Block count:              61248
Inodes per group:         7664
Group 0: (Blocks 0-32767) csum 0xae36 [ITABLE_ZEROED]
  Primary superblock at 0, Group descriptors at 1-1
  Reserved GDT blocks at 2-30
  Block bitmap at 31 (+31), csum 0x39040af9
  Inode bitmap at 33 (+33), csum 0x69438447
  Inode table at 35-513 (+35)
Group 1: (Blocks 32768-61247) csum 0x97bd [INODE_UNINIT, ITABLE_ZEROED]
  Backup superblock at 32768, Group descriptors at 32769-32769
  Reserved GDT blocks at 32770-32798
  Block bitmap at 32 (bg #0 + 32), csum 0x2ef35080
  Inode bitmap at 34 (bg #0 + 34), csum 0x00000000
  Inode table at 514-992 (bg #0 + 514)
"""

DEBUGFS = """\
debugfs 1.47.0 (5-Feb-2023)
debugfs: stat "/d"
Inode: 12   Type: directory    Mode:  0755   Flags: 0x81000
EXTENTS:
(0-2):5095-5097
debugfs: stat "/big"
Inode: 313   Type: regular    Mode:  0644   Flags: 0x80000
EXTENTS:
(ETB0):5908, (0):1812, (512):2324, (1024-1030):2836-2842
"""

JOURNAL = """\
Inode: 8   Type: regular    Mode:  0600   Flags: 0x80000
EXTENTS:
(0-4095):999-5094
"""


def test_tracefs_lines_become_blkparse_issue_lines(tmp_path: Path) -> None:
    src, dst = tmp_path / "t.txt", tmp_path / "t.blkparse"
    src.write_text(TRACE)
    conv = tracefs_to_blkparse(src, dst)
    assert (conv.events, conv.lost, conv.other_lines) == (5, 12, 0)
    assert dst.read_text().splitlines() == [
        "7,0 001 1 5226.318432000 26931 D WS 40760 + 200 [python3]",
        "7,0 001 2 5226.318552000 26922 D WSM 7992 + 8 [jbd2/loop0-8]",
        "7,0 001 3 5226.318665000 26922 D F 0 + 0 [jbd2/loop0-8]",  # the preflush of the commit block
        "7,0 001 4 5226.318665000 26922 D WFSM 8056 + 8 [jbd2/loop0-8]",
        "7,0 000 5 5226.544416000 26972 D FWS 0 + 0 [sync]",
        "7,0 001 6 5226.544467000 26457 D DS 40760 + 221384 [kworker/u8:2]",
    ]
    # and the engine reads them: 2 data/journal writes + commit block, 2 flushes, 1 discard
    out = tmp_path / "b.parquet"
    run = invoke("import", "blkparse", dst, "-o", out, "--json")
    assert run.status == 0, run.stderr
    r = run.json()
    assert (r["writes"], r["flushes"], r["trims"], r["write_pages"]) == (3, 2, 1, 25 + 1 + 1)


def test_layout_classes_from_dumpe2fs_and_debugfs() -> None:
    layout = Layout()
    parse_dumpe2fs(DUMPE2FS, layout)
    parse_debugfs_stats(JOURNAL, layout, journal=True)
    parse_debugfs_stats(DEBUGFS, layout)
    assert (layout.blocks, layout.groups, layout.inodes_per_group) == (61248, 2, 7664)
    assert (layout.directories, layout.files) == (1, 1)
    assert layout.journal == [(999, 4096)]
    m = layout.meta_map()
    assert m[:4] == [(0, 1, 5), (1, 35 - 1, 4), (35, 992 - 35 + 1, 2), (999, 4096, 1)]
    assert (5095, 3, 3) in m and (5908, 1, 5) in m and (32768, 1, 5) in m and (32769, 30, 4) in m
    assert all(a[0] + a[1] <= b[0] for a, b in zip(m, m[1:])), "sorted and disjoint"
    assert layout.pages_by_class() == {
        "journal": 4096,
        "inode": 958,
        "directory": 3,
        "bitmap": 64,
        "other": 3,
    }


def test_meta_map_trims_overlaps_and_merges() -> None:
    layout = Layout(ranges=[(10, 5, 2), (12, 5, 2), (17, 3, 2), (30, 2, 1), (31, 1, 3)])
    assert layout.meta_map() == [(10, 10, 2), (30, 2, 1)]


def test_outputs_naming(tmp_path: Path) -> None:
    d = loopdev.Outputs.at(tmp_path / "run")
    assert (d.block.name, d.files.name, d.layout.name, d.text.name) == (
        "block.parquet", "files.parquet", "layout.json", "block.blkparse"
    )  # fmt: skip
    f = loopdev.Outputs.at(tmp_path / "x.parquet")
    assert (f.block.name, f.files.name, f.layout.name) == ("x.parquet", "x.files.parquet", "x.layout.json")
    f.layout.write_text("{}")
    assert loopdev.Outputs.layout_for(f.block) == f.layout


def test_not_root_is_one_line_and_status_77(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setattr(os, "geteuid", lambda: 1000)
    line = assert_user_error(invoke("record", "--block", "-o", tmp_path / "r", "--", "true"), 77, "root")
    assert "--block" in line
    assert_user_error(invoke("validate", "--run", "-o", tmp_path / "v", "--", "true"), 77, "root")
    assert not (tmp_path / "r").exists()


def test_block_options_need_block(tmp_path: Path) -> None:
    assert_user_error(invoke("record", "--capacity", "1GiB", "-o", tmp_path / "t.parquet", "--", "true"), 2,
                      "--block")  # fmt: skip


# --------------------------------------------------------------------------- end to end (root)


def _can_capture() -> str | None:
    if not sys.platform.startswith("linux") or os.geteuid() != 0:
        return "needs root on Linux"
    if not SHIM_SO.is_file():
        return "the record shim is not built"
    if not Path("/dev/loop-control").exists() or shutil.which("losetup") is None:
        return "no loop devices"
    if any(shutil.which(t) is None for t in loopdev.TOOLS):
        return "e2fsprogs / util-linux tools missing"
    try:
        tracefs.tracefs_root()
    except Exception as exc:  # noqa: BLE001 - any reason means: skip
        return f"no tracefs ({exc})"
    probe = subprocess.run(["losetup", "-f"], capture_output=True, text=True, check=False)
    if probe.returncode != 0:
        return "no free loop device"
    return None


SKIP = _can_capture()
needs_capture = pytest.mark.skipif(SKIP is not None, reason=SKIP or "")


def _state() -> dict[str, Any]:
    """Loop devices over our images, our mounts, tracing instances and BPF capture processes (to
    prove cleanup)."""
    loops = subprocess.run(["losetup", "-a"], capture_output=True, text=True, check=False).stdout
    mounts = Path("/proc/mounts").read_text()
    inst = tracefs.TRACEFS / "instances"
    loaders = []
    for proc in Path("/proc").iterdir():
        try:
            if proc.name.isdigit() and (proc / "exe").resolve() == biotracer.BINARY:
                loaders.append(proc.name)
        except OSError:
            continue
    return {
        "loops": sorted(line for line in loops.splitlines() if "pcstream-block-" in line),
        "mounts": sorted(line for line in mounts.splitlines() if "pcstream-mnt-" in line),
        "instances": sorted(p.name for p in inst.iterdir() if p.name.startswith("pcstream-")),
        "loaders": sorted(loaders),
    }


def _pcstream(*args: str | Path, cwd: Path, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "pcstream", *map(str, args)],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=timeout,
        env={**os.environ, "NO_COLOR": "1"},
    )


@needs_capture
def test_validate_run_end_to_end(tmp_path: Path) -> None:
    before = _state()
    out = tmp_path / "run"
    workload = [
        sys.executable,
        str(WORKLOAD),
        "--total",
        "48M",
        "--live",
        "16M",
        "--db",
        "8M",
        "--rate",
        "16M",
    ]
    proc = _pcstream(
        "validate", "--run", "--ssd", "small", "-o", out, "--json", "--", *workload, cwd=tmp_path
    )
    assert proc.returncode == 0, proc.stderr
    assert _state() == before, "no loop device, mount or tracing instance left behind"
    r = json.loads(proc.stdout.strip().splitlines()[-1])
    assert r["real_layout_classified"]
    # bytes, metadata share, baseline WAF; and a median lifetime per top PC that has deaths
    assert r["targets"] == 3
    assert r["lifetime_targets"] == sum(1 for row in r["lifetimes"] if row["ok"] is not None)
    real, model = r["real"], r["model"]
    assert real["written_bytes"] > 40 << 20 and model["written_bytes"] > 40 << 20
    assert real["journal_share"] > 0 and real["flushes"] > 0 and real["discard_bytes"] > 0
    assert r["run"]["lost_events"] == 0
    # the real block trace: ext4's layout classes, capacity = the small SSD's logical pages
    table = pq.read_table(out / "block.parquet").to_pylist()
    written = {row["meta"] for row in table if row["op"] == 0}
    assert {0, 1} <= written, written
    assert tracemeta.footer(out / "block.parquet")[tracemeta.KEY_CAPACITY] == "61248"
    assert (out / "files.parquet").is_file() and (out / "model.parquet").is_file()
    assert (out / "block.blkparse").read_text().count(" D ") >= len(table) // 2
    # the targets the model is held to (docs/FSMODEL.md): bytes, metadata share, baseline WAF,
    # per-PC median lifetimes
    assert r["targets_met"] == 3, r["rows"]
    assert r["lifetime_targets_met"] == r["lifetime_targets"], r["lifetimes"]
    layout = json.loads((out / "layout.json").read_text())
    if biotracer.unavailable() is None:  # the BPF capture: PCs on the real data pages
        assert layout["capture"] == "bpf" and layout["attribution"]["rate"] >= 0.95
        assert r["run"]["capture"] == "bpf" and r["run"]["attribution"]["rate"] >= 0.95
        assert r["lifetimes"] and all(row["real"]["pages"] > 0 for row in r["lifetimes"])
        assert any(row["pc"] for row in table if row["op"] == 0 and row["meta"] == 0)
    else:
        assert layout["capture"] == "tracefs" and layout["bpf_unavailable"]


@needs_capture
def test_record_block_keeps_the_commands_status_and_survives_ctrl_c(tmp_path: Path) -> None:
    before = _state()
    out = tmp_path / "x.parquet"
    script = "import os,time\nopen('f','wb').write(b'z'*65536)\nos.sync()\ntime.sleep(30)\n"
    proc = subprocess.Popen(
        [sys.executable, "-m", "pcstream", "record", "--block", "--capacity", "64MiB", "-o", str(out), "--",
         sys.executable, "-c", script],
        cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True,
    )  # fmt: skip
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and not any(
        "pcstream-mnt-" in line for line in Path("/proc/mounts").read_text().splitlines()
    ):
        time.sleep(0.1)
    time.sleep(1.5)  # the command has written and is sleeping
    os.killpg(proc.pid, signal.SIGINT)  # Ctrl-C at a terminal: the whole foreground group
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 128 + signal.SIGINT, err
    assert _state() == before, err
    assert (
        out.is_file() and (tmp_path / "x.files.parquet").is_file() and (tmp_path / "x.layout.json").is_file()
    )
    data = [r for r in pq.read_table(out).to_pylist() if r["op"] == 0 and r["meta"] == 0]
    assert sum(r["pages"] for r in data) >= 16  # the 64 KiB file reached the disk before Ctrl-C


@needs_capture
def test_tracefs_capture_on_an_aged_file_system(tmp_path: Path) -> None:
    before = _state()
    out = tmp_path / "t.parquet"
    script = "open('f', 'wb').write(b'z' * (1 << 20))"
    proc = subprocess.run(
        [sys.executable, "-c",
         "import sys; from pathlib import Path; from pcstream.options import RecordOptions; "
         "from pcstream.compose import record_block; from pcstream.groundtruth import loopdev as b; "
         f"s, r = record_block([sys.executable, '-c', {script!r}], Path({str(out)!r}), RecordOptions("
         "capacity=16384, age=0.6, age_seed=2, age_churn=0, coalesce=False), capture_method='tracefs'); "
         "print(b.summary_line(b.Outputs.at(Path("
         f"{str(out)!r})), r))"],
        cwd=tmp_path, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert _state() == before
    line = proc.stdout.strip()
    assert "capture tracefs" in line and "aged to" in line, line
    layout = json.loads((tmp_path / "t.layout.json").read_text())
    assert layout["capture"] == "tracefs" and layout["attribution"] is None
    assert abs(layout["aged"]["used_share"] - 0.6) <= 0.03
    meta = tracemeta.footer(out)
    rows = pq.read_table(out).to_pylist()
    aged = int(meta[tracemeta.KEY_AGED_ROWS])
    assert aged > 0 and all(r["op"] == 0 and r["ts_ns"] == 0 for r in rows[:aged])
    assert (
        sum(r["pages"] for r in rows[:aged]) == int(meta[tracemeta.KEY_AGED_PAGES]) == layout["aged"]["pages"]
    )
    data = [r for r in rows[aged:] if r["op"] == 0 and r["meta"] == 0]
    assert sum(r["pages"] for r in data) >= 256 and not any(r["pc"] for r in data)


@needs_capture
def test_record_block_errors_clean_up(tmp_path: Path) -> None:
    before = _state()
    proc = _pcstream("record", "--block", "--capacity", "64MiB", "--mount-opts", "no_such_option", "-o",
                     tmp_path / "r", "--", "true", cwd=tmp_path)  # fmt: skip
    assert proc.returncode == 1, proc.stderr
    lines = proc.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("pcstream: error: mounting the file system failed"), lines
    assert _state() == before
    assert not (tmp_path / "r" / "block.parquet").exists()
    assert [p.name for p in (tmp_path / "r").iterdir()] == [], "no work files left"
