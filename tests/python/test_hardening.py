"""Hardening of the command line (docs/HARDENING.md): no input, output path or signal crashes
pcstream, destroys a file or leaves garbage. One test per class of the hostile-input review:

1. outputs: device nodes, FIFOs and directories refused (status 2, node left alone), an output
   that is an input refused (2, input intact), an existing file replaced with a notice;
2. panics and aborts: corrupt Parquet pages, overflowing and huge geometries, huge capacities;
3. garbage accepted by import: huge offsets and times, backwards times, no requests, long lines;
4. leftovers: SIGTERM and a full disk leave no temporary or truncated file;
5. record checks its output before it runs the program; a non-executable program is 126;
6. every trace pcstream writes carries its metadata in the Arrow schema (pyarrow alone);
7. a closed stdout pipe ends quietly with 141; a corrupt --table is an input error (3);
8. output names: one that is not UTF-8 is a usage error (2) on every verb that writes, before any
   work; two outputs of one command on one file are refused (2).
"""

from __future__ import annotations

import json
import os
import resource
import signal
import stat
import subprocess
import sys
import time
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from pcstream import api, tracemeta
from pcstream.options import RecordOptions
from support import ROOT, assert_user_error, invoke, run_module

USAGE, INPUT, CONFIG = 2, 3, 4
MSR_LINE = "128166372003061629,hm,0,Write,{offset},4096,10\n"


def msr(path: Path, lines: int = 4) -> Path:
    path.write_text("".join(MSR_LINE.format(offset=4096 * i) for i in range(lines)))
    return path


def small_trace(path: Path) -> Path:
    api.gen("uniform", str(path), {"capacity_pages": "4096", "writes": "2000", "seed": "1"})
    return path


def nodes(tmp_path: Path) -> list[Path]:
    """A FIFO, a directory and (as root) a character device node (like /dev/null) in tmp_path."""
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    directory = tmp_path / "dir.parquet"
    directory.mkdir()
    found = [fifo, directory]
    if os.geteuid() == 0:
        null = tmp_path / "null"
        os.mknod(null, stat.S_IFCHR | 0o666, os.makedev(1, 3))
        found.append(null)
    return found


def kinds(paths: list[Path]) -> list[int]:
    return [stat.S_IFMT(p.lstat().st_mode) for p in paths]


# --------------------------------------------------------------------------- 1. outputs


def test_outputs_that_are_not_regular_files_are_refused_and_left_alone(tmp_path: Path) -> None:
    src = msr(tmp_path / "in.csv")
    trace = small_trace(tmp_path / "t.parquet")
    targets = nodes(tmp_path)
    before = kinds(targets)
    for target in targets:
        for args in (
            ("gen", "uniform", "--capacity-pages", "64", "--writes", "10", "-o", target),
            ("import", "msr", src, "-o", target),
            ("map", trace, "-o", target),
            ("simulate", trace, "--policy", "baseline", "--ssd", "small", "--cdf", target),
        ):
            run = invoke(*args)
            line = assert_user_error(run, USAGE, str(target))
            assert "not a regular file" in line or "is a directory" in line, line
    assert kinds(targets) == before
    assert not list(tmp_path.glob("*.tmp-*"))


def test_an_output_that_is_an_input_is_refused(tmp_path: Path) -> None:
    src = msr(tmp_path / "same.csv")
    text = src.read_text()
    assert_user_error(invoke("import", "msr", src, "-o", src), USAGE, "same.csv", "input")
    assert src.read_text() == text
    trace = small_trace(tmp_path / "t.parquet")
    data = trace.read_bytes()
    assert_user_error(invoke("map", trace, "-o", trace), USAGE, "t.parquet", "input")
    # the same file under another name (a hard link) is the same input
    link = tmp_path / "link.parquet"
    os.link(trace, link)
    assert_user_error(invoke("map", trace, "-o", link), USAGE, "link.parquet")
    assert trace.read_bytes() == data


def test_an_existing_output_is_replaced_with_a_notice(tmp_path: Path) -> None:
    src = msr(tmp_path / "in.csv")
    out = tmp_path / "out.parquet"
    out.write_text("old")
    run = invoke("import", "msr", src, "-o", out, "--json")
    assert run.status == 0, run.stderr
    notes = [line for line in run.stderr.splitlines() if str(out) in line]
    assert len(notes) == 1 and "replaced" in notes[0], run.stderr
    assert pq.read_metadata(out).num_rows == 4


# --------------------------------------------------------------------------- 2. panics and aborts


def corrupt(trace: Path, out: Path) -> Path:
    """``trace``, stored as pyarrow stores it (dictionary pages in every column), with 64 bytes
    flipped inside a row group's pages (an RLE run, a dictionary index), where older Parquet
    decoders panicked rather than returning an error; found by trying every 32nd offset."""
    pq.write_table(pq.read_table(trace), out)
    data = out.read_bytes()
    for at in range(0, len(data) - 64, 32):
        bad = bytearray(data)
        for i in range(at, at + 64):
            bad[i] ^= 0x5A
        out.write_bytes(bytes(bad))
        try:
            api.info(str(out))
        except Exception as exc:  # the engine's InputError
            if "not a readable Parquet file (row group" in str(exc):
                return out
    raise AssertionError("no corruption reaches a row group's pages")


def test_corrupt_parquet_pages_are_input_errors(tmp_path: Path) -> None:
    trace = small_trace(tmp_path / "t.parquet")
    bad = corrupt(trace, tmp_path / "bad.parquet")
    for args in (("info", bad), ("simulate", bad, "--policy", "oracle", "--ssd", "small", "--no-timing")):
        run = run_module(*args)
        assert "panicked" not in run.stderr, run.stderr
        line = assert_user_error(run, INPUT, "bad.parquet")
        assert "not a readable Parquet file" in line, line


def test_a_corrupt_footer_is_an_input_error_not_an_abort() -> None:
    """A footer whose Thrift list claims more row groups than the file has bytes (a fuzzing find:
    the decoder once reserved 157 GB and aborted): exit 3 naming the file, for both trace kinds."""
    corpus = ROOT / "fuzz" / "corpus"
    found = ("block_trace/crash-footer-list-alloc", "file_trace/crash-footer-list-alloc")
    # and a schema node claiming 1.6e9 children (the decoder reserved 13 GB for them)
    for name in (*found, "file_trace/crash-schema-children-alloc"):
        bad = corpus / f"{name}.parquet"
        simulate = ("simulate", bad, "--policy", "baseline", "--ssd", "small", "--no-timing")
        for args in (("info", bad), simulate):
            run = run_module(*args)
            line = assert_user_error(run, INPUT, bad.name)
            assert "not a readable Parquet file" in line, line


def geometry(path: Path, channels: int, ways: int, blocks: int, pages: int) -> Path:
    path.write_text(
        f"[geometry]\nchannels = {channels}\nways = {ways}\nblocks_per_die = {blocks}\n"
        f"pages_per_block = {pages}\n[ftl]\nop = 0.07\n"
    )
    return path


def test_geometries_beyond_32_bits_and_beyond_memory_are_config_errors(tmp_path: Path) -> None:
    trace = small_trace(tmp_path / "t.parquet")
    wrap = geometry(tmp_path / "wrap.toml", 65536, 65537, 1, 256)
    line = assert_user_error(run_module("simulate", trace, "--policy", "baseline", "--ssd", wrap), CONFIG)
    assert "exceeds the engine's limit" in line, line
    huge = geometry(tmp_path / "huge.toml", 64, 64, 4095, 256)
    started = time.monotonic()
    run = run_module("simulate", trace, "--policy", "baseline", "--ssd", huge, "--no-timing")
    line = assert_user_error(run, CONFIG, "huge")
    assert "GiB of memory" in line and "are available" in line, line
    assert time.monotonic() - started < 60


def test_gen_refuses_capacities_beyond_2_40_pages_and_beyond_memory(tmp_path: Path) -> None:
    out = tmp_path / "g.parquet"
    run = invoke("gen", "uniform", "--capacity-pages", str((1 << 40) + 1), "--writes", "10", "-o", out)
    assert_user_error(run, USAGE, "2^40")
    started = time.monotonic()
    args = (
        "gen",
        "mix",
        "--mix",
        "rocksdb-like",
        "--capacity-pages",
        str(1 << 40),
        "--writes",
        "10",
        "-o",
        out,
    )
    line = assert_user_error(run_module(*args), CONFIG, "gen mix")
    assert "GiB of memory" in line and "are available" in line, line
    assert time.monotonic() - started < 60 and not out.exists()


def test_info_on_a_huge_capacity_is_refused_without_allocating(tmp_path: Path) -> None:
    path = tmp_path / "cap.parquet"
    small_trace(path)
    table = pq.read_table(path)
    meta = dict(table.schema.metadata or {})
    meta[tracemeta.KEY_CAPACITY.encode()] = str(1 << 40).encode()
    pq.write_table(table.replace_schema_metadata(meta), path)
    line = assert_user_error(run_module("info", path), CONFIG, "cap.parquet")
    assert "GiB" in line and "are available" in line
    meta[tracemeta.KEY_CAPACITY.encode()] = str(1 << 62).encode()
    pq.write_table(table.replace_schema_metadata(meta), path)
    assert_user_error(run_module("info", path), INPUT, "cap.parquet", "2^40")


# --------------------------------------------------------------------------- 3. garbage accepted


@pytest.mark.parametrize(
    ("fmt", "text", "needle"),
    [
        ("msr", MSR_LINE.format(offset=1 << 63), "2^40"),
        ("alibaba", f"1,W,{1 << 63},4096,1\n", "2^40"),
        ("fio", f"fio version 2 iolog\nf write {1 << 63} 4096\n", "2^40"),
        ("msr", f"{(1 << 64) - 1},hm,0,Write,0,4096,10\n", "overflows"),
        ("alibaba", f"1,W,0,4096,{(1 << 64) - 1}\n", "overflows"),
        ("tencent", f"{(1 << 64) - 1},0,8,1,7\n", "overflows"),
        ("blkparse", f"8,0 0 1 {(1 << 64) - 1}.0 5 D W 0 + 8 [x]\n", "overflows"),
        ("fio", f"fio version 3 iolog\n{(1 << 64) - 1} f write 0 4096\n", "overflows"),
        ("tencent", f"1,{1 << 55},8,1,7\n", str(1 << 55)),
        ("blkparse", "8,0 0 1 0.1 5 D WQ 0 + 8 [x]\n", "rwbs"),
        ("blkparse", "8,0 0 1 0.1 5 D W\x000 + 8 [x]\n", "NUL"),
    ],
)
def test_garbage_lines_are_input_errors_naming_the_line(
    tmp_path: Path, fmt: str, text: str, needle: str
) -> None:
    src = tmp_path / "in.txt"
    src.write_text(text)
    out = tmp_path / "out.parquet"
    line = assert_user_error(invoke("import", fmt, src, "-o", out), INPUT, f"{src}:", needle)
    assert "18446744073709551615" not in line or "overflows" in line
    assert not out.exists() and not list(tmp_path.glob("*.tmp-*"))


@pytest.mark.parametrize(
    ("text", "extra"),
    [("", ()), ("\n\n   \n", ()), (MSR_LINE.format(offset=0), ("--device", "prxy_0"))],
)
def test_inputs_without_requests_are_input_errors(tmp_path: Path, text: str, extra: tuple[str, ...]) -> None:
    src = tmp_path / "in.csv"
    src.write_text(text)
    out = tmp_path / "out.parquet"
    assert_user_error(invoke("import", "msr", src, "-o", out, *extra), INPUT, "in.csv", "no requests")
    assert not out.exists()


def test_a_trace_without_requests_is_an_input_error(tmp_path: Path) -> None:
    empty = tmp_path / "empty.parquet"
    table = pa.table(
        {"lpn": pa.array([], pa.uint64()), "pages": pa.array([], pa.uint32()), "op": pa.array([], pa.uint8())}
    )
    pq.write_table(table, empty)
    run = invoke("simulate", empty, "--policy", "baseline", "--ssd", "small", "--no-timing")
    assert_user_error(run, INPUT, "empty.parquet", "no requests")


def test_backwards_times_are_clamped_and_counted(tmp_path: Path) -> None:
    src = tmp_path / "in.csv"
    src.write_text("300,hm,0,Write,0,4096,1\n100,hm,0,Write,4096,4096,1\n500,hm,0,Write,8192,4096,1\n")
    out = tmp_path / "out.parquet"
    run = invoke("import", "msr", src, "-o", out, "--json")
    assert run.status == 0, run.stderr
    assert run.json()["reordered"] == 1
    assert pq.read_table(out).column("ts_ns").to_pylist() == [0, 0, 20_000]


def test_a_line_over_1_mib_is_an_input_error(tmp_path: Path) -> None:
    src = tmp_path / "zeros.csv"
    with src.open("wb") as handle:
        handle.write(MSR_LINE.format(offset=0).encode())
        handle.write(b"0" * (3 << 20))
    assert_user_error(invoke("import", "msr", src, "-o", tmp_path / "o.parquet"), INPUT, f"{src}:2", "1 MiB")


# --------------------------------------------------------------------------- 4. leftovers


def test_sigterm_during_import_leaves_no_temporary_file(tmp_path: Path) -> None:
    src = tmp_path / "big.csv"
    line = MSR_LINE.format(offset=8192)
    with src.open("w") as handle:
        for _ in range(40):
            handle.write(line * 50_000)
    out = tmp_path / "out.parquet"
    proc = subprocess.Popen(
        [sys.executable, "-m", "pcstream", "import", "msr", str(src), "-o", str(out)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + 60
    while not list(tmp_path.glob("out.parquet.tmp-*")) and time.monotonic() < deadline:
        time.sleep(0.02)
    assert list(tmp_path.glob("out.parquet.tmp-*")), "the import never started"
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 143, err
    assert err.strip().splitlines() == ["pcstream: error: terminated (SIGTERM); nothing was written"], err
    assert not out.exists() and not list(tmp_path.glob("*.tmp-*"))


def limited(max_bytes: int) -> None:
    resource.setrlimit(resource.RLIMIT_FSIZE, (max_bytes, max_bytes))


def test_a_full_disk_leaves_no_partial_cdf_or_results(tmp_path: Path) -> None:
    trace = small_trace(tmp_path / "t.parquet")
    cdf = tmp_path / "lat.csv"
    proc = subprocess.run(
        [sys.executable, "-m", "pcstream", "simulate", str(trace), "--policy", "baseline", "--ssd", "small"]
        + ["--cdf", str(cdf)],
        capture_output=True,
        text=True,
        preexec_fn=lambda: limited(200),
    )
    assert proc.returncode == INPUT, proc.stderr
    assert proc.stderr.startswith(f"pcstream: error: {cdf}: cannot write"), proc.stderr
    assert not cdf.exists() and not list(tmp_path.glob("*.tmp-*"))
    results = tmp_path / "results"
    proc = subprocess.run(
        [sys.executable, "-m", "pcstream", "compare", str(trace), "--policies", "baseline,greedy"]
        + ["--ssd", "small", "--no-timing", "--jobs", "1", "--results", str(results)],
        capture_output=True,
        text=True,
        preexec_fn=lambda: limited(600),
    )
    assert proc.returncode == INPUT, proc.stderr
    assert "results.jsonl: cannot write" in proc.stderr or "results.parquet: cannot write" in proc.stderr
    assert not list(results.glob("*.tmp-*"))
    if (results / "results.jsonl").exists():
        lines = (results / "results.jsonl").read_text().splitlines()
        assert all(json.loads(line) for line in lines)


# --------------------------------------------------------------------------- 5. record

SHIM = ROOT / "python" / "pcstream" / "_shim" / "pcshim.so"
needs_shim = pytest.mark.skipif(not SHIM.is_file(), reason="the record shim is not built (make shim)")


@needs_shim
def test_record_checks_its_output_before_running_the_program(tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    fifo = tmp_path / "out.fifo"
    os.mkfifo(fifo)
    run = run_module("record", "-o", fifo, "--", "touch", marker)
    assert_user_error(run, USAGE, "out.fifo")
    assert not marker.exists(), "the program ran although its recording could not be written"
    assert stat.S_ISFIFO(fifo.lstat().st_mode)


@needs_shim
def test_record_a_non_executable_file_is_126(tmp_path: Path) -> None:
    script = tmp_path / "script.sh"
    script.write_text("#!/bin/sh\ntrue\n")
    script.chmod(0o644)
    assert_user_error(run_module("record", "-o", tmp_path / "t.parquet", "--", script), 126, "script.sh")


# --------------------------------------------------------------------------- 6. interop


def pcstream_keys(path: Path) -> dict[bytes, bytes]:
    metadata = pq.read_table(path).schema.metadata or {}
    return {k: v for k, v in metadata.items() if k.startswith(b"pcstream.")}


def test_every_trace_kind_has_its_metadata_in_the_arrow_schema(tmp_path: Path) -> None:
    gen = small_trace(tmp_path / "gen.parquet")
    assert pcstream_keys(gen)[b"pcstream.capacity_pages"] == b"4096"
    imported = tmp_path / "imp.parquet"
    assert invoke("import", "msr", msr(tmp_path / "in.csv"), "-o", imported).status == 0
    assert pcstream_keys(imported)[b"pcstream.capacity_pages"] == b"4"
    assert b"pcstream.source" in pcstream_keys(imported)
    logdir = ROOT / "crates" / "pcstream-trace" / "tests" / "fixtures"
    file_trace = tmp_path / "files.parquet"
    logs = sorted(p for p in logdir.rglob("*") if p.is_dir() and any(p.glob("*.bin")))
    if logs:
        api.record_convert(str(logs[0]), str(file_trace), "test", RecordOptions(coalesce=False))
    else:
        from test_map_import import HAND_MADE
        from test_map_import import file_trace as write_file_trace

        write_file_trace(file_trace, HAND_MADE, {1: "/db/a.sst", 2: "/other/b.log"})
    mapped = tmp_path / "mapped.parquet"
    assert invoke("map", file_trace, "-o", mapped, "--capacity", "small").status == 0
    keys = pcstream_keys(mapped)
    assert b"pcstream.capacity_pages" in keys and b"pcstream.files" in keys
    if logs:
        assert b"pcstream.paths" in pcstream_keys(file_trace)


# --------------------------------------------------------------------------- 7. smaller


def test_a_closed_stdout_pipe_ends_quietly_with_141(tmp_path: Path) -> None:
    trace = small_trace(tmp_path / "t.parquet")
    proc = subprocess.Popen(
        [sys.executable, "-m", "pcstream", "info", str(trace)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert proc.stdout is not None and proc.stderr is not None
    proc.stdout.close()  # the reader is gone before pcstream writes a line
    err = proc.stderr.read()
    assert proc.wait(timeout=60) == 141
    assert err == b""


def test_a_table_that_is_not_a_regular_file_is_refused(tmp_path: Path) -> None:
    trace = small_trace(tmp_path / "t.parquet")
    fifo = tmp_path / "table.fifo"
    os.mkfifo(fifo)
    directory = tmp_path / "table.d"
    directory.mkdir()
    args = ("simulate", trace, "--policy", "pcstream", "--ssd", "small", "--no-timing", "--table")
    for table, kind in (
        (fifo, "a FIFO"),
        (directory, "a directory"),
        (Path("/dev/zero"), "a character device"),
    ):
        start = time.monotonic()
        line = assert_user_error(run_module(*args, table), INPUT, table.name)
        assert f"is {kind}, not a regular file" in line, line
        assert time.monotonic() - start < 30  # the FIFO without a writer is never waited on
    assert stat.S_ISFIFO(fifo.lstat().st_mode) and directory.is_dir() and not any(directory.iterdir())
    # A table that does not exist yet is created.
    new = tmp_path / "new.json"
    assert invoke(*args, new).status == 0, "simulate with a new --table failed"
    assert json.loads(new.read_text())["policy"] == "pcstream"


def test_a_corrupt_table_is_an_input_error(tmp_path: Path) -> None:
    trace = small_trace(tmp_path / "t.parquet")
    table = tmp_path / "table.json"
    table.write_text('{"format": 1, "pcs": [')
    run = invoke("simulate", trace, "--policy", "pcstream", "--ssd", "small", "--no-timing", "--table", table)
    assert_user_error(run, INPUT, "table.json")
    assert table.read_text() == '{"format": 1, "pcs": ['


# --------------------------------------------------------------------------- 8. output names

# An output name that is not UTF-8, as a shell passes $'\xff.parquet' (Python keeps the byte as a
# surrogate; the subprocess gets the byte back).
NOT_UTF8 = os.fsdecode(b"\xff")


def test_output_names_that_are_not_utf8_are_usage_errors_on_every_verb_that_writes(tmp_path: Path) -> None:
    trace = small_trace(tmp_path / "t.parquet")
    bad = tmp_path / f"{NOT_UTF8}.out"
    simulate = ("simulate", trace, "--policy", "pcstream", "--ssd", "small")
    for args in (
        ("gen", "uniform", "--capacity-pages", "4096", "--writes", "100", "-o", bad),
        ("import", "msr", msr(tmp_path / "in.csv"), "-o", bad),
        ("map", trace, "-o", bad),
        ("record", "-o", bad, "--", "true"),
        ("record", "--keep-logs", bad, "--", "true"),
        (*simulate, "--cdf", bad),
        (*simulate, "--table", bad),
        ("compare", trace, "--ssd", "small", "--policies", "baseline", "--results", bad),
        ("compare", trace, "--ssd", "small", "--policies", "baseline", "--report", bad),
    ):
        line = assert_user_error(run_module(*args, cwd=tmp_path), USAGE, "\\xff.out", "not valid UTF-8")
        assert not any(b"\xff" in name for name in os.listdir(os.fsencode(tmp_path))), (args, line)


def test_a_program_argument_that_is_not_utf8_is_recorded(tmp_path: Path) -> None:
    # the trace's pcstream.source is text: the argument is written with its byte escaped
    if not SHIM.is_file():
        pytest.skip("the record shim is not built (make shim)")
    run = run_module("record", "-o", "t.parquet", "--via", "shim", "--", "touch", NOT_UTF8, cwd=tmp_path)
    assert run.status == 0 and (tmp_path / NOT_UTF8).exists(), run.stderr
    assert tracemeta.footer(tmp_path / "t.parquet")[tracemeta.KEY_SOURCE].endswith("-- touch \\xff")


def test_two_outputs_of_one_command_on_one_file_are_refused(tmp_path: Path) -> None:
    trace = small_trace(tmp_path / "t.parquet")
    simulate = ("simulate", trace, "--policy", "pcstream", "--ssd", "small")
    (tmp_path / "old.json").write_text("{}")
    os.link(tmp_path / "old.json", tmp_path / "hard.json")
    for cdf, table in (
        ("x", "x"),  # one name
        (tmp_path / "x", tmp_path / "sub" / ".." / "x"),  # one file after realpath
        (tmp_path / "hard.json", tmp_path / "old.json"),  # one inode
    ):
        (tmp_path / "sub").mkdir(exist_ok=True)
        line = assert_user_error(invoke(*simulate, "--cdf", cdf, "--table", table), USAGE, "two outputs")
        assert "give each output its own file" in line
        assert not (tmp_path / "x").exists() and not Path("x").exists()
    assert (tmp_path / "old.json").read_text() == "{}"
    # each on its own file: both written
    run = invoke(*simulate, "--cdf", tmp_path / "c.csv", "--table", tmp_path / "p.json")
    assert run.status == 0 and (tmp_path / "c.csv").is_file() and (tmp_path / "p.json").is_file(), run.stderr
