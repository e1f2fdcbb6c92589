"""The BPF bio capture of record --block and what is built on it: the capture file's reader, the
real block trace with a PC per data page (the join: last writer before the bio), the aging replay
and the page lifetimes of validate — on hand-made inputs (always) — and, as root with BPF and
loop devices (skipped otherwise, with the reason), a C program's two files seen as their own bios
with their hints and inodes and its two call paths as the PCs of its data pages."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from pcstream import api, compose, tracemeta
from pcstream.groundtruth import agereplay, bio_to_blocktrace, biotracer, loopdev, validation
from pcstream.groundtruth.biotracer import F_FUA, F_META, F_PREFLUSH, OP_DISCARD, OP_READ, OP_WRITE
from pcstream.groundtruth.validation import trace_figures
from pcstream.options import MapOptions, RecordOptions
from support import ROOT

SHIM_SO = ROOT / "python" / "pcstream" / "_shim" / "pcshim.so"
PAGE = 4096
SDEV = 7 << 20  # the loop device (kernel dev_t) and so the captured file system's s_dev
FS_DEV = 0x700  # the same device as stat's st_dev
INO = 12
PC_A, PC_B = 0xAAAA_0000_0000_0001, 0xBBBB_0000_0000_0002

# --------------------------------------------------------------------------- hand-made inputs


def capture(bios: list[dict[str, Any]], runs: list[dict[str, Any]]) -> biotracer.Capture:
    b = np.zeros(len(bios), dtype=biotracer.BIO_DTYPE)
    for i, fields in enumerate(bios):
        b[i]["kind"] = biotracer.KIND_BIO
        b[i]["dev"] = SDEV
        for k, v in fields.items():
            b[i][k] = v
    r = np.zeros(len(runs), dtype=biotracer.RUN_DTYPE)
    for i, fields in enumerate(runs):
        r[i]["kind"] = biotracer.KIND_RUN
        r[i]["sdev"] = SDEV
        for k, v in fields.items():
            r[i][k] = v
    return biotracer.Capture(
        b, r, SDEV, 0, {"bios": len(b), "runs": len(r), "lost": 0, "orphans": 0, "truncated": 0}
    )


def file_trace(path: Path, writes: list[tuple[int, int, int, int, int]]) -> Path:
    """A file-level trace of writes (ts_ns, pc, ino, offset, len) by pid 7 to /mnt/a.dat on FS_DEV,
    plus one write to another device that must be ignored."""
    rows = [(ts, pc, ino, off, ln, FS_DEV) for ts, pc, ino, off, ln in writes]
    rows.append((1, PC_B, INO, 0, 1 << 20, FS_DEV + 1))
    n = len(rows)
    table = pa.table(
        {
            "ts_ns": pa.array([r[0] for r in rows], pa.uint64()),
            "pid": pa.array([7] * n, pa.uint32()),
            "tid": pa.array([7] * n, pa.uint32()),
            "op": pa.array(["write"] * n).dictionary_encode(),
            "fd": pa.array([3] * n, pa.int32()),
            "dev": pa.array([r[5] for r in rows], pa.uint64()),
            "ino": pa.array([r[2] for r in rows], pa.uint64()),
            "offset": pa.array([r[3] for r in rows], pa.uint64()),
            "len": pa.array([r[4] for r in rows], pa.uint64()),
            "pc": pa.array([r[1] for r in rows], pa.uint64()),
            "flags": pa.array([0] * n, pa.uint32()),
            "path": pa.array([1] * n, pa.uint32()),
            "path2": pa.array([0] * n, pa.uint32()),
        }
    )
    footer = {
        tracemeta.KEY_PATHS: json.dumps({"1": "/mnt/a.dat"}),
        tracemeta.KEY_PCS: json.dumps({str(PC_A): [{"module": "t", "offset": 1, "symbol": "write_a"}]}),
    }
    pq.write_table(table.replace_schema_metadata(footer), path)
    return path


# Journal pages 10..14 (class 1), an extent-tree block at 104..105 (class 5).
META_MAP = [(10, 5, 1), (104, 2, 5)]


def hand_made(tmp_path: Path) -> tuple[biotracer.Capture, Path]:
    cap = capture(
        [
            {"op": OP_WRITE, "ts_ns": 10_000, "sector": 800, "bytes": 4 * PAGE, "hint": 2, "pid": 99},
            {"op": OP_WRITE, "ts_ns": 11_000, "sector": 80, "bytes": PAGE, "flags": F_META},
            {
                "op": OP_WRITE,
                "ts_ns": 12_000,
                "sector": 96,
                "bytes": PAGE,
                "flags": F_PREFLUSH | F_FUA | F_META,
            },
            {"op": OP_WRITE, "ts_ns": 13_000, "sector": 0, "bytes": 0, "flags": F_PREFLUSH},
            {"op": OP_DISCARD, "ts_ns": 14_000, "sector": 800, "bytes": 8 * PAGE},
            {"op": OP_WRITE, "ts_ns": 20_000, "sector": 800, "bytes": 4 * PAGE, "hint": 2},
            {"op": OP_READ, "ts_ns": 9_000, "sector": 400, "bytes": PAGE},  # queued first, logged last
        ],
        [
            {"bio": 0, "ino": INO, "index": 0, "bio_page": 0, "pages": 4},
            {"bio": 1, "ino": 1 << 20, "index": 10, "bio_page": 0, "pages": 1, "sdev": 3},  # the bdev's
            {"bio": 5, "ino": INO, "index": 0, "bio_page": 0, "pages": 4},
        ],
    )
    # pc A writes pages 0-3 before both bios, pc B overwrites pages 2-3 between them
    src = file_trace(
        tmp_path / "t.file.parquet",
        [(5_000, PC_A, INO, 0, 4 * PAGE), (15_000, PC_B, INO, 2 * PAGE, 2 * PAGE)],
    )
    return cap, src


def test_the_block_trace_from_a_capture_gives_data_pages_their_last_writer(tmp_path: Path) -> None:
    cap, src = hand_made(tmp_path)
    out = tmp_path / "block.parquet"
    s = bio_to_blocktrace.build(cap, src, FS_DEV, 1024, META_MAP, out, "test")
    rows = [
        (r["ts_ns"], r["op"], r["lpn"], r["pages"], r["pc"], r["meta"], r["hint"], r["file"], r["pid"])
        for r in pq.read_table(out).to_pylist()
    ]
    assert rows == [
        (0, 2, 50, 1, 0, 0, 0, 0, 0),  # the read, first by time
        (1_000, 0, 100, 4, PC_A, 0, 2, 1, 7),  # all of the file written by A before the bio
        (2_000, 0, 10, 1, 0, 1, 0, 0, 0),  # journal: no writer
        (3_000, 3, 0, 0, 0, 0, 0, 0, 0),  # the commit block's preflush...
        (3_000, 0, 12, 1, 0, 1, 0, 0, 0),  # ... then the commit block
        (4_000, 3, 0, 0, 0, 0, 0, 0, 0),  # an empty flush
        (5_000, 1, 100, 4, 0, 0, 0, 0, 0),  # a discard cut at the extent-tree block
        (5_000, 1, 104, 2, 0, 5, 0, 0, 0),
        (5_000, 1, 106, 2, 0, 0, 0, 0, 0),
        (11_000, 0, 100, 2, PC_A, 0, 2, 1, 7),  # the overwrite: pages 0-1 still A's...
        (11_000, 0, 102, 2, PC_B, 0, 2, 1, 7),  # ... 2-3 B's, the last writer before the bio
    ]
    a = s["attribution"]
    assert (a["data_pages"], a["file_pages"], a["attributed_pages"], a["rate"]) == (8, 8, 8, 1.0)
    assert (s["write_pages"], s["trim_pages"], s["flushes"], s["reads"]) == (10, 8, 2, 1)
    meta = tracemeta.footer(out)
    assert json.loads(meta[tracemeta.KEY_FILES]) == {"1": "/mnt/a.dat"}
    assert str(PC_A) in json.loads(meta[tracemeta.KEY_PCS]) and meta[tracemeta.KEY_CAPACITY] == "1024"
    info = api.info(str(out))  # the engine reads it
    assert info["writes"]["pages"] == 10 and info["trims"]["pages"] == 8 and info["flushes"] == 2
    # the same bios through blkparse text and the engine's importer: the same pages and classes
    text = tmp_path / "b.blkparse"
    assert biotracer.to_blkparse(cap, text) == 7
    imported = api.import_trace("blkparse", str(text), str(tmp_path / "i.parquet"), capacity_pages=1024,
                                meta_map=META_MAP)  # fmt: skip
    assert (imported["write_pages"], imported["trim_pages"], imported["flushes"]) == (10, 8, 2)
    mine = {(r[1], r[2], r[3], r[5]) for r in rows if r[1] != 0}
    theirs = {
        (r["op"], r["lpn"], r["pages"], r["meta"]) for r in pq.read_table(tmp_path / "i.parquet").to_pylist()
    }
    assert mine == {x for x in theirs if x[0] != 0}


def test_a_set_hint_row_whose_len_is_beyond_int64_is_no_write(tmp_path: Path) -> None:
    """A set_hint row keeps the call's raw 64-bit argument in ``len``: the block trace is built as
    without it."""
    cap, src = hand_made(tmp_path)
    plain = tmp_path / "plain.parquet"
    bio_to_blocktrace.build(cap, src, FS_DEV, 1024, META_MAP, plain, "test")
    table = pq.read_table(src)
    hint = {**table.slice(0, 1).to_pylist()[0], "op": "set_hint", "offset": 2, "len": (1 << 63) | 2}
    pq.write_table(pa.concat_tables([table, pa.Table.from_pylist([hint], schema=table.schema)]), src)
    out = tmp_path / "block.parquet"
    bio_to_blocktrace.build(cap, src, FS_DEV, 1024, META_MAP, out, "test")
    assert pq.read_table(out).equals(pq.read_table(plain))


def test_the_aged_state_leads_the_trace(tmp_path: Path) -> None:
    cap, src = hand_made(tmp_path)
    out = tmp_path / "aged.parquet"
    s = bio_to_blocktrace.build(
        cap, src, FS_DEV, 1024, META_MAP, out, "test", aged_extents=[(0, 8), (20, 100)]
    )
    head = pq.read_table(out).to_pylist()[:3]
    assert [(r["ts_ns"], r["op"], r["lpn"], r["pages"], r["pc"]) for r in head[:2]] == [
        (0, 0, 0, 8, 0),
        (0, 0, 20, 100, 0),
    ]
    assert head[2]["op"] == 2
    meta = tracemeta.footer(out)
    assert (meta[tracemeta.KEY_AGED_ROWS], meta[tracemeta.KEY_AGED_PAGES]) == ("2", "108")
    assert s["aged_pages"] == 108 and api.info(str(out))["aged_pages"] == 108
    # a trace imported from tracefs gets the same head
    plain = tmp_path / "plain.parquet"
    bio_to_blocktrace.build(cap, src, FS_DEV, 1024, META_MAP, plain, "test")
    bio_to_blocktrace.prepend_aged(plain, [(0, 8), (20, 100)])
    assert pq.read_table(plain).to_pylist() == pq.read_table(out).to_pylist()
    assert tracemeta.aged_pages(plain) == 108


def test_last_writer_before_the_bio_wins() -> None:
    key = np.array([5, 5, 5, 6], dtype=np.uint64)
    w = bio_to_blocktrace.Writes(
        key, np.array([100, 200, 300, 2_000_000], np.uint64), np.array([1, 2, 3, 4], np.uint64),
        np.array([11, 12, 13, 14], np.uint32), np.zeros(4, np.uint32),
    )  # fmt: skip
    qkey = np.array([5, 5, 5, 5, 6, 6, 7], dtype=np.uint64)
    qts = np.array([50, 100, 250, 10_000, 1_500_000, 900_000, 1_000], dtype=np.uint64)
    found, late = bio_to_blocktrace.last_writer(qkey, qts, w, late_ns=1_000_000)
    # before any write: the first one, late (within 1 ms); a write at the bio's time counts as
    # before; the last of several; a write too far after: none; another page: none
    assert found.tolist() == [0, 0, 1, 2, 3, -1, -1]
    assert late.tolist() == [True, False, False, False, True, False, False]


def test_a_capture_file_reads_back(tmp_path: Path) -> None:
    cap, _ = hand_made(tmp_path)
    head = np.zeros(1, dtype=biotracer.HEADER_DTYPE)
    head["magic"], head["version"], head["record_bytes"], head["dev"] = b"PCBIO", 1, 64, SDEV
    end = np.zeros(1, dtype=biotracer.END_DTYPE)
    end["kind"], end["bios"], end["runs"], end["lost"] = biotracer.KIND_END, 7, 3, 2
    path = tmp_path / "c.pcbio"
    with open(path, "wb") as f:
        for part in (head, cap.bios, cap.runs, end):
            f.write(part.tobytes())
    back = biotracer.read(path)
    assert back.bios.tobytes() == cap.bios.tobytes() and back.runs.tobytes() == cap.runs.tobytes()
    assert back.dev == SDEV and back.end is not None and back.end["lost"] == 2 and back.warnings == []
    with open(path, "r+b") as f:
        f.truncate(path.stat().st_size - 64)
    assert biotracer.read(path).warnings, "no end record: the loader did not stop cleanly"
    path.write_bytes(b"x" * 64)
    with pytest.raises(Exception, match="not a pcbio capture"):
        biotracer.read(path)


def test_without_root_bpf_or_btf_the_reason_is_one_line(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    from pcstream.errors import Failure, UsageError

    monkeypatch.setattr(os, "geteuid", lambda: 1000)
    assert biotracer.unavailable() == "the BPF capture needs root"
    monkeypatch.setattr(os, "geteuid", lambda: 0)
    monkeypatch.setattr(biotracer, "BTF", tmp_path / "no-btf")
    assert "the kernel has no BTF" in (biotracer.unavailable() or "")
    (tmp_path / "btf").write_bytes(b"")
    monkeypatch.setattr(biotracer, "BTF", tmp_path / "btf")
    monkeypatch.setattr(biotracer, "BINARY", tmp_path / "pcbio-capture")
    why = biotracer.unavailable() or ""
    assert "not built" in why and "make bpf" in why
    # auto falls back to tracefs and says why; asking for bpf is that one-line error
    assert loopdev.choose_capture("auto") == ("tracefs", why)
    assert loopdev.choose_capture("tracefs") == ("tracefs", None)
    with pytest.raises(Failure, match="make bpf") as err:
        loopdev.choose_capture("bpf")
    assert "\n" not in str(err.value)
    monkeypatch.setenv(loopdev.CAPTURE_ENV, "perf")
    with pytest.raises(UsageError, match="use one of auto, bpf, tracefs"):
        loopdev.choose_capture()
    assert loopdev.real_mount_opts("nodiscard") == "nodiscard,noatime"
    assert loopdev.real_mount_opts("discard,relatime") == "discard,relatime"
    assert loopdev.real_mount_opts(None) == "discard,noatime"


# --------------------------------------------------------------------------- lifetimes


def block_trace(path: Path, rows: list[tuple[int, int, int, int, int]], aged_rows: int) -> Path:
    """A block trace of (op, lpn, pages, pc, meta) rows; the first ``aged_rows`` are its aged state."""
    n = len(rows)
    cols: dict[str, Any] = {
        f.name: np.zeros(n, dtype=bio_to_blocktrace.COLUMN_DTYPES[f.name]) for f in bio_to_blocktrace.SCHEMA
    }
    for i, (op, lpn, pages, pc, meta) in enumerate(rows):
        cols["op"][i], cols["lpn"][i], cols["pages"][i], cols["pc"][i], cols["meta"][i] = (
            op,
            lpn,
            pages,
            pc,
            meta,
        )
    footer = {tracemeta.KEY_CAPACITY: "64", tracemeta.KEY_AGED_ROWS: str(aged_rows),
              tracemeta.KEY_AGED_PAGES: str(sum(r[2] for r in rows[:aged_rows]))}  # fmt: skip
    pq.write_table(pa.table(cols, schema=bio_to_blocktrace.SCHEMA).replace_schema_metadata(footer), path)
    return path


@pytest.mark.parametrize(
    ("batch_rows", "max_events"), [(2, 1 << 22), (3, 1 << 22), (1 << 16, 1 << 22), (1 << 16, 3)]
)
def test_page_lifetimes_on_a_hand_made_trace(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, batch_rows: int, max_events: int
) -> None:
    monkeypatch.setattr(validation, "MAX_EVENTS", max_events)
    trace = block_trace(
        tmp_path / "l.parquet",
        [
            (0, 0, 10, 0, 0),  # the aged state: no lifetimes, no host time
            (0, 0, 2, 1, 0),  # pc 1 writes pages 0, 1 at times 0, 1 (over aged pages: no samples)
            (0, 5, 1, 2, 0),  # pc 2 writes page 5 at 2
            (0, 0, 1, 2, 0),  # pc 2 overwrites page 0 at 3: pc 1's page lived 3 - 0 = 3
            (
                1,
                0,
                6,
                0,
                0,
            ),  # trim at time 4: page 0 (pc 2, 3) lived 1, page 1 (pc 1, 1) 3, page 5 (pc 2, 2) 2
            (3, 0, 0, 0, 0),  # a flush
            (0, 1, 1, 1, 0),  # pc 1 writes page 1 again at 4: never invalidated
            (0, 7, 2, 3, 1),  # pc 3, journal pages 7, 8 at 5, 6: never invalidated
        ],
        aged_rows=1,
    )
    tf = trace_figures(str(trace), batch_rows=batch_rows)
    assert tf.host_pages == 7 and tf.trim_pages == 6 and tf.flushes == 1 and tf.write_requests == 5
    assert tf.meta_pages.tolist()[:2] == [5, 2]
    assert tf.lifetimes(1) == {"pages": 3, "writes": 2, "died": 2, "never": 1, "median": 3.0, "p90": 3.0}
    assert tf.lifetimes(2) == {"pages": 2, "writes": 2, "died": 2, "never": 0, "median": 1.5, "p90": 1.9}
    assert tf.lifetimes(3) == {"pages": 2, "writes": 1, "died": 0, "never": 2, "median": None, "p90": None}


def test_lifetime_rows_rank_the_real_trace_s_pcs_and_judge_the_medians() -> None:
    def figures(
        pages: dict[int, int], samples: list[tuple[int, int]], writes: int = validation.MIN_PC_WRITES
    ) -> validation.TraceFigures:
        tf = validation.TraceFigures(pc_pages=pages, pc_writes=dict.fromkeys(pages, writes))
        samples.sort()
        tf.samples_pc = np.array([p for p, _ in samples], dtype=np.uint64)
        tf.samples_life = np.array([life for _, life in samples], dtype=np.int64)
        return tf

    real = figures({0: 99, 5: 10, 6: 8, 7: 6, 8: 1}, [(5, 100), (5, 100), (6, 40), (8, 3)])
    model = figures({5: 10, 6: 8, 7: 6}, [(5, 120), (5, 140), (6, 80)])
    rows = validation.lifetime_rows(model, real, {5: "five"}, top=4)
    assert [r["pc"] for r in rows] == [5, 6, 7, 8]  # by the real pages, pc 0 left out
    assert rows[0]["name"] == "five" and rows[1]["name"] == "PC 6"
    assert rows[0]["diff"] == pytest.approx(0.3) and rows[0]["ok"] is False  # 130 against 100
    assert rows[1]["diff"] == pytest.approx(1.0) and rows[1]["ok"] is False
    assert rows[2]["diff"] is None and rows[2]["ok"] is None  # no page died in either trace
    assert rows[3]["ok"] is False  # died in the real trace only
    near = figures({5: 10}, [(5, 110), (5, 120)])
    assert validation.lifetime_rows(near, real, top=1)[0]["ok"] is True  # +15 %
    # A PC the real trace wrote in fewer than MIN_PC_WRITES requests is shown, not judged.
    few = figures({0: 99, 5: 10, 6: 8}, [(5, 100), (6, 40)], writes=validation.MIN_PC_WRITES - 1)
    rows = validation.lifetime_rows(model, few, top=2)
    assert [(r["target"], r["ok"]) for r in rows] == [(None, None), (None, None)]
    assert rows[0]["diff"] == pytest.approx(0.3)  # the difference is still reported


# --------------------------------------------------------------------------- aging replay


def test_the_aging_plan_replays_under_the_mount_point(tmp_path: Path) -> None:
    plan = [
        {"op": "create", "path": "aged/d000/d001/f0000000.dat", "bytes": 5000},
        {"op": "create", "path": "aged/d002/d000/f0000001.dat", "bytes": 3 << 20},
        {"op": "create", "path": "aged/d000/d001/f0000002.dat", "bytes": 1},
        {"op": "delete", "path": "aged/d000/d001/f0000000.dat"},
        {"op": "sync"},
    ]
    counts = agereplay.replay(plan, tmp_path)
    assert (counts["creates"], counts["deletes"], counts["syncs"]) == (3, 1, 1)
    assert counts["bytes_written"] == (3 << 20) + 5001
    files = sorted(str(p.relative_to(tmp_path)) for p in tmp_path.rglob("*.dat"))
    assert files == ["aged/d000/d001/f0000002.dat", "aged/d002/d000/f0000001.dat"]
    assert (tmp_path / files[1]).stat().st_size == 3 << 20
    with pytest.raises(Exception, match="not inside"):
        agereplay.replay([{"op": "create", "path": "../escape", "bytes": 1}], tmp_path / "aged")
    # the engine's plan has the contract replay reads
    real = api.aging_plan(61_248, 0.5, seed=3, churn=1)
    assert {op["op"] for op in real} == {"create", "delete", "sync"}


def test_aged_state_from_dumpe2fs_and_the_image(tmp_path: Path) -> None:
    text = "Group 0: (Blocks 0-31)\n  Free blocks: 8-15, 20\nGroup 1: (Blocks 32-63)\n  Free blocks: 40-63\n"
    assert agereplay.free_extents(text) == [(8, 8), (20, 1), (40, 24)]
    image = tmp_path / "img"
    with open(image, "wb") as f:  # data at pages 10-11 and 50 (held although free), holes elsewhere
        f.truncate(64 * PAGE)
        f.seek(10 * PAGE)
        f.write(b"x" * 2 * PAGE)
        f.seek(50 * PAGE)
        f.write(b"y" * PAGE)
    state = agereplay.aged_state(text, image, 64)
    if not state["image_extents"]:
        pytest.skip("the file system of the test directory cannot report holes")
    assert state["used_blocks"] == 64 - 33 and state["stale_blocks"] == 3
    assert state["extents"] == [(0, 8), (10, 2), (16, 4), (21, 19), (50, 1)]
    assert state["pages"] == 34
    assert agereplay.runs(np.array([1, 1, 0, 1], dtype=bool)) == [(0, 2), (3, 1)]


# --------------------------------------------------------------------------- real runs (root, BPF)


def _skip_reason() -> str | None:
    if not sys.platform.startswith("linux") or os.geteuid() != 0:
        return "needs root on Linux"
    if not SHIM_SO.is_file():
        return "the record shim is not built"
    if shutil.which("cc") is None:
        return "no C compiler"
    if not Path("/dev/loop-control").exists() or any(shutil.which(t) is None for t in loopdev.TOOLS):
        return "no loop devices or e2fsprogs"
    return biotracer.unavailable()


SKIP = _skip_reason()
needs_bpf = pytest.mark.skipif(SKIP is not None, reason=SKIP or "")

# Two files, two call paths (write_log, write_data: the same innermost frames), hints 2 and 4;
# then the data path overwrites the start of the log file. Prints both inode numbers.
TWO_PATHS_C = r"""
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
static char buf[65536];
__attribute__((noinline)) static void put(int fd, off_t off) {
    if (pwrite(fd, buf, sizeof buf, off) != (ssize_t)sizeof buf) _exit(3);
}
__attribute__((noinline)) void write_log(int fd, int n, off_t at) {
    for (int i = 0; i < n; i++) put(fd, at + (off_t)i * (off_t)sizeof buf);
}
__attribute__((noinline)) void write_data(int fd, int n, off_t at) {
    for (int i = 0; i < n; i++) put(fd, at + (off_t)i * (off_t)sizeof buf);
}
int main(void) {
    memset(buf, 'x', sizeof buf);
    int a = open("log.dat", O_CREAT | O_WRONLY | O_TRUNC, 0644);
    int b = open("data.dat", O_CREAT | O_WRONLY | O_TRUNC, 0644);
    uint64_t short_life = 2, long_life = 4;
    if (a < 0 || b < 0) return 2;
    if (fcntl(a, F_SET_RW_HINT, &short_life) || fcntl(b, F_SET_RW_HINT, &long_life)) return 2;
    write_log(a, 32, 0);
    write_data(b, 48, 0);
    fsync(a);
    fsync(b);
    write_data(a, 4, 0);
    fsync(a);
    struct stat sa, sb;
    fstat(a, &sa);
    fstat(b, &sb);
    printf("%lu %lu\n", (unsigned long)sa.st_ino, (unsigned long)sb.st_ino);
    close(a);
    close(b);
    return 0;
}
"""


@pytest.fixture(scope="module")
def two_paths(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """record --block of the two-path program: its outputs, inodes and the writes' PCs."""
    work = tmp_path_factory.mktemp("bio")
    src, exe = work / "two.c", work / "two"
    src.write_text(TWO_PATHS_C)
    subprocess.run(["cc", "-O1", "-g", "-fno-omit-frame-pointer", "-o", str(exe), str(src)], check=True)
    out = work / "run"
    proc = subprocess.run(
        [sys.executable, "-m", "pcstream", "record", "--block", "--capacity", "64MiB", "-o", str(out), "--",
         str(exe)],
        cwd=work, capture_output=True, text=True, timeout=300,
        env={**os.environ, loopdev.CAPTURE_ENV: "bpf"},
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    log_ino, data_ino = map(int, proc.stdout.split())
    layout = json.loads((out / "layout.json").read_text())
    files = pq.read_table(out / "files.parquet").to_pylist()
    # each file's writers in order: the log file's by write_log, then by write_data's second call
    pcs = {name: [r["pc"] for r in files if r["op"] == "write" and r["ino"] == ino]
           for name, ino in (("log", log_ino), ("data", data_ino))}  # fmt: skip
    return {"out": out, "log": log_ino, "data": data_ino, "layout": layout, "pcs": pcs, "stderr": proc.stderr}


@needs_bpf
def test_bpf_sees_each_file_as_its_own_bios_with_its_hint_and_inode(two_paths: dict[str, Any]) -> None:
    cap = biotracer.read(two_paths["out"] / "block.pcbio")
    assert cap.end is not None and cap.end["lost"] == 0
    runs = cap.runs[cap.runs["sdev"] == np.uint32(cap.dev)]
    by_ino: dict[int, set[int]] = {}
    pages: dict[int, int] = {}
    for r in runs:
        bio = cap.bios[int(r["bio"])]
        assert int(bio["op"]) == biotracer.OP_WRITE
        by_ino.setdefault(int(r["ino"]), set()).add(int(bio["hint"]))
        pages[int(r["ino"])] = pages.get(int(r["ino"]), 0) + int(r["pages"])
    assert by_ino[two_paths["log"]] == {2} and by_ino[two_paths["data"]] == {4}
    assert pages[two_paths["log"]] == 512 + 64 and pages[two_paths["data"]] == 768
    # no bio mixes the two files
    for b in set(runs["bio"].tolist()):
        assert len(set(runs["ino"][runs["bio"] == b].tolist())) == 1


@needs_bpf
def test_both_call_paths_are_the_pcs_of_their_data_pages(two_paths: dict[str, Any]) -> None:
    pcs = two_paths["pcs"]
    log_pc, over_pc, data_pc = pcs["log"][0], pcs["log"][-1], pcs["data"][0]
    # write_log and write_data are two PCs; write_data called from another line of main a third
    assert set(pcs["data"]) == {data_pc} and set(pcs["log"]) == {log_pc, over_pc}, pcs
    assert len({log_pc, over_pc, data_pc}) == 3, pcs
    rows = pq.read_table(two_paths["out"] / "block.parquet").to_pylist()
    data = [r for r in rows if r["op"] == 0 and r["meta"] == 0]
    names = json.loads(tracemeta.footer(two_paths["out"] / "block.parquet")[tracemeta.KEY_FILES])
    fid = {Path(p).name: int(i) for i, p in names.items()}
    got = {"log.dat": {}, "data.dat": {}}
    for r in data:
        name = next(n for n, i in fid.items() if i == r["file"])
        got[name][r["pc"]] = got[name].get(r["pc"], 0) + r["pages"]
    # the data file: its path's PC on >= 95 % of its pages; the log file: 512 pages of write_log,
    # then its first 64 pages again, overwritten by write_data (last writer before that bio)
    assert got["data.dat"].get(data_pc, 0) >= 0.95 * 768, got
    assert got["log.dat"].get(log_pc, 0) >= 0.95 * 512 and got["log.dat"].get(over_pc, 0) == 64, got
    log_rows = [r for r in data if r["file"] == fid["log.dat"]]
    last = {}
    for r in log_rows:  # in time order: the overwrite comes last for pages 0-63 of the file
        for lpn in range(r["lpn"], r["lpn"] + r["pages"]):
            last[lpn] = r["pc"]
    assert sum(1 for pc in last.values() if pc == over_pc) == 64
    hints = (
        {r["hint"] for r in data if r["file"] == fid["log.dat"]},
        {r["hint"] for r in data if r["file"] == fid["data.dat"]},
    )
    assert hints == ({2}, {4})
    attribution = two_paths["layout"]["attribution"]
    assert attribution["rate"] >= 0.95 and two_paths["layout"]["capture"] == "bpf"
    assert "attributed to a PC" in two_paths["stderr"]


@needs_bpf
def test_record_block_on_an_aged_file_system(tmp_path: Path) -> None:
    out = tmp_path / "aged"
    status, s = compose.record_block(
        ["/bin/sh", "-c", "head -c 1048576 /dev/zero > f && sync"], out,
        RecordOptions(capacity=16384, age=0.7, age_seed=4, age_churn=1, mount_opts="nodiscard",
                      coalesce=False),
    )  # fmt: skip
    assert status == 0
    aged = s["aged"]
    assert aged["creates"] > 0 and aged["deletes"] > 0 and s["mount_opts"] == "nodiscard,noatime"
    meta = tracemeta.footer(out / "block.parquet")
    assert int(meta[tracemeta.KEY_AGED_PAGES]) == aged["pages"] >= aged["used_blocks"]
    assert aged["stale_blocks"] > 0, "nodiscard: the churn's deleted blocks stay on the device"
    # the model's plan, so the model's share in use (measured on 64 MiB: real 0.684, model 0.709)
    model = api.map_trace(str(out / "files.parquet"), str(tmp_path / "m.parquet"),
                          MapOptions(capacity=16384, mount_opts="nodiscard", device=s["fs_dev"],
                                     age=0.7, age_seed=4, age_churn=1))  # fmt: skip
    assert abs(aged["used_share"] - 0.7) <= 0.03
    assert abs(model["aged"]["used_share"] - aged["used_share"]) <= 0.03


# --------------------------------------------------------------------------- memory of a big run

BIG_BIO_PAGES = 256  # 1 MiB bios, as ext4's write-back makes them
BIG_PAGES = 3 << 20  # 12 GiB written: 3 M pages, each written by the shim once
# Growth of the converting process's peak (VmHWM) over its state after the imports: joining all
# pages at once grew it by 978 MB; chunk by chunk it grows by 154 MB (docs/PERFORMANCE.md).
BIG_GROWTH_MB = 250
GROWTH_SCRIPT = """
import json, sys
from pathlib import Path
from pcstream import api
from pcstream.groundtruth import bio_to_blocktrace, biotracer

def hwm_mb():
    with open("/proc/self/status") as f:
        return next(int(line.split()[1]) for line in f if line.startswith("VmHWM")) >> 10

api.engine()
d, fs_dev, pages = Path(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
base = hwm_mb()
cap = biotracer.read(d / "big.pcbio")
s = bio_to_blocktrace.build(cap, d / "big.files.parquet", fs_dev, pages, [], d / "big.parquet", "test")
biotracer.to_blkparse(cap, d / "big.blkparse")
print(json.dumps({"grew_mb": hwm_mb() - base, "summary": s}))
"""


def big_run(tmp_path: Path) -> None:
    """A capture of BIG_PAGES pages in 1 MiB bios over 8 files, and a file trace whose writes
    cover every page, half a bio by PC_A then half by PC_B."""
    n = BIG_PAGES // BIG_BIO_PAGES
    i = np.arange(n, dtype=np.uint64)
    bios = np.zeros(n, dtype=biotracer.BIO_DTYPE)
    bios["kind"], bios["op"], bios["dev"], bios["bytes"] = (
        biotracer.KIND_BIO,
        OP_WRITE,
        SDEV,
        BIG_BIO_PAGES * PAGE,
    )
    bios["ts_ns"], bios["sector"], bios["hint"] = 1_000_000 + i * 10_000, i * BIG_BIO_PAGES * 8, i % 4
    runs = np.zeros(n, dtype=biotracer.RUN_DTYPE)
    runs["kind"], runs["sdev"], runs["bio"], runs["pages"] = biotracer.KIND_RUN, SDEV, i, BIG_BIO_PAGES
    runs["ino"], runs["index"] = INO + i % 8, (i // 8) * BIG_BIO_PAGES
    head = np.zeros(1, dtype=biotracer.HEADER_DTYPE)
    head["magic"], head["version"], head["record_bytes"], head["dev"] = b"PCBIO", 1, 64, SDEV
    end = np.zeros(1, dtype=biotracer.END_DTYPE)
    end["kind"], end["bios"], end["runs"] = biotracer.KIND_END, n, n
    with open(tmp_path / "big.pcbio", "wb") as f:
        for part in (head, bios, runs, end):
            f.write(part.tobytes())
    half = BIG_BIO_PAGES // 2 * PAGE
    writes = [
        (
            int(bios["ts_ns"][b]) - 5_000 + h,
            (PC_A, PC_B)[h],
            INO + b % 8,
            (b // 8) * BIG_BIO_PAGES * PAGE + h * half,
            half,
        )
        for b in range(n)
        for h in (0, 1)
    ]
    file_trace(tmp_path / "big.files.parquet", writes)


def test_the_block_trace_of_millions_of_pages_is_built_in_bounded_memory(tmp_path: Path) -> None:
    """The conversion of a 12 GiB run (3 M pages) grows its process by less than BIG_GROWTH_MB,
    and every data page gets its writer: two rows a bio, one per PC."""
    big_run(tmp_path)
    proc = subprocess.run(
        [sys.executable, "-c", GROWTH_SCRIPT, str(tmp_path), str(FS_DEV), str(BIG_PAGES)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    got = json.loads(proc.stdout.splitlines()[-1])
    s, n = got["summary"], BIG_PAGES // BIG_BIO_PAGES
    assert (s["writes"], s["write_pages"], s["bios"]) == (2 * n, BIG_PAGES, n)
    a = s["attribution"]
    assert (a["data_pages"], a["attributed_pages"], a["shim_write_pages"]) == (BIG_PAGES,) * 3
    t = pq.read_table(tmp_path / "big.parquet", columns=["pc", "file", "pages"])
    assert t.column("pc").to_pylist()[:4] == [PC_A, PC_B, PC_A, PC_B]
    assert sorted(set(t.column("file").to_pylist())) == list(range(1, 9))
    assert got["grew_mb"] < BIG_GROWTH_MB, f"the conversion grew its process by {got['grew_mb']} MB"
