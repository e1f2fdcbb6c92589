"""Every input is opened by its type (docs/HARDENING.md): a FIFO, a device, a directory or a
socket given where pcstream reads a file is refused at once (status 3; an SSD config: 4) with one
line naming the file and what it is; small text inputs are read up to their size limit; numbers
and nesting that used to end in a traceback end in one line; ``info`` is linear in the PCs of a
trace's ``pcstream.pcs`` footer."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import socket
import stat
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from pcstream import api, tracemeta
from support import assert_user_error, invoke, run_module

USAGE, INPUT, CONFIG = 2, 3, 4
FORMATS = ("blkparse", "msr", "alibaba", "tencent", "fio", "mqsim")
# A refusal must come at once; a command blocked on a FIFO is released after this long.
PATIENCE_S = 20.0


@pytest.fixture
def nodes() -> Iterator[dict[str, Path]]:
    """Files of every other type, by the name a message gives them, and a symbolic link to a
    FIFO. In a short directory of its own: a socket's path is limited to 108 bytes."""
    base = Path(tempfile.mkdtemp(prefix="pcs-in-", dir="/tmp"))
    found = {"a FIFO": base / "fifo.parquet", "a directory": base / "dir.parquet"}
    os.mkfifo(found["a FIFO"])
    found["a directory"].mkdir()
    found["a character device"] = Path("/dev/zero")
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.bind(str(base / "sock.parquet"))
    found["a socket"] = base / "sock.parquet"
    if os.geteuid() == 0:  # never opened: refused by its type (a loop device's numbers)
        os.mknod(base / "blk.parquet", stat.S_IFBLK | 0o600, os.makedev(7, 0))
        found["a block device"] = base / "blk.parquet"
    (base / "link.parquet").symlink_to(found["a FIFO"])
    found["a FIFO (through a link)"] = base / "link.parquet"
    try:
        yield found
    finally:
        sock.close()
        shutil.rmtree(base)


@contextlib.contextmanager
def released_if_blocked(fifos: list[Path]) -> Iterator[list[bool]]:
    """Opens each FIFO for writing after PATIENCE_S, which releases a reader blocked on it (so a
    blocked command fails the test instead of hanging it); ``[True]`` if it had to."""
    blocked = [False]
    done = threading.Event()

    def watch() -> None:
        if done.wait(PATIENCE_S):
            return
        for fifo in fifos:
            with contextlib.suppress(OSError):  # ENXIO: no reader waits on it
                os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
                blocked[0] = True

    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    try:
        yield blocked
    finally:
        done.set()
        watcher.join()


def small_trace(path: Path) -> Path:
    api.gen("uniform", str(path), {"capacity_pages": "4096", "writes": "2000", "seed": "1"})
    return path


def reading_commands(node: Path, tmp_path: Path) -> list[tuple[str, ...]]:
    """Every command that reads ``node`` as an input file (not the SSD config)."""
    out = str(tmp_path / "out.parquet")
    trace = str(small_trace(tmp_path / "t.parquet"))
    x = str(node)
    return [
        ("info", x),
        ("simulate", x, "--policy", "baseline", "--ssd", "small", "--no-timing"),
        ("compare", x, "--policies", "baseline", "--ssd", "small", "--no-timing"),
        (
            "compare",
            trace,
            x,
            "--policies",
            "baseline",
            "--ssd",
            "small",
            "--no-timing",
            "--report",
            str(tmp_path / "r"),
        ),
        ("map", x, "-o", out),
        *(("import", fmt, x, "-o", out) for fmt in FORMATS),
        ("gen", "mix", "--mix", x, "--capacity-pages", "4096", "--writes", "100", "-o", out),
        ("run", "--table", x, "--", "true"),
        ("validate", x, trace),
    ]


def test_inputs_that_are_not_regular_files_are_refused_at_once(
    nodes: dict[str, Path], tmp_path: Path
) -> None:
    fifos = [p for kind, p in nodes.items() if "FIFO" in kind]
    for kind, node in nodes.items():
        what = kind.split(" (")[0]
        for args in reading_commands(node, tmp_path):
            with released_if_blocked(fifos) as blocked:
                start = time.monotonic()
                run = invoke(*args)
                took = time.monotonic() - start
            assert not blocked[0], f"{args} blocked on {node}"
            line = assert_user_error(run, INPUT, str(node), f"is {what}, not a regular file")
            assert took < 5, f"{args}: {took:.1f} s"
            assert "out.parquet" not in os.listdir(tmp_path), line
    assert stat.S_ISFIFO(nodes["a FIFO"].lstat().st_mode)


def test_a_bad_ssd_file_is_a_config_error(nodes: dict[str, Path], tmp_path: Path) -> None:
    trace = small_trace(tmp_path / "t.parquet")
    big = tmp_path / "big.toml"
    big.write_text("# padding\n" * ((1 << 20) // 10 + 1))
    bad = tmp_path / "bad.toml"
    bad.write_text("[geometry\n")
    cases = {**{k: (p, f"is {k.split(' (')[0]}") for k, p in nodes.items()}}
    cases["missing"] = (tmp_path / "none.toml", "no such file")
    cases["too big"] = (big, f"{big.stat().st_size} bytes, over the limit of {1 << 20} bytes")
    cases["unparsable"] = (bad, "bad.toml")
    fifos = [p for kind, p in nodes.items() if "FIFO" in kind]
    for _, (ssd, says) in cases.items():
        for args in (
            ("simulate", trace, "--policy", "baseline", "--ssd", ssd, "--no-timing"),
            ("compare", trace, "--policies", "baseline", "--ssd", ssd, "--no-timing"),
            ("bench", "--ssd", ssd, "--pages", "1000"),
        ):
            with released_if_blocked(fifos) as blocked:
                run = invoke(*args)
            assert not blocked[0], f"{args} blocked"
            assert_user_error(run, CONFIG, str(ssd), says)
    # the library's callers too: the engine refuses them by itself
    with pytest.raises(Exception, match="over the limit"):
        api.ssd_summary(str(big))
    with released_if_blocked(fifos) as blocked, pytest.raises(Exception, match="is a FIFO"):
        api.ssd_summary(str(nodes["a FIFO"]))
    assert not blocked[0]


def test_small_inputs_are_read_up_to_their_limit(tmp_path: Path) -> None:
    out = tmp_path / "out.parquet"
    spec = tmp_path / "mix.json"
    spec.write_text(" " * ((1 << 20) + 1))
    run = invoke("gen", "mix", "--mix", spec, "--capacity-pages", "4096", "--writes", "100", "-o", out)
    assert_user_error(run, INPUT, str(spec), f"{(1 << 20) + 1} bytes, over the limit of {1 << 20} bytes")
    # a sparse table of 256 MiB + 1 byte: refused by its size, never read
    table = tmp_path / "t.json"
    with open(table, "wb") as handle:
        handle.truncate((256 << 20) + 1)
    start = time.monotonic()
    run = invoke("run", "--table", table, "--", "true")
    assert_user_error(run, INPUT, str(table), f"over the limit of {256 << 20} bytes")
    assert time.monotonic() - start < 5
    trace = small_trace(tmp_path / "s.parquet")
    run = invoke("simulate", trace, "--policy", "pcstream", "--ssd", "small", "--no-timing", "--table", table)
    assert_user_error(run, INPUT, str(table), "over the limit")
    assert table.stat().st_size == (256 << 20) + 1  # left as it was
    assert not out.exists()
    assert api.input_limit("mix_spec") == 1 << 20 and api.input_limit("pc_table") == 256 << 20


@pytest.mark.parametrize("fmt", FORMATS)
def test_a_capacity_beyond_64_bits_is_one_line(fmt: str, tmp_path: Path) -> None:
    src = tmp_path / "in.txt"
    src.write_text("x\n")
    out = tmp_path / "out.parquet"
    run = invoke("import", fmt, src, "-o", out, "--capacity", "1000000000000000000000000000000GiB")
    assert_user_error(run, USAGE, "--capacity", "too large")
    assert not out.exists()
    with pytest.raises(Exception, match="capacity_pages"):
        api.import_trace(fmt, str(src), str(out), capacity_pages=1 << 70)


def test_a_deeply_nested_table_is_one_line(tmp_path: Path) -> None:
    table = tmp_path / "deep.json"
    table.write_text("[" * 100_000 + "]" * 100_000)
    run = invoke("run", "--table", table, "--", "true")
    assert_user_error(run, INPUT, str(table), "nested too deeply")
    nested = tmp_path / "nested.json"  # passes Python's parser; the engine's stops it
    nested.write_text('{"policy": "pcstream", "pcs": ' + "[" * 500 + "]" * 500 + "}")
    run = invoke("run", "--table", nested, "--", "true")
    assert_user_error(run, INPUT, str(nested))


def file_trace_with_pcs(path: Path, n: int) -> Path:
    """A file-level trace of ``n`` writes, one per PC, each PC with its own frame between shared
    ones (libc's write, one of 50 layers, main), as ``record`` writes them."""
    pcs = {
        str(1000 + i): [
            {"module": "/usr/lib/libc.so.6", "module_id": "01", "offset": 0x11A0, "symbol": "write"},
            {"module": "/usr/bin/app", "module_id": "02", "offset": 0x4000 + 16 * i, "symbol": f"writer_{i}"},
            {
                "module": "/usr/bin/app",
                "module_id": "02",
                "offset": 0x2000 + i % 50,
                "symbol": f"layer_{i % 50}",
            },
            {"module": "/usr/bin/app", "module_id": "02", "offset": 0x1040, "symbol": "main"},
        ]
        for i in range(n)
    }
    op = pa.array(["write"] * n).dictionary_encode()
    u64, u32 = pa.uint64(), pa.uint32()
    columns = {
        "ts_ns": pa.array([1000 * i for i in range(n)], u64),
        "pid": pa.array([7] * n, u32),
        "tid": pa.array([7] * n, u32),
        "op": op,
        "fd": pa.array([3] * n, pa.int32()),
        "dev": pa.array([1] * n, u64),
        "ino": pa.array([10 + i % 100 for i in range(n)], u64),
        "offset": pa.array([4096 * i for i in range(n)], u64),
        "len": pa.array([4096 + i for i in range(n)], u64),
        "pc": pa.array([1000 + i for i in range(n)], u64),
        "flags": pa.array([0] * n, u32),
        "path": pa.array([1 + i % 100 for i in range(n)], u32),
        "path2": pa.array([0] * n, u32),
    }
    meta = {
        tracemeta.KEY_FORMAT: "1",
        tracemeta.KEY_PAGE_BYTES: "4096",
        tracemeta.KEY_PATHS: json.dumps({str(1 + k): f"/data/f{k:03d}.log" for k in range(100)}),
    }
    pq.write_table(pa.table(columns).replace_schema_metadata(meta), path)
    # The PC table through the engine's writer, which keeps values over 64 KiB in the footer
    # alone, as in a recorded trace (pyarrow would copy it into the embedded Arrow schema too).
    api.set_footer_value(str(path), tracemeta.KEY_PCS, json.dumps(pcs))
    return path


def test_info_is_linear_in_the_pcs_of_the_footer(tmp_path: Path) -> None:
    trace = file_trace_with_pcs(tmp_path / "pcs.parquet", 20_000)
    start = time.monotonic()
    run = invoke("info", trace, "--json")
    took = time.monotonic() - start
    assert run.status == 0, run.stderr
    summary = run.json()
    assert summary["kind"] == "file" and summary["pcs"]["count"] == 20_000
    top = summary["pcs"]["top"]
    assert [entry["pc"] for entry in top][:1] == ["20999"]  # the longest write
    assert top[0]["label"].startswith("layer_49 → writer_19999"), top[0]["label"]
    # quadratic, 4,000 PCs took 3.9 s; linear, 20,000 take well under this bound
    assert took < 10, f"info on 20,000 PCs took {took:.1f} s"


def test_the_info_command_on_20000_pcs_is_quick_and_imports_only_what_it_needs(tmp_path: Path) -> None:
    trace = file_trace_with_pcs(tmp_path / "pcs.parquet", 20_000)
    for args in (("--json",), ()):
        start = time.monotonic()
        run = run_module("info", trace, *args)
        took = time.monotonic() - start
        assert run.status == 0, run.stderr
        assert "writer_19999" in run.stdout, run.stdout[-2000:]
        # the whole command, start-up included: about 1 s on 2 cores busy with other builds (the
        # engine labels the PCs from the table it parsed once); quadratic, minutes
        assert took < 5, f"pcstream info {' '.join(args)} on 20,000 PCs took {took:.1f} s"
    # What keeps it short: no Parquet library in Python (the engine reads the footer and what
    # each PC writes), and nothing only other verbs need (record's loop devices, numpy).
    proc = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "pcstream", "info", str(trace), "--json"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    imported = {line.rsplit("|", 1)[-1].strip() for line in proc.stderr.splitlines() if "|" in line}
    assert "pcstream.pclabels" in imported
    unwanted = {m for m in imported if m.split(".")[0] in ("pyarrow", "numpy", "pandas")}
    unwanted |= imported & {"pcstream.groundtruth.loopdev", "pcstream.compose", "pcstream.cli.record"}
    assert not unwanted, sorted(unwanted)
